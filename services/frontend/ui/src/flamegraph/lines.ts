// Line information from a flamegraph merged at line granularity, where each frame is named
// `function file:line` (the querier's `granularity=lines`): a name split into its function and place, and
// one function's lines with their self and total.

import { topRows, type LevelLayout } from "./totals";

const PLACE = / ([^ ]+):(\d+)$/;

/** A line-granularity name's function and place (`main.go:42`); null for a name without a line. */
export function splitLineName(name: string): { fn: string; file: string; line: number } | null {
  const m = PLACE.exec(name);
  return m ? { fn: name.slice(0, m.index), file: m[1], line: Number(m[2]) } : null;
}

export interface LineRow {
  file: string;
  line: number;
  self: number;
  /** Counted once per stack, as the top table counts a function. */
  total: number;
}

/** The lines of function `fn` in a line-granularity flamegraph, by file and line number. */
export function functionLines(fg: LevelLayout, fn: string): LineRow[] {
  const rows: LineRow[] = [];
  for (const r of topRows(fg)) {
    const place = splitLineName(r.name);
    if (place && place.fn === fn) rows.push({ file: place.file, line: place.line, self: r.self, total: r.total });
  }
  return rows.sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line);
}
