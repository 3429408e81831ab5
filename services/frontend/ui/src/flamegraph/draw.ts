// Paints a laid-out flamegraph on a 2D canvas: one row per level, only the nodes inside the view (found
// by binary search), runs of nodes narrower than a pixel merged into one grey block, labels cut to fit.

import { ancestry, frameChange, indexRange, nameOf, viewRange, type Frame, type Layout } from "./layout";
import { diffFrameColor, OTHER_NAME, SPECIAL, type Theme } from "./palette";

export const ROW_HEIGHT = 20;
export const FONT = '12px ui-monospace, Menlo, "DejaVu Sans Mono", monospace';
const MIN_FRAME_PX = 1; // narrower nodes are merged with their narrow neighbours
const LABEL_MIN_PX = 22; // no label in a frame narrower than this
const PAD = 4;

export interface DrawOptions {
  /** CSS pixels. */
  width: number;
  dpr: number;
  theme: Theme;
  focus: Frame | null;
  /** Per name index: its colour (nameColors in palette.ts); unused for a diff. */
  colors: string[];
  /** Per name index, 1 when it matches the search; null when there is no search. */
  matches: Uint8Array | null;
  /** A diff coloured by the change of each frame's value rather than of its share (layout.frameChange). */
  growth?: boolean;
  /** Root at the bottom, callees above their callers (a flame graph); at the top otherwise (an icicle). */
  flame?: boolean;
}

export function canvasHeight(layout: Layout): number {
  return layout.levels.length * ROW_HEIGHT;
}

/** The top of a level's row, in CSS pixels. */
export function rowTop(layout: Layout, depth: number, flame = false): number {
  return (flame ? layout.levels.length - 1 - depth : depth) * ROW_HEIGHT;
}

/** The level drawn at `y` CSS pixels from the top (maybe outside the levels). */
export function depthAt(layout: Layout, y: number, flame = false): number {
  const row = Math.floor(y / ROW_HEIGHT);
  return flame ? layout.levels.length - 1 - row : row;
}

export function drawFlamegraph(ctx: CanvasRenderingContext2D, layout: Layout, o: DrawOptions): void {
  ctx.setTransform(o.dpr, 0, 0, o.dpr, 0, 0);
  ctx.clearRect(0, 0, o.width, canvasHeight(layout));
  ctx.font = FONT;
  ctx.textBaseline = "middle";
  const charWidth = ctx.measureText("M").width;
  const painter: Painter = { ctx, layout, o, charWidth };
  const chain = o.focus ? ancestry(layout, o.focus) : [];
  for (const frame of chain.slice(0, -1)) {
    paintFrame(painter, frame, 0, o.width, SPECIAL[o.theme].ancestor, SPECIAL[o.theme].text);
  }
  const view = viewRange(layout, o.focus);
  if (view.width <= 0) return;
  for (let depth = o.focus?.depth ?? 0; depth < layout.levels.length; depth++) paintLevel(painter, depth, view);
}

interface Painter {
  ctx: CanvasRenderingContext2D;
  layout: Layout;
  o: DrawOptions;
  charWidth: number;
}

function paintLevel(p: Painter, depth: number, view: { start: number; width: number }): void {
  const { x, total } = p.layout.levels[depth];
  const scale = p.o.width / view.width;
  const [from, to] = indexRange(p.layout, depth, view.start, view.start + view.width);
  let runStart = -1;
  let runEnd = -1;
  const flushRun = () => {
    if (runStart >= 0 && runEnd - runStart >= MIN_FRAME_PX) fillRow(p, depth, runStart, runEnd - runStart, SPECIAL[p.o.theme].dimmed);
    runStart = -1;
    runEnd = -1;
  };
  for (let i = from; i < to; i++) {
    const left = (x[i] - view.start) * scale;
    const width = total[i] * scale;
    if (width < MIN_FRAME_PX) {
      if (runStart < 0 || left - runEnd > 0.5) {
        flushRun();
        runStart = left;
      }
      runEnd = left + width;
      continue;
    }
    flushRun();
    const [fill, text] = frameColors(p, { depth, index: i });
    paintFrame(p, { depth, index: i }, left, width, fill, text);
  }
  flushRun();
}

function frameColors(p: Painter, frame: Frame): [string, string] {
  const special = SPECIAL[p.o.theme];
  const nameIndex = p.layout.levels[frame.depth].name[frame.index];
  if (p.o.matches && !p.o.matches[nameIndex]) return [special.dimmed, special.dimmedText];
  if (!p.layout.diff) return [p.o.colors[nameIndex], special.text];
  // diff.ts's scale is mid-toned in either theme: dark text reads on it in both ("other" keeps the theme's).
  const name = p.layout.names[nameIndex];
  return [diffFrameColor(name, frameChange(p.layout, frame, p.o.growth), p.o.theme), name === OTHER_NAME ? special.text : SPECIAL.light.text];
}

function fillRow(p: Painter, depth: number, left: number, width: number, fill: string): void {
  p.ctx.fillStyle = fill;
  // A hairline gap between neighbours and rows, once a frame is wide enough to spare it.
  p.ctx.fillRect(left, rowTop(p.layout, depth, p.o.flame), width > 3 ? width - 0.5 : width, ROW_HEIGHT - 1);
}

function paintFrame(p: Painter, frame: Frame, left: number, width: number, fill: string, text: string): void {
  const clippedLeft = Math.max(0, left);
  const clippedWidth = Math.min(p.o.width, left + width) - clippedLeft;
  fillRow(p, frame.depth, clippedLeft, clippedWidth, fill);
  if (clippedWidth < LABEL_MIN_PX) return;
  const label = fitLabel(nameOf(p.layout, frame), clippedWidth - 2 * PAD, p.charWidth);
  if (label === "") return;
  p.ctx.fillStyle = text;
  p.ctx.fillText(label, clippedLeft + PAD, rowTop(p.layout, frame.depth, p.o.flame) + ROW_HEIGHT / 2);
}

/**
 * The name cut to `room` pixels of a monospace font. The end of a name says most (the function after its
 * package path), so the start gives way, marked with an ellipsis; "" when fewer than three characters fit.
 */
export function fitLabel(name: string, room: number, charWidth: number): string {
  const fits = Math.floor(room / charWidth);
  if (fits >= name.length) return name;
  if (fits < 3) return "";
  return "…" + name.slice(name.length - (fits - 1));
}
