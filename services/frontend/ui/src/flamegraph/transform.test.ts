import { describe, expect, it } from "vitest";
import type { FlamegraphData } from "../api/types";
import { binaryOf, buildLayout, nameOf } from "./layout";
import { TREE } from "./testTree";
import { functionTotals } from "./totals";
import { buildTree, collapsedStacks, invert, parentIndices, sandwich, stacksOf } from "./transform";

const layout = buildLayout(TREE);
const [A, B, MAIN, TOTAL] = [0, 1, 2, 3];

/** Each node as "depth:name total/self", level by level: a tree's shape without its encoding. */
function nodes(fg: FlamegraphData): string[] {
  return buildLayout(fg).levels.flatMap((level, depth) =>
    Array.from(level.name, (n, i) => `${depth}:${fg.names[n]} ${level.total[i]}/${level.self[i]}@${level.x[i]}`));
}

// total(100, self 10) → main(90) → { a(30, self 30), b(60, self 40) → a(20, self 20) }
// recursive: total(10) → f(10) → g(10) → f(10, self 6) → h(4, self 4)
const RECURSIVE: FlamegraphData = {
  names: ["f", "g", "h", "total"],
  levels: [[0, 10, 0, 3], [0, 10, 0, 0], [0, 10, 0, 1], [0, 10, 6, 0], [0, 4, 4, 2]],
  total: 10,
  max_self: 6,
};

describe("stacksOf", () => {
  it("pairs each node with its parent", () => {
    expect(parentIndices(layout).map((p) => Array.from(p))).toEqual([[-1], [0], [0, 0], [1]]);
  });

  it("lists every frame with self as its path of names, the root's self as the empty path", () => {
    const stacks = stacksOf(layout).map((s) => [Array.from(s.path), s.value]);
    expect(stacks).toEqual([[[], 10], [[MAIN, A], 30], [[MAIN, B], 40], [[MAIN, B, A], 20]]);
  });
});

describe("buildTree", () => {
  it("rebuilds the tree it was made from, to the number", () => {
    const rebuilt = buildTree(TREE.names, TOTAL, stacksOf(layout));
    expect(rebuilt.levels).toEqual(TREE.levels);
    expect([rebuilt.total, rebuilt.max_self]).toEqual([100, 40]);
  });
});

describe("invert", () => {
  it("puts what burns at the top, then its callers, keeping the whole", () => {
    expect(nodes(invert(layout))).toEqual([
      "0:total 100/10@0",
      "1:a 50/0@0", "1:b 40/0@50",
      "2:b 20/0@0", "2:main 30/30@20", "2:main 40/40@50",
      "3:main 20/20@0",
    ]);
  });

  it("has each function's self as its width on the first level", () => {
    const [self] = functionTotals(TREE);
    const first = buildLayout(invert(layout)).levels[1];
    expect(Array.from(first.name, (n, i) => [n, first.total[i]])).toEqual([[A, self[A]], [B, self[B]]]);
  });
});

describe("sandwich", () => {
  it("has the function's callers and callees under it, at its total", () => {
    const { callers, callees } = sandwich(layout, A);
    expect(nodes(callers)).toEqual(["0:a 50/0@0", "1:b 20/0@0", "1:main 30/30@20", "2:main 20/20@0"]);
    expect(nodes(callees)).toEqual(["0:a 50/50@0"]);
  });

  it("of a function in the middle lists its callees", () => {
    const { callers, callees } = sandwich(layout, B);
    expect(nodes(callers)).toEqual(["0:b 60/0@0", "1:main 60/60@0"]);
    expect(nodes(callees)).toEqual(["0:b 60/40@0", "1:a 20/20@0"]);
  });

  it("counts a recursive function once: callers from its innermost frame, callees from its outermost", () => {
    const recursive = buildLayout(RECURSIVE);
    const { callers, callees } = sandwich(recursive, 0);
    expect(nodes(callers)).toEqual(["0:f 10/0@0", "1:g 10/0@0", "2:f 10/10@0"]);
    expect(nodes(callees)).toEqual(["0:f 10/0@0", "1:g 10/0@0", "2:f 10/6@0", "3:h 4/4@0"]);
  });

  it("of a function not in the tree is empty", () => {
    const { callers, callees } = sandwich(layout, -1);
    expect([callers.total, callees.total, callers.levels.length]).toEqual([0, 0, 1]);
  });
});

describe("collapsedStacks", () => {
  it("writes one line per stack with its value", () => {
    expect(collapsedStacks(layout)).toBe("main;a 30\nmain;b 40\nmain;b;a 20\n");
  });
});

describe("binaries", () => {
  const binaries = ["/usr/lib/libc.so.6", "/app/server", "/app/server", ""];
  const withBinaries = buildLayout({ ...TREE, binaries });

  it("stay with their names through the inversion and the sandwich", () => {
    const inverted = buildLayout(invert(withBinaries));
    const leaf = { depth: 1, index: inverted.levels[1].name.indexOf(A) };
    expect(nameOf(inverted, leaf)).toBe("a");
    expect(binaryOf(inverted, leaf)).toBe("/usr/lib/libc.so.6");
    const { callers, callees } = sandwich(withBinaries, B);
    expect(callers.binaries).toEqual(binaries);
    expect(binaryOf(buildLayout(callees), { depth: 1, index: 0 })).toBe("/usr/lib/libc.so.6");
  });

  it("are empty where the answer names none", () => {
    expect(binaryOf(layout, { depth: 1, index: 0 })).toBe("");
    expect(binaryOf(withBinaries, { depth: 0, index: 0 })).toBe("");
  });
});
