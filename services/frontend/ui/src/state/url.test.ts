import { describe, expect, it } from "vitest";
import { compareSides } from "./compare";
import { applyCompletion, completionAt } from "./selector";
import { resolveTime } from "./time";
import {
  decodeFocus,
  DEFAULT_STATE,
  encodeFocus,
  isMinorChange,
  parseState,
  stateToSearch,
  switchTenant,
  type UiState,
} from "./url";

describe("URL state", () => {
  it("leaves defaults out, so a fresh page has a bare URL", () => {
    expect(stateToSearch(DEFAULT_STATE)).toBe("");
    expect(parseState("")).toEqual(DEFAULT_STATE);
  });

  it("round-trips every field, the comparison's sides included", () => {
    const state: UiState = {
      ...DEFAULT_STATE,
      view: "compare",
      tenant: "team-a",
      type: "process_cpu:cpu:nanoseconds:cpu:nanoseconds",
      selector: '{service_name="demo", version=~"1\\\\.4.*"}',
      from: "1700000000000",
      until: "now-5m",
      groupBy: "instance",
      selFrom: "1700000100000",
      selUntil: "1700000200000",
      time: "1700000150000",
      search: "main.fib & co",
      focus: "main.main;main.cpuLoop;main.cpuFibonacci",
      maxNodes: 32768,
      refresh: "30s",
      incident: "42",
      kind: "oom_kill",
      left: { selector: '{version="1.4"}', from: "now-2h", until: "now-1h" },
      right: { selector: '{version="1.5"}', from: "now-1h", until: "now" },
    };
    expect(parseState(stateToSearch(state))).toEqual(state);
  });

  it("keeps the tenant in the link, and switching tenants clears what was picked in the last one", () => {
    const before = parseState('?tenant=team-a&type=memory&query={service_name="api"}&focus=main.main&from=now-6h&l_query={a="1"}');
    expect(stateToSearch({ ...DEFAULT_STATE, tenant: "team-b" })).toBe("?tenant=team-b");
    const after = { ...before, ...switchTenant(before, "team-b") };
    expect(stateToSearch(after)).toBe("?tenant=team-b&from=now-6h");
    expect(after.left).toEqual({ ...before.left, selector: "" });
    expect(isMinorChange(before, after)).toBe(false);  // the back button returns to the last tenant
  });

  it("keeps the label explorer's view and label in its link, the default label left out", () => {
    const state = parseState("?view=labels&explore_by=instance&query=%7Bjob%3D%22demo%22%7D");
    expect(state).toEqual({ ...DEFAULT_STATE, view: "labels", exploreBy: "instance", selector: '{job="demo"}' });
    expect(parseState(stateToSearch(state))).toEqual(state);
    expect(stateToSearch({ ...DEFAULT_STATE, view: "labels" })).toBe("?view=labels");
    expect(isMinorChange(state, { ...state, exploreBy: "job" })).toBe(false);  // back returns to the last label
  });

  it("ignores unknown views and bad numbers", () => {
    const s = parseState("?view=nonsense&max_nodes=-4");
    expect(s.view).toBe("single");
    expect(s.maxNodes).toBe(DEFAULT_STATE.maxNodes);
  });

  it("reads an incident's permalink (the path Alertmanager alerts carry) and keeps its tenant", () => {
    const state = parseState("?view=incidents&incident=17&tenant=team-a");
    expect(state).toEqual({ ...DEFAULT_STATE, view: "incidents", incident: "17", tenant: "team-a" });
    expect(stateToSearch(state)).toBe("?view=incidents&tenant=team-a&incident=17");
    expect(stateToSearch({ ...DEFAULT_STATE, view: "incidents", kind: "restart", selector: '{pod="a"}' })).toBe(
      "?view=incidents&query=%7Bpod%3D%22a%22%7D&kind=restart");
  });

  it("makes opening and closing an incident a history step, and a tenant switch closes it", () => {
    const list = parseState("?view=incidents&tenant=team-a");
    const opened = { ...list, incident: "17" };
    expect(isMinorChange(list, opened)).toBe(false);
    expect({ ...opened, ...switchTenant(opened, "team-b") }.incident).toBe("");
  });

  it("treats search and auto-refresh as refinements, not history steps", () => {
    expect(isMinorChange(DEFAULT_STATE, { ...DEFAULT_STATE, search: "fib" })).toBe(true);
    expect(isMinorChange(DEFAULT_STATE, { ...DEFAULT_STATE, refresh: "10s" })).toBe(true);
    expect(isMinorChange(DEFAULT_STATE, { ...DEFAULT_STATE, from: "now-6h" })).toBe(false);
  });
});

describe("zoom focus in the URL", () => {
  it("writes a path of names as collapsed stacks do, readable in the link", () => {
    const focus = encodeFocus(["main.main", "main.cpuLoop", "crypto/sha256.Sum256"]);
    expect(focus).toBe("main.main;main.cpuLoop;crypto/sha256.Sum256");
    expect(stateToSearch({ ...DEFAULT_STATE, focus })).toBe("?focus=main.main%3Bmain.cpuLoop%3Bcrypto%2Fsha256.Sum256");
    expect(parseState("?focus=main.main%3Bmain.cpuLoop").focus).toBe("main.main;main.cpuLoop");
  });

  it("round-trips names holding the separator or a backslash", () => {
    const path = ["a;b", "c\\d", "e\\;f", "", "plain"];
    expect(decodeFocus(encodeFocus(path))).toEqual(path);
    expect(encodeFocus(["a;b"])).toBe("a\\;b");
  });

  it("reads no focus as the whole flamegraph", () => {
    expect(decodeFocus("")).toEqual([]);
    expect(parseState("").focus).toBe("");
    expect(decodeFocus("only")).toEqual(["only"]);
  });

  it("makes each zoom a history step, so back returns to the previous zoom", () => {
    const zoomed = { ...DEFAULT_STATE, focus: "main.main" };
    expect(isMinorChange(DEFAULT_STATE, zoomed)).toBe(false);
    expect(isMinorChange(zoomed, { ...zoomed, focus: "main.main;main.run" })).toBe(false);
  });
});

describe("selector completion", () => {
  it("offers label names after { and ,", () => {
    expect(completionAt("{", 1)).toEqual({ kind: "name", prefix: "", start: 1 });
    expect(completionAt('{job="a", ins', 13)).toEqual({ kind: "name", prefix: "ins", start: 10 });
  });

  it("offers values after an operator and an opening quote", () => {
    expect(completionAt('{job="de', 8)).toEqual({ kind: "value", name: "job", prefix: "de", start: 6 });
    expect(completionAt('{job!~"', 7)).toMatchObject({ kind: "value", name: "job", prefix: "" });
  });

  it("offers nothing outside the braces or inside a finished value", () => {
    expect(completionAt("job", 3)).toBeNull();
    expect(completionAt('{job="demo"}', 12)).toBeNull();
  });

  it("inserts a name with its operator, and a value with its closing quote", () => {
    const name = applyCompletion("{se", 3, completionAt("{se", 3)!, "service_name");
    expect(name).toEqual({ text: '{service_name="', cursor: 15 });
    const value = applyCompletion('{service_name="de}', 17, completionAt('{service_name="de}', 17)!, "demo");
    expect(value.text).toBe('{service_name="demo"}');
  });
});

describe("resolveTime", () => {
  const now = Date.UTC(2026, 0, 1);
  it("reads the forms the API reads", () => {
    expect(resolveTime("now", now)).toBe(now);
    expect(resolveTime("now-1h", now)).toBe(now - 3600e3);
    expect(resolveTime("1700000000", now)).toBe(1700000000e3);
    expect(resolveTime("1700000000000", now)).toBe(1700000000000);
    expect(resolveTime("2026-01-01T00:00:00Z", now)).toBe(now);
    expect(resolveTime("tomorrow", now)).toBeNaN();
  });
});

describe("compareSides", () => {
  const now = Date.UTC(2026, 0, 1, 12);
  it("splits the range in halves when nothing is selected", () => {
    const state = { ...DEFAULT_STATE, selector: '{job="a"}', from: "now-1h", until: "now" };
    const middle = String(now - 1800e3);
    expect(compareSides(state, now)).toEqual({
      left: { selector: '{job="a"}', from: String(now - 3600e3), until: middle },
      right: { selector: '{job="a"}', from: middle, until: String(now) },
    });
  });

  it("compares the dragged selection against the whole range", () => {
    const state = { ...DEFAULT_STATE, selFrom: "100", selUntil: "200" };
    expect(compareSides(state, now)).toEqual({
      left: { selector: "", from: "100", until: "200" },
      right: { selector: "", from: "now-1h", until: "now" },
    });
  });
});
