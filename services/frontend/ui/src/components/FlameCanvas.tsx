// The canvas flamegraph: drawn (in an animation frame) only when the data, width, zoom, search or theme
// change; hovering moves a DOM outline and tooltip over it without repainting the canvas; a click zooms.

import { useEffect, useMemo, useRef, useState } from "react";
import { canvasHeight, drawFlamegraph, ROW_HEIGHT } from "../flamegraph/draw";
import { formatChange } from "../flamegraph/diff";
import { frameAtPoint, frameFigures, frameSpan, nameOf, type Frame, type Layout } from "../flamegraph/layout";
import { nameColors, type Theme } from "../flamegraph/palette";
import { formatValue } from "../flamegraph/profileTypes";

interface Props {
  layout: Layout;
  unit: string;
  theme: Theme;
  /** A diff coloured by the change of each frame's value, not of its share. */
  growth?: boolean;
  focus: Frame | null;
  matches: Uint8Array | null;
  onZoom: (frame: Frame | null) => void;
}

interface Hover {
  frame: Frame;
  /** Pointer position inside the canvas, CSS pixels. */
  x: number;
  y: number;
}

const TOOLTIP_WIDTH = 320;

export function FlameCanvas({ layout, unit, theme, focus, matches, onZoom, growth = false }: Props) {
  const wrap = useRef<HTMLDivElement>(null);
  const canvas = useRef<HTMLCanvasElement>(null);
  const width = useWidth(wrap);
  const dpr = useDevicePixelRatio();
  const [hover, setHover] = useState<Hover | null>(null);
  const colors = useMemo(() => nameColors(layout.names, theme), [layout, theme]);
  const height = canvasHeight(layout);
  const label = useMemo(() => describe(layout, focus, matches), [layout, focus, matches]);

  useEffect(() => {
    const el = canvas.current;
    if (!el || width === 0) return;
    const frame = requestAnimationFrame(() => {
      el.width = Math.round(width * dpr);
      el.height = Math.round(height * dpr);
      const ctx = el.getContext("2d");
      if (ctx) drawFlamegraph(ctx, layout, { width, dpr, theme, focus, colors, matches, growth });
    });
    return () => cancelAnimationFrame(frame);
  }, [layout, width, height, dpr, theme, focus, colors, matches, growth]);

  useEffect(() => setHover(null), [layout, focus]);

  const pointAt = (e: React.MouseEvent<HTMLCanvasElement>): Hover | null => {
    const box = e.currentTarget.getBoundingClientRect();
    const x = e.clientX - box.left;
    const y = e.clientY - box.top;
    const frame = box.width > 0 ? frameAtPoint(layout, focus, x / box.width, Math.floor(y / ROW_HEIGHT)) : null;
    return frame ? { frame, x, y } : null;
  };

  return (
    <div className="flame-canvas-wrap" ref={wrap}>
      <canvas ref={canvas} data-testid="flamegraph-canvas" style={{ width: "100%", height }} role="img"
        aria-label={label}
        onMouseMove={(e) => setHover(pointAt(e))} onMouseLeave={() => setHover(null)}
        onClick={(e) => {
          const at = pointAt(e);
          if (at) onZoom(at.frame.depth === 0 ? null : at.frame);
        }} />
      {hover && <HoverOutline layout={layout} focus={focus} frame={hover.frame} width={width} />}
      {hover && (
        <Tooltip layout={layout} unit={unit} focus={focus} hover={hover}
          left={hover.x + 16 + TOOLTIP_WIDTH > width ? Math.max(0, hover.x - 16 - TOOLTIP_WIDTH) : hover.x + 16} />
      )}
    </div>
  );
}

/** What the canvas shows, for screen readers (and tests): frame count, zoom and search highlights. */
function describe(layout: Layout, focus: Frame | null, matches: Uint8Array | null): string {
  let frames = 0;
  let matched = 0;
  for (const level of layout.levels) {
    frames += level.name.length;
    if (matches) for (const n of level.name) matched += matches[n];
  }
  const zoom = focus ? `, zoomed to ${nameOf(layout, focus)}` : "";
  const search = matches ? `; ${matched} highlighted by the search, the rest dimmed` : "";
  return `flamegraph of ${frames} frames${zoom}${search}`;
}

/** The device pixel ratio, followed as it changes (browser zoom, a window moved to another screen). */
function useDevicePixelRatio(): number {
  const [dpr, setDpr] = useState(() => window.devicePixelRatio || 1);
  useEffect(() => {
    const query = window.matchMedia(`(resolution: ${dpr}dppx)`);
    const onChange = () => setDpr(window.devicePixelRatio || 1);
    query.addEventListener("change", onChange);
    return () => query.removeEventListener("change", onChange);
  }, [dpr]);
  return dpr;
}

function useWidth(ref: React.RefObject<HTMLElement | null>): number {
  const [width, setWidth] = useState(0);
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    setWidth(el.clientWidth);
    const observer = new ResizeObserver(() => setWidth(el.clientWidth));
    observer.observe(el);
    return () => observer.disconnect();
  }, [ref]);
  return width;
}

function HoverOutline({ layout, focus, frame, width }: { layout: Layout; focus: Frame | null; frame: Frame; width: number }) {
  const span = frameSpan(layout, focus, frame);
  const left = Math.max(0, span.left * width);
  const right = Math.min(width, (span.left + span.width) * width);
  return <div className="flame-hover" style={{ transform: `translate(${left}px, ${frame.depth * ROW_HEIGHT}px)`, width: Math.max(1, right - left), height: ROW_HEIGHT - 1 }} />;
}

function percent(share: number): string {
  return `${(share * 100).toFixed(2)}%`;
}

function Tooltip({ layout, unit, focus, hover, left }: { layout: Layout; unit: string; focus: Frame | null; hover: Hover; left: number }) {
  const f = frameFigures(layout, hover.frame, focus);
  const value = (v: number) => formatValue(v, unit);
  return (
    <div className="flame-tooltip" role="tooltip" data-testid="tooltip"
      style={{ transform: `translate(${Math.round(left)}px, ${Math.round(hover.y + 16)}px)`, width: TOOLTIP_WIDTH }}>
      <div className="fn">{f.name}</div>
      <table>
        <tbody>
          {f.diff ? (
            <>
              <tr><th>Left</th><td>{value(f.diff.left)}</td></tr>
              <tr><th>Right</th><td>{value(f.diff.right)}</td></tr>
              <tr><th>Delta</th><td>{f.diff.delta > 0 ? "+" : ""}{value(f.diff.delta)}</td></tr>
              <tr><th>Change</th><td>{formatChange(f.diff.change)} <span className="muted">of its share</span></td></tr>
            </>
          ) : (
            <>
              <tr><th>Self</th><td>{value(f.self)} <span className="muted">{percent(layout.total > 0 ? f.self / layout.total : 0)}</span></td></tr>
              <tr><th>Total</th><td>{value(f.total)} <span className="muted">{percent(f.share)}</span></td></tr>
              <tr>
                <th>Share</th>
                <td>
                  {percent(f.share)} of all
                  {f.shareOfFocus !== null && focus && <>, {percent(f.shareOfFocus)} of {nameOf(layout, focus)}</>}
                </td>
              </tr>
            </>
          )}
        </tbody>
      </table>
      <div className="muted hint">{hover.frame.depth === 0 ? "click to show all" : "click to zoom"}</div>
    </div>
  );
}
