// The figures of a diff flamegraph: per function, left and right totals and their relative change,
// and the colour scale (green shrank, red grew) shared by the legend and the table.

import type { DiffData } from "../api/types";
import { functionTotals } from "./totals";

export interface DiffRow {
  name: string;
  left: number;
  right: number;
  /** right − left, in the profile's unit. */
  delta: number;
  /** Change of the function's share of its side's total: (right% − left%) / left%; ±Infinity when new or gone. */
  change: number;
  /** right − left of its self: what it holds or spends itself, not through its callees. */
  selfDelta: number;
}

/** "share": the largest change of share first (what a comparison of two versions asks); "growth": the
 * largest growth of self first (what grew where, as a leak's growth between two heaps asks). */
export type DiffOrder = "share" | "growth";

/**
 * One row per function, its total on each side counted once per stack (a recursive function's inner
 * frames add nothing). Sorted by the size of the change in share, largest first, or by `order`.
 */
export function diffRows(fg: DiffData, order: DiffOrder = "share"): DiffRow[] {
  const [leftSelf, left] = functionTotals(fg, { step: 7, offset: 0 });
  const [rightSelf, right] = functionTotals(fg, { step: 7, offset: 3 });
  const rows: DiffRow[] = [];
  for (let i = 0; i < fg.names.length; i++) {
    if (left[i] === 0 && right[i] === 0) continue;
    rows.push({ name: fg.names[i], left: left[i], right: right[i], delta: right[i] - left[i],
      change: relativeChange(left[i], fg.left_ticks, right[i], fg.right_ticks), selfDelta: rightSelf[i] - leftSelf[i] });
  }
  if (order === "growth") {
    return rows.sort((a, b) => b.selfDelta - a.selfDelta || b.delta - a.delta || a.name.localeCompare(b.name));
  }
  const size = (r: DiffRow) => Math.abs(share(r.right, fg.right_ticks) - share(r.left, fg.left_ticks));
  return rows.sort((a, b) => size(b) - size(a) || a.name.localeCompare(b.name));
}

function share(value: number, ticks: number): number {
  return ticks > 0 ? value / ticks : 0;
}

export function relativeChange(left: number, leftTicks: number, right: number, rightTicks: number): number {
  const l = share(left, leftTicks);
  const r = share(right, rightTicks);
  if (l === 0) return r === 0 ? 0 : Infinity;
  return (r - l) / l;
}

/** The legend's stops: relative change → colour. */
export const LEGEND_STOPS = [-1, -0.5, -0.2, -0.05, 0, 0.05, 0.2, 0.5, 1];

const GREEN: [number, number, number] = [59, 170, 90];
const NEUTRAL: [number, number, number] = [160, 160, 160];
const RED: [number, number, number] = [214, 62, 62];

/** Green for shrinking, grey for unchanged, red for growing; saturated at ±100%. */
export function diffColor(change: number): string {
  if (Number.isNaN(change)) return rgb(NEUTRAL);
  const t = Math.max(-1, Math.min(1, change));
  const target = t < 0 ? GREEN : RED;
  const k = Math.sqrt(Math.abs(t)); // small changes still show: 5% is about a fifth of the way
  return rgb(NEUTRAL.map((n, i) => Math.round(n + (target[i] - n) * k)) as [number, number, number]);
}

function rgb([r, g, b]: [number, number, number]): string {
  return `rgb(${r}, ${g}, ${b})`;
}

export function formatChange(change: number): string {
  if (change === Infinity) return "new";
  if (change === -1) return "gone";
  const pct = change * 100;
  return `${pct > 0 ? "+" : ""}${Math.abs(pct) >= 10 ? pct.toFixed(0) : pct.toFixed(1)}%`;
}
