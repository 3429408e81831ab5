import { describe, expect, it } from "vitest";
import { functionTotals, topRows } from "./totals";

// total(10) → main(10) → fib(10, self 2) → fib(8, self 8); and a second root child other(5, self 5).
// Names sorted, levels delta-encoded: level 1 is main [0,10) then other [10,15).
const RECURSIVE = {
  names: ["fib", "main", "other", "total"],
  levels: [
    [0, 15, 0, 3],
    [0, 10, 0, 1, 0, 5, 5, 2],
    [0, 10, 2, 0],
    [0, 8, 8, 0],
  ],
};

describe("functionTotals", () => {
  it("sums self over every frame and counts a recursive function's total once per stack", () => {
    const [self, total] = functionTotals(RECURSIVE);
    expect(Array.from(self)).toEqual([10, 0, 5, 0]);
    expect(Array.from(total)).toEqual([10, 10, 5, 0]); // fib 10, not 18; the root is left out
  });

  it("adds a function's separate stacks", () => {
    // total(6) → a(2) → c(2, self 2); b(4) → c(4, self 4)
    const fg = { names: ["a", "b", "c", "total"], levels: [[0, 6, 0, 3], [0, 2, 0, 0, 0, 4, 0, 1], [0, 2, 2, 2, 0, 4, 4, 2]] };
    const [self, total] = functionTotals(fg);
    expect([self[2], total[2]]).toEqual([6, 6]);
  });
});

describe("topRows", () => {
  it("lists functions heaviest self first, never with a total above the whole", () => {
    expect(topRows(RECURSIVE)).toEqual([
      { name: "fib", self: 10, total: 10 },
      { name: "other", self: 5, total: 5 },
      { name: "main", self: 0, total: 10 },
    ]);
  });
});
