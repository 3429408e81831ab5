// Other trees of the same samples, made in the browser from a laid-out flamegraph: its stacks (one per
// frame with self), the inverted tree (what burns, then who called it), a function's sandwich (its
// callers above it, its callees below it), and the stacks as collapsed text (Brendan Gregg's format).
// Each tree comes back in the API's level encoding, so the renderer, search and zoom read it as any other.

import type { FlamegraphData } from "../api/types";
import type { Layout } from "./layout";

/** The samples of one frame's self: the name indices from below the root down to the frame. */
export interface Stack {
  path: Int32Array;
  value: number;
}

/** Per level, each node's parent: its index in the level above (-1 on the root's level). */
export function parentIndices(layout: Layout): Int32Array[] {
  return layout.levels.map((level, depth) => {
    const parents = new Int32Array(level.x.length).fill(-1);
    if (depth === 0) return parents;
    const above = layout.levels[depth - 1];
    // Both levels are in ascending x and a child starts inside its parent's span: one sweep pairs them.
    let j = 0;
    for (let i = 0; i < level.x.length; i++) {
      while (j + 1 < above.x.length && above.x[j + 1] <= level.x[i]) j++;
      parents[i] = j;
    }
    return parents;
  });
}

/** Every frame with self, as its stack (the root's own self is the stack of no frames). */
export function stacksOf(layout: Layout): Stack[] {
  const parents = parentIndices(layout);
  const stacks: Stack[] = [];
  layout.levels.forEach((level, depth) => {
    for (let i = 0; i < level.self.length; i++) {
      if (level.self[i] <= 0) continue;
      const path = new Int32Array(depth);
      for (let d = depth, k = i; d > 0; k = parents[d][k], d--) path[d - 1] = layout.levels[d].name[k];
      stacks.push({ path, value: level.self[i] });
    }
  });
  return stacks;
}

/**
 * The tree of these stacks under a root named `names[root]`, children in name order, in the API's
 * delta-encoded levels (4 numbers a node); `binaries`, aligned with `names`, is passed on as it is.
 */
export function buildTree(names: string[], root: number, stacks: Iterable<Stack>, binaries?: string[]): FlamegraphData {
  // The trie: per node its name, total, self and children by name.
  const name = [root];
  const total = [0];
  const self = [0];
  const children: Map<number, number>[] = [new Map()];
  for (const { path, value } of stacks) {
    let node = 0;
    total[0] += value;
    for (const n of path) {
      let child = children[node].get(n);
      if (child === undefined) {
        child = name.length;
        name.push(n);
        total.push(0);
        self.push(0);
        children.push(new Map());
        children[node].set(n, child);
      }
      total[child] += value;
      node = child;
    }
    self[node] += value;
  }
  const levels: number[][] = [];
  const ends: number[] = []; // per level, where its last node written ends
  const byName = (a: number, b: number) => (names[name[a]] < names[name[b]] ? -1 : names[name[a]] > names[name[b]] ? 1 : 0);
  const write = (node: number, depth: number, x: number) => {
    if (levels.length === depth) {
      levels.push([]);
      ends.push(0);
    }
    levels[depth].push(x - ends[depth], total[node], self[node], name[node]);
    ends[depth] = x + total[node];
    let childX = x;
    for (const child of [...children[node].values()].sort(byName)) {
      write(child, depth + 1, childX);
      childX += total[child];
    }
  };
  write(0, 0, 0);
  return { names, levels, total: total[0], max_self: self.reduce((a, b) => Math.max(a, b), 0), binaries };
}

/** The tree upside down: each frame with self at the top, then its caller, down to the outermost function. */
export function invert(layout: Layout): FlamegraphData {
  const inverted = stacksOf(layout).map(({ path, value }) => ({ path: path.slice().reverse(), value }));
  return buildTree(layout.names, rootName(layout), inverted, layout.binaries);
}

/** A function's callers (who called it, up to the outermost function) and callees (what it called). */
export interface Sandwich {
  callers: FlamegraphData;
  callees: FlamegraphData;
}

/**
 * The sandwich of the function named `names[fn]`, over the stacks that pass through it: both trees have
 * it at the root with its total (recursion counted once). Callers are read from its innermost frame of a
 * stack outwards, callees from its outermost frame inwards, so a recursive function's frames between the
 * two are on the callees' side.
 */
export function sandwich(layout: Layout, fn: number): Sandwich {
  const callers: Stack[] = [];
  const callees: Stack[] = [];
  for (const { path, value } of stacksOf(layout)) {
    const first = path.indexOf(fn);
    if (first < 0) continue;
    const last = path.lastIndexOf(fn);
    callers.push({ path: path.slice(0, last).reverse(), value });
    callees.push({ path: path.slice(first + 1), value });
  }
  return {
    callers: buildTree(layout.names, fn, callers, layout.binaries),
    callees: buildTree(layout.names, fn, callees, layout.binaries),
  };
}

/** The stacks as collapsed text, one `outer;inner;leaf value` line each, in the order of the levels. */
export function collapsedStacks(layout: Layout): string {
  return stacksOf(layout)
    .filter((s) => s.path.length > 0)
    .map(({ path, value }) => `${Array.from(path, (n) => layout.names[n]).join(";")} ${value}`)
    .join("\n") + "\n";
}

function rootName(layout: Layout): number {
  return layout.levels.length > 0 && layout.levels[0].name.length > 0 ? layout.levels[0].name[0] : layout.names.indexOf("total");
}
