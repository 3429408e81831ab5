// Totals of the matching profiles over time (query_range), drawn with uPlot on a y axis from zero: hover
// shows values, a drag selects a range to merge, a click on a point opens that single profile. Events
// (incidents) are marked on the time axis: a small button each, its tooltip saying what happened, a click
// opening it.

import { useEffect, useRef } from "react";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { quoteLabelValue } from "../api/client";
import type { Series } from "../api/types";
import { formatValue } from "../flamegraph/profileTypes";

interface Props {
  series: Series[];
  unit: string;
  fromMs: number;
  untilMs: number;
  selection: [number, number] | null;
  onSelect: (fromMs: number, untilMs: number) => void;
  /** A click on a point; without it a click does nothing. */
  onPoint?: (ms: number) => void;
  theme: "light" | "dark";
  markers?: TimelineMarker[];
  onMarker?: (id: string) => void;
}

/** An event on the time axis. */
export interface TimelineMarker {
  id: string;
  ms: number;
  kind: string;
  /** Its tooltip and accessible name: what happened to which program, when. */
  label: string;
}

const COLORS = ["#e8743b", "#3b8ee8", "#19a979", "#945ecf", "#ed4a7b", "#13a4b4", "#bf399e", "#6c8893"];

/** How many series get a colour of their own; the next ones repeat them. */
export const COLOR_COUNT = COLORS.length;

export function seriesColor(i: number): string {
  return COLORS[i % COLORS.length];
}

/** The y scale from zero to a little above the largest point: totals are amounts, and an axis fitted
 * to the data would make a steady program's small wiggles look like swings. */
export function zeroBasedRange(_u: uPlot, _min: number | null, max: number | null): uPlot.Range.MinMax {
  return uPlot.rangeNum(0, max ?? 0, 0.1, true);
}

/** Series on one shared x axis (seconds, as uPlot wants), gaps where a series has no point. */
export function alignSeries(series: Series[]): uPlot.AlignedData {
  const xs = Array.from(new Set(series.flatMap((s) => s.points.map((p) => p[0])))).sort((a, b) => a - b);
  const index = new Map(xs.map((x, i) => [x, i]));
  const columns = series.map((s) => {
    const col: (number | null)[] = new Array(xs.length).fill(null);
    for (const [t, v] of s.points) col[index.get(t)!] = v;
    return col;
  });
  return [xs.map((x) => x / 1000), ...columns] as uPlot.AlignedData;
}

export function seriesName(labels: Record<string, string>): string {
  const entries = Object.entries(labels);
  return entries.length === 0 ? "total" : entries.map(([k, v]) => `${k}=${quoteLabelValue(v)}`).join(", ");
}

export function Timeline({ series, unit, fromMs, untilMs, selection, onSelect, onPoint, theme, markers = [], onMarker }: Props) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const handlers = useRef({ onSelect, onPoint });
  handlers.current = { onSelect, onPoint };
  const marks = useRef<HTMLDivElement>(null);

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const data = alignSeries(series);
    const dark = theme === "dark";
    const axis = { stroke: dark ? "#bbb" : "#555", grid: { stroke: dark ? "#333" : "#eee" }, ticks: { stroke: dark ? "#444" : "#ddd" } };
    const opts: uPlot.Options = {
      width: el.clientWidth,
      height: 180,
      scales: { x: { time: true, range: () => [fromMs / 1000, untilMs / 1000] }, y: { range: zeroBasedRange } },
      series: [
        {},
        ...series.map((s, i) => ({
          label: seriesName(s.labels),
          stroke: seriesColor(i),
          fill: series.length === 1 ? `${COLORS[0]}33` : undefined,
          width: 1.5,
          points: { show: true, size: 5 },
          value: (_u: uPlot, v: number | null) => (v === null ? "–" : formatValue(v, unit)),
        })),
      ],
      axes: [axis, { ...axis, size: 70, values: (_u, vals) => vals.map((v) => formatValue(v, unit)) }],
      cursor: { drag: { x: true, y: false, setScale: false } },
      legend: { live: true },
      hooks: {
        // The y scale as drawn, for readers of the page (the axis labels are pixels on a canvas).
        setScale: [(u, key) => {
          if (key !== "y") return;
          el.dataset.yMin = String(u.scales.y.min);
          el.dataset.yMax = String(u.scales.y.max);
        }],
        setSelect: [(u) => {
          if (u.select.width < 3) return;
          const lo = u.posToVal(u.select.left, "x") * 1000;
          const hi = u.posToVal(u.select.left + u.select.width, "x") * 1000;
          u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
          handlers.current.onSelect(Math.round(lo), Math.round(hi));
        }],
      },
    };
    const u = new uPlot(opts, data, el);
    plot.current = u;
    // A click without a drag opens the profile nearest the cursor.
    const over = u.over;
    let downX = 0;
    const down = (e: MouseEvent) => { downX = e.clientX; };
    const up = (e: MouseEvent) => {
      const idx = u.cursor.idx;
      if (Math.abs(e.clientX - downX) < 3 && idx !== null && idx !== undefined) {
        handlers.current.onPoint?.(Math.round((u.data[0][idx] as number) * 1000));
      }
    };
    over.addEventListener("mousedown", down);
    over.addEventListener("mouseup", up);
    const resize = new ResizeObserver(() => {
      u.setSize({ width: el.clientWidth, height: 180 });
      placeMarkers(u, box.current, marks.current);
    });
    resize.observe(el);
    return () => {
      resize.disconnect();
      u.destroy();
      plot.current = null;
    };
  }, [series, unit, fromMs, untilMs, theme]);

  // The merged sub-range shown as a band.
  useEffect(() => {
    const u = plot.current;
    if (!u) return;
    const band = box.current?.querySelector<HTMLDivElement>(".selection-band");
    if (!band) return;
    if (!selection) {
      band.style.display = "none";
      return;
    }
    const left = u.valToPos(selection[0] / 1000, "x");
    const right = u.valToPos(selection[1] / 1000, "x");
    const over = u.over.getBoundingClientRect();
    const outer = box.current!.getBoundingClientRect();
    band.style.display = "block";
    band.style.left = `${over.left - outer.left + Math.max(0, left)}px`;
    band.style.width = `${Math.max(2, Math.min(over.width, right) - Math.max(0, left))}px`;
    band.style.top = `${over.top - outer.top}px`;
    band.style.height = `${over.height}px`;
  });

  useEffect(() => placeMarkers(plot.current, box.current, marks.current));

  return (
    <div className="timeline" data-testid="timeline" data-points={series.reduce((n, s) => n + s.points.length, 0)}>
      <div ref={box} className="timeline-plot">
        <div className="selection-band" />
        <div ref={marks} className="timeline-markers" aria-label="incidents on the timeline">
          {markers.map((m) => (
            <button key={m.id} type="button" className={`timeline-marker kind-${m.kind}`} data-ms={m.ms} title={m.label}
              aria-label={m.label} onClick={() => onMarker?.(m.id)}>▼</button>
          ))}
        </div>
      </div>
    </div>
  );
}

/** Puts each marker button over its time on the plot's x axis, and hides those outside the range. */
function placeMarkers(u: uPlot | null, outer: HTMLDivElement | null, layer: HTMLDivElement | null): void {
  if (!u || !outer || !layer) return;
  const over = u.over.getBoundingClientRect();
  const box = outer.getBoundingClientRect();
  for (const button of Array.from(layer.children) as HTMLElement[]) {
    const x = u.valToPos(Number(button.dataset.ms) / 1000, "x");
    const inside = Number.isFinite(x) && x >= 0 && x <= over.width;
    button.style.display = inside ? "block" : "none";
    button.style.left = `${over.left - box.left + x}px`;
    button.style.top = `${over.top - box.top}px`;
    button.style.height = `${over.height}px`;
  }
}
