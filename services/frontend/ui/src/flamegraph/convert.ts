// From the API's flamegraph answers to the profile objects the flamegraph library renders, and the
// figures the UI shows beside it (search share, diff table).

import type { DiffData, FlamegraphData, ProfileType } from "../api/types";
import { valueUnits } from "./profileTypes";

/** What `FlamegraphRenderer`'s `profile` prop takes (levels still delta-encoded: it decodes them). */
export interface RenderableProfile {
  version: 1;
  flamebearer: { names: string[]; levels: number[][]; numTicks: number; maxSelf: number };
  metadata: {
    format: "single" | "double";
    spyName: "unknown";
    sampleRate: number;
    units: string;
    name?: string;
  };
  leftTicks?: number;
  rightTicks?: number;
}

export function toProfile(fg: FlamegraphData, type: ProfileType): RenderableProfile {
  const { units, sampleRate } = valueUnits(type);
  return {
    version: 1,
    // The library decodes levels in place: hand it copies so the answer we keep stays delta-encoded.
    flamebearer: { names: fg.names, levels: fg.levels.map((l) => l.slice()), numTicks: fg.total, maxSelf: fg.max_self },
    metadata: { format: "single", spyName: "unknown", sampleRate, units, name: type.id },
  };
}

export function toDiffProfile(fg: DiffData, type: ProfileType): RenderableProfile {
  const profile = toProfile(fg, type);
  return { ...profile, metadata: { ...profile.metadata, format: "double" }, leftTicks: fg.left_ticks, rightTicks: fg.right_ticks };
}

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
