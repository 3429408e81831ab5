import { describe, expect, it } from "vitest";
import type { Incident, Series } from "../api/types";
import {
  changesParams,
  changesViewOfRegression,
  compareViewOfFunction,
  defaultPair,
  formatShare,
  formatShareChange,
  regressionDetails,
  valuesByAppearance,
  withLabel,
} from "./changes";
import { DEFAULT_STATE, isMinorChange, parseState, stateToSearch, switchTenant, type UiState } from "./url";

const CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds";
const API = '{service_name="api"}';

describe("What changed in the URL", () => {
  it("round-trips two values of a label, the measure ranked by and the range", () => {
    const state: UiState = { ...DEFAULT_STATE, view: "changes", type: CPU, selector: API, label: "release", a: "1.0",
      b: "1.1", order: "total", from: "now-6h" };
    const search = stateToSearch(state);
    expect(search).toBe(`?view=changes&type=${encodeURIComponent(CPU)}&query=%7Bservice_name%3D%22api%22%7D`
      + "&from=now-6h&label=release&a=1.0&b=1.1&order=total");
    expect(parseState(search)).toEqual(state);
  });

  it("leaves the default label and measure out, and keeps the sides' ranges only over two ranges", () => {
    const labels = { ...DEFAULT_STATE, view: "changes" as const, a: "1.0", b: "1.1",
      left: { selector: "", from: "now-2h", until: "now-1h" } };
    expect(stateToSearch(labels)).toBe("?view=changes&a=1.0&b=1.1");
    const ranges = { ...labels, changeMode: "ranges" };
    expect(stateToSearch(ranges)).toBe("?view=changes&a=1.0&b=1.1&compare=ranges&l_from=now-2h&l_until=now-1h");
    expect(parseState(stateToSearch(ranges))).toEqual(ranges);
  });

  it("makes a new pair a history step, and a tenant switch forgets the values", () => {
    const state = parseState("?view=changes&a=1.0&b=1.1&tenant=team-a");
    expect(isMinorChange(state, { ...state, b: "1.2" })).toBe(false);
    expect(isMinorChange(state, { ...state, order: "total" })).toBe(false);
    const switched = { ...state, ...switchTenant(state, "team-b") };
    expect([switched.a, switched.b, switched.view]).toEqual(["", "", "changes"]);
  });
});

describe("the request", () => {
  it("asks for two values of a label over the range, once both are picked", () => {
    const state = { ...DEFAULT_STATE, view: "changes" as const, selector: API, a: "1.0", b: "1.1" };
    expect(changesParams(state, CPU)).toEqual({ query: CPU + API, label: "version", a: "1.0", b: "1.1", from: "now-1h",
      until: "now", order: "self" });
    expect(changesParams({ ...state, b: "" }, CPU)).toBeNull();
  });

  it("asks for the selector over two ranges", () => {
    const state = { ...DEFAULT_STATE, view: "changes" as const, changeMode: "ranges", order: "total" };
    expect(changesParams(state, CPU)).toEqual({ query: CPU + "{}", a_from: "now-1h", a_until: "now-30m", b_from: "now-30m",
      b_until: "now", order: "total" });
  });
});

describe("label values", () => {
  const series = (value: string | undefined, times: number[]): Series => ({
    labels: value === undefined ? {} : { version: value }, points: times.map((t) => [t, 1] as [number, number]) });

  it("orders values by their first profile in the range, newest last, and pairs the two newest", () => {
    const values = valuesByAppearance([series("1.1", [300, 400]), series("1.0", [100, 500]), series("0.9", [50]),
      series(undefined, [10]), series("", [20]), series("2.0", [])], "version");
    expect(values).toEqual(["0.9", "1.0", "1.1"]);
    expect(defaultPair(values)).toEqual({ a: "1.0", b: "1.1" });
    expect(defaultPair(["1.0"])).toBeNull();
    expect(defaultPair([])).toBeNull();
  });

  it("adds a value to a selector as the API's label matcher does", () => {
    expect(withLabel(API, "version", "1.1")).toBe('{service_name="api",version="1.1"}');
    expect(withLabel("", "version", '1"x')).toBe('{version="1\\"x"}');
    expect(withLabel("{ }", "version", "1")).toBe('{version="1"}');
  });
});

describe("a row of the table as the Compare view", () => {
  it("compares the two values' selections over the range, zoomed to the function and searching it", () => {
    const state = { ...DEFAULT_STATE, view: "changes" as const, type: CPU, selector: API, a: "1.0", b: "1.1", from: "now-6h",
      focus: "old;path", time: "123" };
    const compare = { ...state, ...compareViewOfFunction(state, CPU, "main.hash") };
    expect(compare.view).toBe("compare");
    expect(compare.left).toEqual({ selector: '{service_name="api",version="1.0"}', from: "now-6h", until: "now" });
    expect(compare.right).toEqual({ selector: '{service_name="api",version="1.1"}', from: "now-6h", until: "now" });
    expect([compare.focus, compare.search, compare.time]).toEqual(["main.hash", "main.hash", ""]);
    expect(parseState(stateToSearch(compare))).toEqual(compare);  // a permalink of the diff
  });

  it("compares the selector over the two ranges in ranges mode, a name with ; escaped", () => {
    const state = { ...DEFAULT_STATE, view: "changes" as const, selector: API, changeMode: "ranges",
      left: { selector: "", from: "1", until: "2" }, right: { selector: "", from: "3", until: "4" } };
    const patch = compareViewOfFunction(state, CPU, "a;b");
    expect(patch.left).toEqual({ selector: API, from: "1", until: "2" });
    expect(patch.right).toEqual({ selector: API, from: "3", until: "4" });
    expect(patch.focus).toBe("a\\;b");
  });
});

describe("a regression event", () => {
  const S = 1e9;
  const base = 1_767_607_200 * S;
  const incident = (details: Record<string, unknown>, labels = { service_name: "api", version: "1.1", severity: "page" }) =>
    ({ id: 7, kind: "regression", time: base, labels, details } as unknown as Incident);
  const details = {
    rule: { group: "releases", compare: "version", threshold: 0.01, order: "self", labels: { severity: "page" } },
    a: { query: `${CPU}{namespace=~"shop.*",service_name="api",version="1.0"}`, from: base - 3600 * S, until: base - 1800 * S, value: "1.0" },
    b: { query: `${CPU}{namespace=~"shop.*",service_name="api",version="1.1"}`, from: base - 1200 * S, until: base, value: "1.1" },
    profiles: { a: 30, b: 30 },
    functions: [{ name: "main.hash", a: 0.2, b: 0.24, change: 0.04, p: 0.0001 }],
  };

  it("opens What changed with the rule's selector, the two values and a range holding both windows", () => {
    const patch = changesViewOfRegression(incident(details), regressionDetails(incident(details))!);
    expect(patch).toMatchObject({ view: "changes", type: CPU, selector: '{namespace=~"shop.*",service_name="api"}',
      label: "version", a: "1.0", b: "1.1", changeMode: "", from: String((base - 3600 * S) / 1e6), until: String(base / 1e6) });
  });

  it("falls back to the event's own labels when the query does not end with the compared label", () => {
    const odd = { ...details, rule: { ...details.rule, compare: undefined }, a: { ...details.a, query: `${CPU}{version="1.0",service_name="api"}` } };
    const patch = changesViewOfRegression(incident(odd), regressionDetails(incident(odd))!);
    expect([patch.label, patch.selector]).toEqual(["version", '{service_name="api"}']);
  });

  it("has no details to show when the event carries none in the rule's shape", () => {
    expect(regressionDetails(incident({}))).toBeNull();
    expect(regressionDetails(incident({ a: { query: "x" } }))).toBeNull();
    expect(regressionDetails(incident({ a: details.a, b: details.b }))?.functions).toEqual([]);
  });
});

describe("shares in words", () => {
  it("says shares and changes as percentages of the total", () => {
    expect(formatShare(0.2013)).toBe("20.13 %");
    expect(formatShare(0.00042)).toBe("0.042 %");
    expect(formatShareChange(0.0231)).toBe("+2.31 %");
    expect(formatShareChange(-0.005)).toBe("−0.50 %");
    expect(formatShareChange(0)).toBe("±0.00 %");
  });
});
