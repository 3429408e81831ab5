// The canvas flamegraph: drawn (in an animation frame) only when the data, width, zoom, search or theme
// change; hovering moves a DOM outline and tooltip over it without repainting the canvas; a click zooms,
// a right click opens the frame's menu. From the keyboard the arrows walk the frames (the picked one is
// outlined with its tooltip), Enter zooms, the menu key (or Shift+F10) opens the menu.

import { useEffect, useMemo, useRef, useState } from "react";
import { canvasHeight, depthAt, drawFlamegraph, ROW_HEIGHT, rowTop } from "../flamegraph/draw";
import { formatChange } from "../flamegraph/diff";
import { splitLineName } from "../flamegraph/lines";
import {
  binaryOf, frameAtPoint, frameFigures, frameSpan, indexRange, nameOf, parentOf, viewRange, type Frame, type Layout,
} from "../flamegraph/layout";
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
  /** Root at the bottom (a flame graph) rather than at the top (an icicle). */
  flame?: boolean;
  /** What the frame's menu offers besides zooming. */
  actions?: FrameAction[];
  /** The canvas element, for an export of the picture. */
  canvasRef?: React.RefObject<HTMLCanvasElement>;
  /** What the graph is, for screen readers ("flamegraph", "callers of main.run"). */
  title?: string;
}

/** An entry of a frame's menu. */
export interface FrameAction {
  label: string;
  run: (name: string) => void;
}

interface Menu {
  frame: Frame;
  x: number;
  y: number;
}

interface Hover {
  frame: Frame;
  /** Pointer position inside the canvas, CSS pixels. */
  x: number;
  y: number;
}

const TOOLTIP_WIDTH = 320;

export function FlameCanvas({ layout, unit, theme, focus, matches, onZoom, growth = false, flame = false, actions = [],
  canvasRef, title = "flamegraph" }: Props) {
  const wrap = useRef<HTMLDivElement>(null);
  const ownCanvas = useRef<HTMLCanvasElement>(null);
  const canvas = canvasRef ?? ownCanvas;
  const width = useWidth(wrap);
  const dpr = useDevicePixelRatio();
  const [hover, setHover] = useState<Hover | null>(null);
  const [cursor, setCursor] = useState<Frame | null>(null);
  const [menu, setMenu] = useState<Menu | null>(null);
  const colors = useMemo(() => nameColors(layout.names, theme), [layout, theme]);
  const height = canvasHeight(layout);
  const label = useMemo(() => describe(title, layout, focus, matches), [title, layout, focus, matches]);

  useEffect(() => {
    const el = canvas.current;
    if (!el || width === 0) return;
    const frame = requestAnimationFrame(() => {
      el.width = Math.round(width * dpr);
      el.height = Math.round(height * dpr);
      const ctx = el.getContext("2d");
      if (ctx) drawFlamegraph(ctx, layout, { width, dpr, theme, focus, colors, matches, growth, flame });
    });
    return () => cancelAnimationFrame(frame);
  }, [layout, width, height, dpr, theme, focus, colors, matches, growth, flame]);

  useEffect(() => {
    setHover(null);
    setCursor(null);
    setMenu(null);
  }, [layout, focus]);

  const pointAt = (e: React.MouseEvent<HTMLCanvasElement>): Hover | null => {
    const box = e.currentTarget.getBoundingClientRect();
    const x = e.clientX - box.left;
    const y = e.clientY - box.top;
    const frame = box.width > 0 ? frameAtPoint(layout, focus, x / box.width, depthAt(layout, y, flame)) : null;
    return frame ? { frame, x, y } : null;
  };
  const zoom = (frame: Frame) => onZoom(frame.depth === 0 ? null : frame);
  // The frame picked from the keyboard, shown as if hovered at its middle.
  const picked = cursor ? pickedAt(layout, focus, cursor, width, flame) : null;
  const shown = hover ?? picked;
  const onKey = (e: React.KeyboardEvent<HTMLCanvasElement>) => {
    const from = cursor ?? focus ?? { depth: 0, index: 0 };
    if (layout.levels.length === 0 || layout.levels[0].x.length === 0) return;
    const inward = flame ? "ArrowUp" : "ArrowDown";
    const outward = flame ? "ArrowDown" : "ArrowUp";
    let next: Frame | null = null;
    if (e.key === "ArrowLeft" || e.key === "ArrowRight") next = cursor ? sibling(layout, focus, from, e.key === "ArrowRight" ? 1 : -1) : from;
    else if (e.key === inward) next = cursor ? firstChild(layout, from) : from;
    else if (e.key === outward) next = cursor ? parentOf(layout, from) : from;
    else if ((e.key === "Enter" || e.key === " ") && cursor) {
      e.preventDefault();
      zoom(cursor);
      return;
    } else if ((e.key === "ContextMenu" || (e.key === "F10" && e.shiftKey)) && cursor && picked) {
      e.preventDefault();
      setMenu({ frame: cursor, x: picked.x, y: picked.y + ROW_HEIGHT });
      return;
    } else return;
    e.preventDefault();
    setHover(null);
    if (next) setCursor(next);
  };

  return (
    <div className="flame-canvas-wrap" ref={wrap}>
      <canvas ref={canvas} data-testid="flamegraph-canvas" style={{ width: "100%", height }} role="img" tabIndex={0}
        aria-label={label} data-orientation={flame ? "flame" : "icicle"}
        onMouseMove={(e) => setHover(pointAt(e))} onMouseLeave={() => setHover(null)}
        onClick={(e) => {
          const at = pointAt(e);
          if (at) zoom(at.frame);
        }}
        onContextMenu={(e) => {
          const at = pointAt(e);
          if (!at) return;
          e.preventDefault();
          setMenu({ frame: at.frame, x: at.x, y: at.y });
        }}
        onKeyDown={onKey} onBlur={() => setCursor(null)} />
      {shown && <HoverOutline layout={layout} focus={focus} frame={shown.frame} width={width} flame={flame} />}
      {shown && !menu && (
        <Tooltip layout={layout} unit={unit} focus={focus} hover={shown}
          left={shown.x + 16 + TOOLTIP_WIDTH > width ? Math.max(0, shown.x - 16 - TOOLTIP_WIDTH) : shown.x + 16} />
      )}
      {picked && <span className="visually-hidden" role="status">{nameOf(layout, picked.frame)}</span>}
      {menu && (
        <FrameMenu name={nameOf(layout, menu.frame)} x={Math.min(menu.x, Math.max(0, width - 220))} y={menu.y}
          actions={[{ label: menu.frame.depth === 0 ? "Show all" : "Zoom in", run: () => zoom(menu.frame) }, ...actions]}
          onClose={() => {
            setMenu(null);
            canvas.current?.focus();
          }} />
      )}
    </div>
  );
}

/** Where the keyboard's frame sits: the middle of its visible part, on its row. */
function pickedAt(layout: Layout, focus: Frame | null, frame: Frame, width: number, flame: boolean): Hover {
  const span = frameSpan(layout, focus, frame);
  const left = Math.max(0, span.left);
  const right = Math.min(1, span.left + span.width);
  return { frame, x: ((left + right) / 2) * width, y: rowTop(layout, frame.depth, flame) + ROW_HEIGHT / 2 };
}

/** The frame beside `frame` on its level (`step` -1 left, +1 right) among those drawn; itself at an end. */
function sibling(layout: Layout, focus: Frame | null, frame: Frame, step: number): Frame {
  if (focus && frame.depth <= focus.depth) return frame;  // the zoomed frame and its ancestors fill the row alone
  const view = viewRange(layout, focus);
  const [from, to] = indexRange(layout, frame.depth, view.start, view.start + view.width);
  const index = frame.index + step;
  return index >= from && index < to ? { depth: frame.depth, index } : frame;
}

/** The frame's first callee, or itself when it has none. */
function firstChild(layout: Layout, frame: Frame): Frame {
  const depth = frame.depth + 1;
  if (depth >= layout.levels.length) return frame;
  const { x, total } = layout.levels[frame.depth];
  const [from, to] = indexRange(layout, depth, x[frame.index], x[frame.index] + total[frame.index]);
  return from < to ? { depth, index: from } : frame;
}

function FrameMenu({ name, x, y, actions, onClose }: { name: string; x: number; y: number; actions: FrameAction[]; onClose: () => void }) {
  const first = useRef<HTMLButtonElement>(null);
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    first.current?.focus();
    const away = (e: MouseEvent) => {
      if (!box.current?.contains(e.target as Node)) onClose();
    };
    window.addEventListener("mousedown", away);
    return () => window.removeEventListener("mousedown", away);
  }, [onClose]);
  const onKey = (e: React.KeyboardEvent) => {
    const items = Array.from(box.current?.querySelectorAll<HTMLButtonElement>("button") ?? []);
    const at = items.indexOf(document.activeElement as HTMLButtonElement);
    if (e.key === "Escape") onClose();
    else if (e.key === "ArrowDown") items[(at + 1) % items.length]?.focus();
    else if (e.key === "ArrowUp") items[(at - 1 + items.length) % items.length]?.focus();
    else return;
    e.preventDefault();
    e.stopPropagation();
  };
  return (
    <div className="frame-menu" role="menu" aria-label={`actions for ${name}`} ref={box} onKeyDown={onKey}
      style={{ transform: `translate(${Math.round(x)}px, ${Math.round(y)}px)` }}>
      <div className="fn muted" title={name}>{name}</div>
      {actions.map((a, i) => (
        <button key={a.label} type="button" role="menuitem" ref={i === 0 ? first : undefined}
          onClick={() => {
            onClose();
            a.run(name);
          }}>{a.label}</button>
      ))}
    </div>
  );
}

/** What the canvas shows, for screen readers (and tests): frame count, zoom and search highlights. */
function describe(title: string, layout: Layout, focus: Frame | null, matches: Uint8Array | null): string {
  let frames = 0;
  let matched = 0;
  for (const level of layout.levels) {
    frames += level.name.length;
    if (matches) for (const n of level.name) matched += matches[n];
  }
  const zoom = focus ? `, zoomed to ${nameOf(layout, focus)}` : "";
  const search = matches ? `; ${matched} highlighted by the search, the rest dimmed` : "";
  return `${title} of ${frames} frames${zoom}${search}`;
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

function HoverOutline({ layout, focus, frame, width, flame }: {
  layout: Layout; focus: Frame | null; frame: Frame; width: number; flame: boolean;
}) {
  const span = frameSpan(layout, focus, frame);
  const left = Math.max(0, span.left * width);
  const right = Math.min(width, (span.left + span.width) * width);
  const top = rowTop(layout, frame.depth, flame);
  return <div className="flame-hover" style={{ transform: `translate(${left}px, ${top}px)`, width: Math.max(1, right - left), height: ROW_HEIGHT - 1 }} />;
}

function percent(share: number): string {
  return `${(share * 100).toFixed(2)}%`;
}

function Tooltip({ layout, unit, focus, hover, left }: { layout: Layout; unit: string; focus: Frame | null; hover: Hover; left: number }) {
  const f = frameFigures(layout, hover.frame, focus);
  const place = splitLineName(f.name);
  const binary = binaryOf(layout, hover.frame);
  const value = (v: number) => formatValue(v, unit);
  return (
    <div className="flame-tooltip" role="tooltip" data-testid="tooltip"
      style={{ transform: `translate(${Math.round(left)}px, ${Math.round(hover.y + 16)}px)`, width: TOOLTIP_WIDTH }}>
      <div className="fn">{place ? place.fn : f.name}</div>
      <table>
        <tbody>
          {place && <tr><th>Line</th><td>{place.file}:{place.line}</td></tr>}
          {binary && <tr><th>Binary</th><td className="binary" title={binary}>{binary}</td></tr>}
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
      <div className="muted hint">{hover.frame.depth === 0 ? "click to show all" : "click to zoom"} · right click for more</div>
    </div>
  );
}
