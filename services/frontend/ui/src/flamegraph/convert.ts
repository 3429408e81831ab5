// Figures the UI shows beside a flamegraph from the API's answer: its node count and the search share.

import type { FlamegraphData } from "../api/types";

/** Nodes in the flamegraph: the figure the "max nodes" control caps. */
export function nodeCount(fg: FlamegraphData, step = 4): number {
  return fg.levels.reduce((n, level) => n + level.length / step, 0);
}

/**
 * Share of the total spent in frames whose name contains `query` (case-insensitive), each stack
 * counted once: a match nested inside another match adds nothing. Descendants of a node lie within
 * its [x, x + total) span, so the union of matched spans is exactly that value.
 */
export function searchShare(fg: FlamegraphData, query: string): { matches: number; value: number; share: number } {
  const needle = query.trim().toLowerCase();
  if (needle === "" || fg.total === 0) return { matches: 0, value: 0, share: 0 };
  const matchedName = fg.names.map((n) => n.toLowerCase().includes(needle));
  const spans: [number, number][] = [];
  for (const level of fg.levels) {
    let x = 0;
    for (let i = 0; i < level.length; i += 4) {
      x += level[i];
      if (matchedName[level[i + 3]]) spans.push([x, x + level[i + 1]]);
      x += level[i + 1];
    }
  }
  const value = unionLength(spans);
  return { matches: spans.length, value, share: value / fg.total };
}

function unionLength(spans: [number, number][]): number {
  spans.sort((a, b) => a[0] - b[0]);
  let covered = 0;
  let end = -Infinity;
  for (const [lo, hi] of spans) {
    if (hi <= end) continue;
    covered += hi - Math.max(lo, end);
    end = hi;
  }
  return covered;
}
