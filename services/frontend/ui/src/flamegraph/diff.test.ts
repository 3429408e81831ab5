import { describe, expect, it } from "vitest";
import type { DiffData } from "../api/types";
import { diffColor, diffRows, formatChange, relativeChange } from "./diff";

// Left: total 100 = main 100 → { f 80, g 20 }.  Right: total 200 = main 200 → { f 80, g 120 }.
// Each side delta-encoded on its own.
const DIFF: DiffData = {
  names: ["f", "g", "main", "total"],
  levels: [
    [0, 100, 0, 0, 200, 0, 3],
    [0, 100, 0, 0, 200, 0, 2],
    [0, 80, 80, 0, 80, 80, 0, 0, 20, 20, 0, 120, 120, 1],
  ],
  total: 300,
  max_self: 120,
  left_ticks: 100,
  right_ticks: 200,
};

describe("diffRows", () => {
  it("gives each function's left, right, delta and change of share, largest change first", () => {
    const rows = diffRows(DIFF);
    expect(rows.map((r) => r.name)).toEqual(["f", "g", "main"]);
    const [f, g, main] = rows;
    expect(f).toMatchObject({ left: 80, right: 80, delta: 0 });
    expect(f.change).toBeCloseTo(-0.5); // 80% of the left, 40% of the right
    expect(g).toMatchObject({ left: 20, right: 120, delta: 100 });
    expect(g.change).toBeCloseTo(2); // 20% → 60%
    expect(main.change).toBe(0);
  });

  it("puts the largest growth of self first when asked, as a leak's growth reads", () => {
    // f keeps 80 but its share halves; g grows by 100 itself; main grows as much, through g only.
    expect(diffRows(DIFF, "growth").map((r) => [r.name, r.selfDelta])).toEqual([["g", 100], ["main", 0], ["f", 0]]);
  });

  it("counts a recursive function once per stack", () => {
    const recursive: DiffData = {
      names: ["f", "total"],
      levels: [[0, 10, 0, 0, 10, 0, 1], [0, 10, 0, 0, 10, 0, 0], [0, 10, 10, 0, 10, 10, 0]],
      total: 20, max_self: 10, left_ticks: 10, right_ticks: 10,
    };
    expect(diffRows(recursive)).toEqual([{ name: "f", left: 10, right: 10, delta: 0, change: 0, selfDelta: 0 }]);
  });

  it("marks a function new on the right as an infinite change", () => {
    expect(relativeChange(0, 100, 5, 100)).toBe(Infinity);
    expect(formatChange(Infinity)).toBe("new");
    expect(formatChange(-1)).toBe("gone");
    expect(formatChange(0.25)).toBe("+25%");
    expect(formatChange(-0.032)).toBe("-3.2%");
  });
});

describe("diffColor", () => {
  const rgb = (c: string) => c.match(/\d+/g)!.map(Number);

  it("is grey when nothing changed, red when it grew and green when it shrank", () => {
    expect(diffColor(0)).toBe("rgb(160, 160, 160)");
    const [r1, g1] = rgb(diffColor(0.5));
    expect(r1).toBeGreaterThan(g1);
    const [r2, g2] = rgb(diffColor(-0.5));
    expect(g2).toBeGreaterThan(r2);
  });

  it("deepens with the size of the change and saturates at ±100%", () => {
    const red = (c: number) => rgb(diffColor(c))[0];
    expect(red(0.05)).toBeLessThan(red(0.5));
    expect(red(0.5)).toBeLessThan(red(1));
    expect(diffColor(5)).toBe(diffColor(1));
    expect(diffColor(Infinity)).toBe(diffColor(1));
    expect(diffColor(-3)).toBe(diffColor(-1));
  });
});
