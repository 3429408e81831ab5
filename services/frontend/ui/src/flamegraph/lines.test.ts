import { describe, expect, it } from "vitest";
import { functionLines, splitLineName } from "./lines";

// total(10) → main.run run.go:10 (10) → { main.work work.go:7 (6, self 6), main.work work.go:9 (4) → main.work work.go:7 (4, self 4) }
const LINES = {
  names: ["total", "main.run run.go:10", "main.work work.go:7", "main.work work.go:9", "[libc.so.6] 0x4f2a0"],
  levels: [[0, 10, 0, 0], [0, 10, 0, 1], [0, 6, 6, 2, 0, 4, 0, 3], [6, 4, 4, 2]],
};

describe("splitLineName", () => {
  it("splits a function's name from its file and line", () => {
    expect(splitLineName("main.(*T).Run run.go:42")).toEqual({ fn: "main.(*T).Run", file: "run.go", line: 42 });
    expect(splitLineName("main.work")).toBeNull();
    expect(splitLineName("[libc.so.6] 0x4f2a0")).toBeNull();
  });
});

describe("functionLines", () => {
  it("lists a function's lines by number, each line's total counted once per stack", () => {
    expect(functionLines(LINES, "main.work")).toEqual([
      { file: "work.go", line: 7, self: 10, total: 10 },
      { file: "work.go", line: 9, self: 0, total: 4 },
    ]);
    expect(functionLines(LINES, "main.other")).toEqual([]);
  });
});
