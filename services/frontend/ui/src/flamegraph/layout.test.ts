import { describe, expect, it } from "vitest";
import { TREE } from "./testTree";
import type { DiffData } from "../api/types";
import { diffColor } from "./diff";
import { fitLabel } from "./draw";
import {
  ancestry, buildLayout, findFocus, findPath, frameAtPoint, frameChange, frameFigures, frameSpan, indexAt, indexRange,
  matchingNames, pathOf, viewRange,
} from "./layout";
import { diffFrameColor, functionColor, nameColors, nameHash, PALETTES, SPECIAL } from "./palette";

const layout = buildLayout(TREE);
const MAIN = { depth: 1, index: 0 };
const B = { depth: 2, index: 1 };
const A_UNDER_B = { depth: 3, index: 0 };

// Left total 10 → {a 4, b 6}; right total 30 → {a 20, b 10}: a grew from 40% to 67%, b shrank from 60% to 33%.
const DIFF: DiffData = {
  names: ["a", "b", "other", "total"],
  levels: [
    [0, 10, 0, 0, 30, 0, 3],
    [0, 4, 4, 0, 20, 20, 0, 0, 6, 6, 0, 10, 10, 1],
  ],
  total: 40,
  max_self: 20,
  left_ticks: 10,
  right_ticks: 30,
};

describe("buildLayout", () => {
  it("turns each level's x deltas into absolute starts", () => {
    expect(Array.from(layout.levels[2].x)).toEqual([0, 30]);
    expect(Array.from(layout.levels[3].x)).toEqual([30]);
    expect(Array.from(layout.levels[2].self)).toEqual([30, 40]);
    expect(layout.total).toBe(100);
    expect(layout.diff).toBeNull();
  });

  it("lays a diff out on left + right, keeping each side's figures", () => {
    const d = buildLayout(DIFF, 7);
    expect(Array.from(d.levels[1].x)).toEqual([0, 24]);
    expect(Array.from(d.levels[1].total)).toEqual([24, 16]);
    expect(Array.from(d.levels[1].left!.total)).toEqual([4, 6]);
    expect(Array.from(d.levels[1].right!.total)).toEqual([20, 10]);
    expect(d.total).toBe(40);
    expect(d.diff).toEqual({ leftTicks: 10, rightTicks: 30 });
  });
});

describe("hit testing", () => {
  it("finds the node whose span holds a tick, and nothing in gaps or past the end", () => {
    expect(indexAt(layout, 2, 0)).toBe(0);
    expect(indexAt(layout, 2, 29.9)).toBe(0);
    expect(indexAt(layout, 2, 30)).toBe(1);
    expect(indexAt(layout, 2, 90)).toBe(-1);
    expect(indexAt(layout, 3, 10)).toBe(-1);
    expect(indexAt(layout, 3, 49)).toBe(0);
    expect(indexAt(layout, 3, 50)).toBe(-1);
    expect(indexAt(layout, 9, 1)).toBe(-1);
  });

  it("agrees with a scan over a level of 100,000 nodes with gaps", () => {
    const row: number[] = [];
    for (let i = 0; i < 100_000; i++) row.push(i % 3, 1 + (i % 5), 0, 0);
    const wide = buildLayout({ names: ["f"], levels: [[0, 1e9, 0, 0], row], total: 1e9, max_self: 0 });
    const { x, total } = wide.levels[1];
    for (const tick of [0, 0.5, 1, 2, 3.5, 7, 1234.5, 250_000, x[99_999], x[99_999] + total[99_999]]) {
      let expected = -1;
      for (let i = 0; i < x.length; i++) if (tick >= x[i] && tick < x[i] + total[i]) expected = i;
      expect(indexAt(wide, 1, tick)).toBe(expected);
    }
  });

  it("lists the nodes overlapping a range", () => {
    expect(indexRange(layout, 2, 25, 35)).toEqual([0, 2]);
    expect(indexRange(layout, 2, 30, 90)).toEqual([1, 2]);
    expect(indexRange(layout, 2, 0, 30)).toEqual([0, 1]);
    expect(indexRange(layout, 2, 90, 100)).toEqual([2, 2]);
  });

  it("maps a point to a frame across the whole width", () => {
    expect(frameAtPoint(layout, null, 0.35, 2)).toEqual(B);
    expect(frameAtPoint(layout, null, 0.1, 2)).toEqual({ depth: 2, index: 0 });
    expect(frameAtPoint(layout, null, 0.95, 1)).toBeNull();
    expect(frameAtPoint(layout, null, 0.5, 4)).toBeNull();
    expect(frameAtPoint(layout, null, 1, 0)).toBeNull();
  });

  it("maps a point inside a zoomed frame's span, with its ancestors full width above", () => {
    expect(viewRange(layout, B)).toEqual({ start: 30, width: 60 });
    expect(frameAtPoint(layout, B, 0, 3)).toEqual(A_UNDER_B);
    expect(frameAtPoint(layout, B, 0.5, 3)).toBeNull();
    expect(frameAtPoint(layout, B, 0.9, 2)).toEqual(B);
    expect(frameAtPoint(layout, B, 0.99, 1)).toEqual(MAIN);
    expect(frameAtPoint(layout, B, 0.99, 0)).toEqual({ depth: 0, index: 0 });
  });

  it("places a frame as fractions of the width, zoomed or not", () => {
    expect(frameSpan(layout, null, B)).toEqual({ left: 0.3, width: 0.6 });
    expect(frameSpan(layout, B, A_UNDER_B)).toEqual({ left: 0, width: 1 / 3 });
    expect(frameSpan(layout, B, MAIN)).toEqual({ left: 0, width: 1 });
  });
});

describe("zoom paths (breadcrumbs)", () => {
  it("walks from a frame up to the root", () => {
    expect(ancestry(layout, A_UNDER_B)).toEqual([{ depth: 0, index: 0 }, MAIN, B, A_UNDER_B]);
    expect(pathOf(layout, A_UNDER_B)).toEqual(["main", "b", "a"]);
    expect(pathOf(layout, { depth: 0, index: 0 })).toEqual([]);
  });

  it("finds a frame again from its path, telling namesakes at one depth apart", () => {
    expect(findPath(layout, ["main", "b", "a"])).toEqual(A_UNDER_B);
    expect(findPath(layout, ["main", "a"])).toEqual({ depth: 2, index: 0 });
    expect(findPath(layout, [])).toEqual({ depth: 0, index: 0 });
  });

  it("finds nothing for a path this flamegraph lacks", () => {
    expect(findPath(layout, ["main", "nope"])).toBeNull();
    expect(findPath(layout, ["main", "a", "a"])).toBeNull();
    expect(findPath(layout, ["b"])).toBeNull();
  });

  it("finds a focus of one name deeper down as its widest frame (a function picked in What changed)", () => {
    expect(findFocus(layout, ["b"])).toEqual(B);
    expect(findFocus(layout, ["a"])).toEqual({ depth: 2, index: 0 });  // 30 under main beats 20 under b
    expect(findFocus(layout, ["main"])).toEqual(MAIN);
    expect(findFocus(layout, ["nope"])).toBeNull();
    expect(findFocus(layout, ["b", "nope"])).toBeNull();
    expect(findFocus(layout, [])).toBeNull();
  });
});

describe("frame figures", () => {
  it("gives self, total and share of the whole", () => {
    expect(frameFigures(layout, A_UNDER_B, null)).toEqual({
      name: "a", self: 20, total: 20, share: 0.2, shareOfFocus: null, diff: null,
    });
    expect(frameFigures(layout, B, null)).toMatchObject({ self: 40, total: 60, share: 0.6 });
  });

  it("adds the share of the zoomed frame for frames inside it", () => {
    expect(frameFigures(layout, A_UNDER_B, B).shareOfFocus).toBeCloseTo(1 / 3);
    expect(frameFigures(layout, B, B).shareOfFocus).toBe(1);
    expect(frameFigures(layout, MAIN, B).shareOfFocus).toBeNull();
  });

  it("gives a diff frame's left, right, delta and change of share", () => {
    const d = buildLayout(DIFF, 7);
    const b = frameFigures(d, { depth: 1, index: 1 }, null);
    expect(b.diff).toMatchObject({ left: 6, right: 10, delta: 4 });
    expect(b.diff!.change).toBeCloseTo((10 / 30 - 0.6) / 0.6);
    expect(frameChange(d, { depth: 1, index: 0 })).toBeCloseTo((20 / 30 - 0.4) / 0.4);
  });

  it("gives a diff frame's change of value for a growth: b grew 6 -> 10 though its share fell", () => {
    const d = buildLayout(DIFF, 7);
    expect(frameChange(d, { depth: 1, index: 1 }, true)).toBeCloseTo(4 / 6);
    expect(frameChange(d, { depth: 1, index: 1 })).toBeLessThan(0);
  });
});

describe("colours", () => {
  it("colour a diff by its change on diff.ts's scale, other apart", () => {
    const d = buildLayout(DIFF, 7);
    const a = { depth: 1, index: 0 };
    expect(diffFrameColor("a", frameChange(d, a), "light")).toBe(diffColor((20 / 30 - 0.4) / 0.4));
    expect(diffFrameColor("b", frameChange(d, { depth: 1, index: 1 }), "light")).toBe(diffColor(-4 / 9));
    expect(diffFrameColor("other", 0.5, "dark")).toBe(SPECIAL.dark.other);
  });

  it("keep a function's colour stable, from the palette, per theme", () => {
    expect(nameHash("")).toBe(0x811c9dc5);
    expect(nameHash("a")).toBe(0xe40c292c);
    const name = "main.cpuFibonacci";
    expect(functionColor(name, "light")).toBe(functionColor(name, "light"));
    expect(PALETTES.light).toContain(functionColor(name, "light"));
    expect(PALETTES.dark).toContain(functionColor(name, "dark"));
    expect(PALETTES.light).not.toContain(functionColor(name, "dark"));
    expect(nameColors(["x", name], "light")[1]).toBe(functionColor(name, "light"));
  });

  it("spread names over the palette", () => {
    const used = new Set(Array.from({ length: 200 }, (_, i) => functionColor(`pkg.Function${i}`, "light")));
    expect(used.size).toBe(PALETTES.light.length);
  });

  it("set other and the root apart from every function", () => {
    for (const theme of ["light", "dark"] as const) {
      expect(PALETTES[theme]).not.toContain(functionColor("other", theme));
      expect(PALETTES[theme]).not.toContain(functionColor("total", theme));
      expect(functionColor("other", theme)).not.toBe(functionColor("total", theme));
    }
  });
});

describe("search", () => {
  it("marks the names containing the query, ignoring case", () => {
    expect(Array.from(matchingNames(["Main.A", "b", "xa"], "a")!)).toEqual([1, 0, 1]);
    expect(matchingNames(["a"], "  ")).toBeNull();
  });
});

describe("fitLabel", () => {
  it("keeps a name that fits, cuts the start of one that does not, and drops it when too narrow", () => {
    expect(fitLabel("main.run", 80, 8)).toBe("main.run");
    expect(fitLabel("crypto/sha256.Sum256", 80, 8)).toBe("…56.Sum256");
    expect(fitLabel("crypto/sha256.Sum256", 20, 8)).toBe("");
  });
});
