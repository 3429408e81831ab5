// Per-function figures from a flamegraph's levels: self summed over every frame of the function, total
// counted once per stack (a recursive function's inner frames add nothing, so no total exceeds the whole).

export interface LevelLayout {
  names: string[];
  levels: number[][];
}

/** Numbers per node (4 single, 7 diff), and where this side's x_delta sits in them (0; right side 3). */
export interface Side {
  step: number;
  offset: number;
}

export const SINGLE: Side = { step: 4, offset: 0 };

/** [self, total] per name index. The root (level 0) is left out: it is the whole, not a function. */
export function functionTotals(fg: LevelLayout, side: Side = SINGLE): [Float64Array, Float64Array] {
  const self = new Float64Array(fg.names.length);
  const total = new Float64Array(fg.names.length);
  const nameAt = side.step - 1;
  // Spans [x, x + total) already counted per name: a namesake that starts inside one is nested in it.
  const counted = new Map<number, [number, number][]>();
  fg.levels.forEach((level, depth) => {
    let x = 0;
    for (let i = 0; i < level.length; i += side.step) {
      x += level[i + side.offset];
      const width = level[i + side.offset + 1];
      const name = level[i + nameAt];
      if (depth > 0 && width > 0) {
        self[name] += level[i + side.offset + 2];
        const spans = counted.get(name) ?? [];
        if (!spans.some(([lo, hi]) => x >= lo && x < hi)) {
          spans.push([x, x + width]);
          counted.set(name, spans);
          total[name] += width;
        }
      }
      x += width;
    }
  });
  return [self, total];
}

export interface TopRow {
  name: string;
  self: number;
  total: number;
}

/** One row per function that has frames, heaviest self first (then total, then name). */
export function topRows(fg: LevelLayout): TopRow[] {
  const [self, total] = functionTotals(fg);
  const rows: TopRow[] = [];
  for (let i = 0; i < fg.names.length; i++) {
    if (total[i] > 0 || self[i] > 0) rows.push({ name: fg.names[i], self: self[i], total: total[i] });
  }
  return rows.sort((a, b) => b.self - a.self || b.total - a.total || a.name.localeCompare(b.name));
}
