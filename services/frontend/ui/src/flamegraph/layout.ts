// The flamegraph's geometry, with no DOM: the API's delta-encoded levels decoded once into per-level
// arrays of absolute x (ascending, spans never overlap within a level), so the frame under a point is a
// binary search on its level, and a frame's parent is the frame of the level above that holds its start.
// Zoom is a frame: its span fills the width and its ancestors sit above it.

import type { DiffData, FlamegraphData } from "../api/types";
import { relativeChange } from "./diff";

/** One side's figures of a diff node. */
export interface SideValues {
  total: Float64Array;
  self: Float64Array;
}

export interface Level {
  /** Start of each node in ticks (a diff's: left start + right start). */
  x: Float64Array;
  /** Width of each node in ticks (a diff's: left total + right total). */
  total: Float64Array;
  self: Float64Array;
  /** Index into `Layout.names`. */
  name: Int32Array;
  left?: SideValues;
  right?: SideValues;
}

export interface Layout {
  names: string[];
  levels: Level[];
  /** The root's width: the whole. */
  total: number;
  diff: { leftTicks: number; rightTicks: number } | null;
  /** Per name, where it was executed from, when the answer says. */
  binaries?: string[];
}

/** A node: its level and its position in the level. */
export interface Frame {
  depth: number;
  index: number;
}

/** Decodes the API's levels: 4 numbers a node for a single flamegraph, 7 for a diff. */
export function buildLayout(fg: FlamegraphData | DiffData, step: 4 | 7 = 4): Layout {
  const levels = fg.levels.map((row) => (step === 7 ? decodeDiffLevel(row) : decodeLevel(row)));
  const diff = step === 7 ? { leftTicks: (fg as DiffData).left_ticks, rightTicks: (fg as DiffData).right_ticks } : null;
  const total = levels.length > 0 && levels[0].total.length > 0 ? levels[0].total[0] : fg.total;
  return { names: fg.names, levels, total, diff, binaries: fg.binaries };
}

function emptyLevel(n: number): Level {
  return { x: new Float64Array(n), total: new Float64Array(n), self: new Float64Array(n), name: new Int32Array(n) };
}

function decodeLevel(row: number[]): Level {
  const level = emptyLevel(row.length / 4);
  let x = 0;
  for (let i = 0, j = 0; i < row.length; i += 4, j++) {
    x += row[i];
    level.x[j] = x;
    level.total[j] = row[i + 1];
    level.self[j] = row[i + 2];
    level.name[j] = row[i + 3];
    x += row[i + 1];
  }
  return level;
}

// Each side is laid out on its own and both list the same nodes in the same order, so the sum of the two
// starts is a layout of the summed widths.
function decodeDiffLevel(row: number[]): Level {
  const n = row.length / 7;
  const level = emptyLevel(n);
  const left = { total: new Float64Array(n), self: new Float64Array(n) };
  const right = { total: new Float64Array(n), self: new Float64Array(n) };
  let xl = 0;
  let xr = 0;
  for (let i = 0, j = 0; i < row.length; i += 7, j++) {
    xl += row[i];
    xr += row[i + 3];
    level.x[j] = xl + xr;
    left.total[j] = row[i + 1];
    left.self[j] = row[i + 2];
    right.total[j] = row[i + 4];
    right.self[j] = row[i + 5];
    level.total[j] = row[i + 1] + row[i + 4];
    level.self[j] = row[i + 2] + row[i + 5];
    level.name[j] = row[i + 6];
    xl += row[i + 1];
    xr += row[i + 4];
  }
  return { ...level, left, right };
}

/** Index of the first node starting after `tick` (or at it, with `orAt`); x.length when none does. */
function firstStartingAfter(x: Float64Array, tick: number, orAt = false): number {
  let lo = 0;
  let hi = x.length; // invariant: nodes before lo start before the bound, nodes from hi on after it
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (x[mid] < tick || (!orAt && x[mid] === tick)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Index of the last node starting at or before `tick`, or -1. */
function lastStartingBefore(x: Float64Array, tick: number): number {
  return firstStartingAfter(x, tick) - 1;
}

/** The node of level `depth` whose span holds `tick`, or -1. O(log n). */
export function indexAt(layout: Layout, depth: number, tick: number): number {
  const level = layout.levels[depth];
  if (!level) return -1;
  const i = lastStartingBefore(level.x, tick);
  return i >= 0 && tick < level.x[i] + level.total[i] ? i : -1;
}

/** Nodes [from, to) of level `depth` that overlap [start, end). */
export function indexRange(layout: Layout, depth: number, start: number, end: number): [number, number] {
  const { x, total } = layout.levels[depth];
  let from = Math.max(0, lastStartingBefore(x, start));
  if (from < x.length && x[from] + total[from] <= start) from++;
  const to = firstStartingAfter(x, end, true);
  return [from, Math.max(from, to)];
}

export function parentOf(layout: Layout, frame: Frame): Frame | null {
  if (frame.depth === 0) return null;
  const index = indexAt(layout, frame.depth - 1, layout.levels[frame.depth].x[frame.index]);
  return index < 0 ? null : { depth: frame.depth - 1, index };
}

/** The root, then each ancestor, then the frame itself. */
export function ancestry(layout: Layout, frame: Frame): Frame[] {
  const chain: Frame[] = [frame];
  for (let f = parentOf(layout, frame); f; f = parentOf(layout, f)) chain.push(f);
  return chain.reverse();
}

export function nameOf(layout: Layout, frame: Frame): string {
  return layout.names[layout.levels[frame.depth].name[frame.index]];
}

/** The file the frame's function was executed from, "" when the answer does not say. */
export function binaryOf(layout: Layout, frame: Frame): string {
  return layout.binaries?.[layout.levels[frame.depth].name[frame.index]] ?? "";
}

/** The names from below the root down to the frame: what the URL keeps to find it again. */
export function pathOf(layout: Layout, frame: Frame): string[] {
  return ancestry(layout, frame).slice(1).map((f) => nameOf(layout, f));
}

/** The frame a path of names leads to from the root; null when a step is missing (another selection). */
export function findPath(layout: Layout, path: string[]): Frame | null {
  if (layout.levels.length === 0 || layout.levels[0].x.length === 0) return null;
  let frame: Frame = { depth: 0, index: 0 };
  for (const name of path) {
    const child = childNamed(layout, frame, name);
    if (!child) return null;
    frame = child;
  }
  return frame;
}

/**
 * The frame a focus leads to: its path from the root, or, for a focus of one name that is no child of the
 * root (a function picked in What changed), that function's widest frame.
 */
export function findFocus(layout: Layout, path: string[]): Frame | null {
  if (path.length === 0) return null;
  return findPath(layout, path) ?? (path.length === 1 ? widestNamed(layout, path[0]) : null);
}

/** The widest frame of a function: the outermost call where it recurses, the heaviest caller's otherwise. */
export function widestNamed(layout: Layout, name: string): Frame | null {
  const index = layout.names.indexOf(name);
  if (index < 0) return null;
  let best: Frame | null = null;
  let width = -1;
  layout.levels.forEach((level, depth) => {
    for (let i = 0; i < level.name.length; i++) {
      if (level.name[i] === index && level.total[i] > width) {
        width = level.total[i];
        best = { depth, index: i };
      }
    }
  });
  return best;
}

function childNamed(layout: Layout, parent: Frame, name: string): Frame | null {
  const depth = parent.depth + 1;
  if (depth >= layout.levels.length) return null;
  const { x, total } = layout.levels[parent.depth];
  const [from, to] = indexRange(layout, depth, x[parent.index], x[parent.index] + total[parent.index]);
  for (let i = from; i < to; i++) {
    if (nameOf(layout, { depth, index: i }) === name) return { depth, index: i };
  }
  return null;
}

/** The ticks shown across the width: the zoomed frame's span, or the whole. */
export interface ViewRange {
  start: number;
  width: number;
}

export function viewRange(layout: Layout, focus: Frame | null): ViewRange {
  if (!focus) return { start: 0, width: layout.total };
  const level = layout.levels[focus.depth];
  return { start: level.x[focus.index], width: level.total[focus.index] };
}

/**
 * The frame at a point: `fraction` of the width across (0 to 1) on row `depth`. Above the zoomed frame
 * each row is one ancestor drawn full width.
 */
export function frameAtPoint(layout: Layout, focus: Frame | null, fraction: number, depth: number): Frame | null {
  if (depth < 0 || depth >= layout.levels.length || fraction < 0 || fraction >= 1) return null;
  if (focus && depth < focus.depth) return ancestry(layout, focus)[depth];
  const view = viewRange(layout, focus);
  const index = indexAt(layout, depth, view.start + fraction * view.width);
  return index < 0 ? null : { depth, index };
}

/** Where a frame is drawn, as fractions of the width; ancestors of the zoomed frame span it all. */
export function frameSpan(layout: Layout, focus: Frame | null, frame: Frame): { left: number; width: number } {
  if (focus && frame.depth < focus.depth) return { left: 0, width: 1 };
  const view = viewRange(layout, focus);
  const level = layout.levels[frame.depth];
  return { left: (level.x[frame.index] - view.start) / view.width, width: level.total[frame.index] / view.width };
}

export interface DiffFigures {
  left: number;
  right: number;
  delta: number;
  /** Change of the frame's share of its side's total (see diff.ts). */
  change: number;
}

/** What the tooltip says about a frame. */
export interface FrameFigures {
  name: string;
  self: number;
  total: number;
  /** Of the whole. */
  share: number;
  /** Of the zoomed frame, when zoomed and the frame is inside it. */
  shareOfFocus: number | null;
  diff: DiffFigures | null;
}

export function frameFigures(layout: Layout, frame: Frame, focus: Frame | null): FrameFigures {
  const level = layout.levels[frame.depth];
  const total = level.total[frame.index];
  const focusTotal = focus ? layout.levels[focus.depth].total[focus.index] : 0;
  return {
    name: nameOf(layout, frame),
    self: level.self[frame.index],
    total,
    share: layout.total > 0 ? total / layout.total : 0,
    shareOfFocus: focus && frame.depth >= focus.depth && focusTotal > 0 ? total / focusTotal : null,
    diff: layout.diff && level.left && level.right ? diffFigures(layout.diff, level.left.total[frame.index], level.right.total[frame.index]) : null,
  };
}

function diffFigures(ticks: { leftTicks: number; rightTicks: number }, left: number, right: number): DiffFigures {
  return { left, right, delta: right - left, change: relativeChange(left, ticks.leftTicks, right, ticks.rightTicks) };
}

/** A diff frame's relative change, which colours it (0 in a single flamegraph): of its share of its side's
 * total, or with `growth` of its value itself (a heap that grew: the leak is red even though its share of
 * the whole barely moved). */
export function frameChange(layout: Layout, frame: Frame, growth = false): number {
  const level = layout.levels[frame.depth];
  if (!layout.diff || !level.left || !level.right) return 0;
  const [leftTicks, rightTicks] = growth ? [1, 1] : [layout.diff.leftTicks, layout.diff.rightTicks];
  return relativeChange(level.left.total[frame.index], leftTicks, level.right.total[frame.index], rightTicks);
}

/** Per name index, whether the name contains the query (case-insensitive); null for no query. */
export function matchingNames(names: string[], query: string): Uint8Array | null {
  const needle = query.trim().toLowerCase();
  if (needle === "") return null;
  return Uint8Array.from(names, (n) => (n.toLowerCase().includes(needle) ? 1 : 0));
}
