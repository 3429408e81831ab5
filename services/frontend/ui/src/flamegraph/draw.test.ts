import { describe, expect, it } from "vitest";
import type { FlamegraphData } from "../api/types";
import { depthAt, drawFlamegraph, ROW_HEIGHT, rowTop, type DrawOptions } from "./draw";
import { buildLayout } from "./layout";
import { nameColors, SPECIAL } from "./palette";

interface Rect {
  x: number;
  y: number;
  w: number;
  fill: string;
}

/** The part of a 2D context the painter uses, recording rectangles and labels instead of pixels. */
function recorder() {
  const rects: Rect[] = [];
  const texts: string[] = [];
  const ctx = {
    fillStyle: "",
    font: "",
    textBaseline: "",
    setTransform: () => undefined,
    clearRect: () => undefined,
    measureText: () => ({ width: 7 }),
    fillRect(x: number, y: number, w: number) {
      rects.push({ x, y, w, fill: this.fillStyle });
    },
    fillText: (text: string) => texts.push(text),
  };
  return { ctx: ctx as unknown as CanvasRenderingContext2D, rects, texts };
}

// total(1000) → { wide(600) at 0, 300 one-tick nodes at 600.., big(100) at 900 }.
function manyNarrow(): FlamegraphData {
  const level1 = [0, 600, 600, 1];
  for (let i = 0; i < 300; i++) level1.push(0, 1, 1, 2);
  level1.push(0, 100, 100, 3);
  return { names: ["total", "wide", "tiny", "big"], levels: [[0, 1000, 0, 0], level1], total: 1000, max_self: 600 };
}

function options(layout: ReturnType<typeof buildLayout>, patch: Partial<DrawOptions> = {}): DrawOptions {
  return { width: 500, dpr: 2, theme: "light", focus: null, colors: nameColors(layout.names, "light"), matches: null, ...patch };
}

describe("drawFlamegraph", () => {
  it("merges a run of sub-pixel nodes into one grey block that covers no wide frame", () => {
    const layout = buildLayout(manyNarrow());
    const { ctx, rects } = recorder();
    drawFlamegraph(ctx, layout, options(layout));
    const row1 = rects.filter((r) => r.y === ROW_HEIGHT);
    // wide (300 px), the run of 300 half-pixel nodes (150 px), big (50 px): three rectangles, not 302.
    const colors = nameColors(layout.names, "light");
    expect(row1.map((r) => [Math.round(r.x), Math.round(r.w), r.fill])).toEqual([
      [0, 300, colors[1]],
      [300, 150, SPECIAL.light.dimmed],
      [450, 50, colors[3]],
    ]);
  });

  it("draws only the zoomed frame's span below it, and its ancestors full width and greyed", () => {
    const layout = buildLayout(manyNarrow());
    const { ctx, rects, texts } = recorder();
    drawFlamegraph(ctx, layout, options(layout, { focus: { depth: 1, index: 301 } }));
    expect(rects.map((r) => [r.y, Math.round(r.x), Math.round(r.w), r.fill])).toEqual([
      [0, 0, 500, SPECIAL.light.ancestor],
      [ROW_HEIGHT, 0, 500, nameColors(layout.names, "light")[3]],
    ]);
    expect(texts).toEqual(["total", "big"]);
  });

  it("dims frames that do not match the search", () => {
    const layout = buildLayout(manyNarrow());
    const { ctx, rects } = recorder();
    drawFlamegraph(ctx, layout, options(layout, { matches: Uint8Array.from([0, 0, 0, 1]) }));
    const fills = rects.filter((r) => r.y === ROW_HEIGHT).map((r) => r.fill);
    expect(fills).toEqual([SPECIAL.light.dimmed, SPECIAL.light.dimmed, nameColors(layout.names, "light")[3]]);
  });

  it("as a flame graph puts the root on the bottom row and its callees above", () => {
    const layout = buildLayout(manyNarrow());
    const { ctx, rects } = recorder();
    drawFlamegraph(ctx, layout, options(layout, { flame: true }));
    expect(rects[0]).toMatchObject({ y: ROW_HEIGHT, x: 0, w: 500 - 0.5 });
    expect(rects.slice(1).map((r) => r.y)).toEqual([0, 0, 0]);
    expect([rowTop(layout, 0, true), depthAt(layout, ROW_HEIGHT + 5, true), depthAt(layout, 5, true)]).toEqual([ROW_HEIGHT, 0, 1]);
    expect([rowTop(layout, 0), depthAt(layout, ROW_HEIGHT + 5)]).toEqual([0, 1]);
  });
});
