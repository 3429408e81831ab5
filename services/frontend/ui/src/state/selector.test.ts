import { describe, expect, it } from "vitest";
import { narrowSelector, splitMatchers } from "./selector";

describe("splitMatchers", () => {
  it("reads each matcher as written, whatever its quotes and escapes", () => {
    expect(splitMatchers(' { job = "a,b" , pod=~\'x\\\'y\', path!~`C:\\tmp`, } ')).toEqual([
      { name: "job", text: 'job="a,b"' },
      { name: "pod", text: "pod=~'x\\'y'" },
      { name: "path", text: "path!~`C:\\tmp`" },
    ]);
  });

  it("reads an empty selector as no matchers", () => {
    expect(splitMatchers("")).toEqual([]);
    expect(splitMatchers("{ }")).toEqual([]);
  });

  it("gives null for text that is not a selector", () => {
    expect(splitMatchers('job="a"')).toBeNull();
    expect(splitMatchers('{job="a" pod="b"}')).toBeNull();
    expect(splitMatchers('{job="a}')).toBeNull();
    expect(splitMatchers("{,}")).toBeNull();
  });
});

describe("narrowSelector", () => {
  it("adds the value's matcher to the others", () => {
    expect(narrowSelector("", "service_name", "demo")).toBe('{service_name="demo"}');
    expect(narrowSelector('{job="api"}', "instance", "10.0.0.1:6060")).toBe('{job="api", instance="10.0.0.1:6060"}');
  });

  it("replaces the matchers on the same label rather than repeating it", () => {
    expect(narrowSelector('{service_name="demo"}', "service_name", "demo")).toBe('{service_name="demo"}');
    expect(narrowSelector('{job=~"a|b", pod!="x"}', "job", "a")).toBe('{pod!="x", job="a"}');
  });

  it("quotes the value so any text round-trips", () => {
    expect(narrowSelector("{}", "path", 'C:\\a "b"')).toBe('{path="C:\\\\a \\"b\\""}');
  });

  it("keeps a text it cannot read whole and appends the matcher", () => {
    expect(narrowSelector('{job="a" pod="b"}', "job", "a")).toBe('{job="a" pod="b", job="a"}');
  });
});
