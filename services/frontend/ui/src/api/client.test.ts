import { describe, expect, it } from "vitest";
import { applyCompletion, completionAt } from "../state/selector";
import { escapeLabelValue, exactSelector, quoteLabelValue, requestHeaders, setTenant } from "./client";

// Each value and what the selector parser's own `quote` (libs/labels/selector.py) writes for it.
const QUOTED: [string, string][] = [
  ["demo", String.raw`"demo"`],
  ['say "hi"', String.raw`"say \"hi\""`],
  ["C:\\temp\\", String.raw`"C:\\temp\\"`],
  ["a\nb\tc", String.raw`"a\nb\tc"`],
  ["nul\x00bel\x07", String.raw`"nul\x00bel\a"`],
  ["line\u2028sep", String.raw`"line\u2028sep"`],
  ["\ue000", String.raw`"\ue000"`],
  ["nbsp\u00a0", String.raw`"nbsp\u00a0"`],
  ["zw\u200b", String.raw`"zw\u200b"`],
  ["🔥 fire", String.raw`"🔥 fire"`],
  ["é", String.raw`"é"`],
];

describe("label values in selectors", () => {
  it.each(QUOTED)("quotes %j as the selector parser does", (value, quoted) => {
    expect(quoteLabelValue(value)).toBe(quoted);
    expect(escapeLabelValue(value)).toBe(quoted.slice(1, -1));
  });

  it("builds a selector matching exactly the given labels", () => {
    expect(exactSelector({})).toBe("{}");
    expect(exactSelector({ __profile_type__: "process_cpu:cpu:nanoseconds:cpu:nanoseconds" })).toBe(
      '{__profile_type__="process_cpu:cpu:nanoseconds:cpu:nanoseconds"}',
    );
    expect(exactSelector({ service_name: 'a"b', path: "C:\\x" })).toBe(String.raw`{service_name="a\"b",path="C:\\x"}`);
  });

  it("escapes a value chosen from the autocomplete", () => {
    const text = '{pod="}';
    const c = completionAt(text, 6);
    expect(c).toEqual({ kind: "value", name: "pod", prefix: "", start: 6 });
    const done = applyCompletion(text, 6, c!, 'api-"1"\\');
    expect(done.text).toBe(String.raw`{pod="api-\"1\"\\"}`);
    expect(done.cursor).toBe(done.text.indexOf("}"));  // after the closing quote
  });
});

describe("the tenant of every call", () => {
  it("is sent as X-Scope-OrgID once picked, and not at all for the credential's default", () => {
    expect(requestHeaders("application/json")).toEqual({ accept: "application/json" });
    setTenant("team-a");
    expect(requestHeaders("application/octet-stream")).toEqual({
      accept: "application/octet-stream",
      "x-scope-orgid": "team-a",
    });
    setTenant("");
    expect(requestHeaders("application/json")).toEqual({ accept: "application/json" });
  });
});
