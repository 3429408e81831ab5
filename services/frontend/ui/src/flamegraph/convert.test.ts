import { describe, expect, it } from "vitest";
import { TREE } from "./testTree";
import type { ProfileType } from "../api/types";
import { nodeCount, searchShare } from "./convert";
import { formatValue, parseTypeId, readableTypeName } from "./profileTypes";

const CPU = parseTypeId("process_cpu:cpu:nanoseconds:cpu:nanoseconds") as ProfileType;


describe("searchShare", () => {
  it("adds separate matches: a beside b and a under b", () => {
    const named = { ...TREE, names: ["fa", "fb", "main", "root"] };
    expect(searchShare(named, "fa")).toEqual({ matches: 2, value: 50, share: 0.5 });
  });

  it("ignores case", () => {
    const named = { ...TREE, names: ["fa", "fb", "main", "root"] };
    expect(searchShare(named, "FA")).toMatchObject({ matches: 2, value: 50 });
  });

  it("does not count a match inside a match twice", () => {
    expect(searchShare(TREE, "b").value).toBe(60);
    // "f" is in fmain, fa, fb and the fa under fb: fmain holds them all.
    const nested = { ...TREE, names: ["fa", "fb", "fmain", "root"] };
    expect(searchShare(nested, "f")).toMatchObject({ matches: 4, value: 90, share: 0.9 });
    // "a" is in "main" and "total" too: the root holds every other match.
    expect(searchShare(TREE, "a")).toMatchObject({ matches: 4, value: 100, share: 1 });
  });

  it("is empty for an empty query or an empty profile", () => {
    expect(searchShare(TREE, "  ")).toEqual({ matches: 0, value: 0, share: 0 });
    expect(searchShare({ ...TREE, total: 0 }, "a").share).toBe(0);
  });
});

describe("nodeCount", () => {
  it("counts nodes of either encoding", () => {
    expect(nodeCount(TREE)).toBe(5);
    expect(nodeCount({ ...TREE, levels: [[0, 1, 1, 0, 1, 1, 0]] }, 7)).toBe(1);
  });
});

describe("profile types", () => {
  it("reads as people name them", () => {
    expect(readableTypeName(CPU)).toBe("CPU");
    expect(readableTypeName(parseTypeId("memory:alloc_space:bytes:space:bytes")!)).toBe("Memory allocated (bytes)");
    expect(readableTypeName(parseTypeId("wall:wall:nanoseconds:wall:nanoseconds")!)).toBe("wall wall (nanoseconds)");
  });

  it("refuses an id without five parts", () => {
    expect(parseTypeId("process_cpu:cpu")).toBeNull();
  });

  it("formats values in the type's unit", () => {
    expect(formatValue(2.5e9, "nanoseconds")).toBe("2.5 s");
    expect(formatValue(90e9, "nanoseconds")).toBe("1.5 min");
    expect(formatValue(3 * 1024 * 1024, "bytes")).toBe("3 MiB");
    expect(formatValue(12345, "count")).toBe("12,345");
  });
});
