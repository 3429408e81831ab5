// One selection: the timeline of its totals, with the incidents (regressions too) of the range that match
// the selector marked on it, and the flamegraph of the range (or the dragged part of it, or the one profile clicked).

import { useCallback, useMemo, useState } from "react";
import { api, queryText, type TimeRange } from "../api/client";
import type { ProfileType } from "../api/types";
import { formatValue } from "../flamegraph/profileTypes";
import { comparedLabel, regressionDetails } from "../state/changes";
import { kindName, programName } from "../state/events";
import { nsToMs } from "../state/evidence";
import { compareSides } from "../state/compare";
import type { UiState } from "../state/url";
import { describeRange, formatLocal, resolveTime } from "../state/time";
import { FlamegraphView, MaxNodesControl, type FlameOptions } from "./FlamegraphView";
import { FunctionDetails } from "./FunctionDetails";
import { Empty, ErrorBox, Spinner } from "./Status";
import { Timeline, type TimelineMarker } from "./Timeline";
import { useApi } from "./useApi";

interface Props {
  state: UiState;
  type: ProfileType;
  labelNames: string[];
  tick: number;
  theme: "light" | "dark";
  update: (patch: Partial<UiState>) => void;
}

export function ExplorePage({ state, type, labelNames, tick, theme, update }: Props) {
  const query = queryText(type.id, state.selector);
  const range: TimeRange = { from: state.from, until: state.until };
  const merged: TimeRange = state.selFrom && state.selUntil ? { from: state.selFrom, until: state.selUntil } : range;
  const time = state.time ? Number(state.time) : undefined;
  const now = useMemo(() => Date.now(), [tick, state.from, state.until]);

  const totals = useApi((s) => api.queryRange(query, range, state.groupBy, s),
    `${query}|${range.from}|${range.until}|${state.groupBy}|${tick}`);
  const lines = state.lines === "1" ? "lines" : undefined;
  const flame = useApi((s) => api.flamegraph(query, merged, state.maxNodes, time, s, lines),
    `${query}|${merged.from}|${merged.until}|${state.time}|${state.maxNodes}|${lines}|${tick}`);
  const markers = useIncidentMarkers(range, state.selector, tick);
  const onSearch = useCallback((search: string) => update({ search }), [update]);
  const onFocus = useCallback((focus: string) => update({ focus }), [update]);
  const onOptions = useCallback((patch: Partial<FlameOptions>) => update(patch), [update]);
  const options: FlameOptions = { orientation: state.orientation, invert: state.invert, panes: state.panes,
    sandwich: state.sandwich, lines: state.lines, details: state.details };
  const [downloadError, setDownloadError] = useState<string | null>(null);
  // Fetched rather than followed, so the download reads the picked tenant too (a link sends no header).
  const download = (e: React.MouseEvent) => {
    e.preventDefault();
    setDownloadError(null);
    api.downloadPprof(query, merged, time, `${type.name}.pb.gz`).catch((err: Error) => setDownloadError(err.message));
  };

  const hasPoints = totals.data?.series.some((s) => s.points.length > 0) ?? false;
  const what = time !== undefined
    ? `the profile nearest ${formatLocal(time)}`
    : state.selFrom ? `selection ${describeRange(state.selFrom, state.selUntil, now)}` : describeRange(state.from, state.until, now);

  return (
    <>
      <section className="panel" aria-label="timeline">
        <div className="panel-head">
          <h2>Totals over time</h2>
          <label>
            Group by{" "}
            <select aria-label="group by" value={state.groupBy} onChange={(e) => update({ groupBy: e.target.value })}>
              <option value="">(sum)</option>
              {labelNames.map((n) => <option key={n} value={n}>{n}</option>)}
            </select>
          </label>
          <span className="muted hint">drag to merge a range · click a point for its profile</span>
        </div>
        {totals.error && <ErrorBox title="The timeline could not be loaded" message={totals.error} />}
        {!totals.error && totals.loading && !totals.data && <Spinner label="Loading totals…" />}
        {totals.data?.warnings.map((w) => <div key={w} className="status warning">{w}</div>)}
        {totals.data && !hasPoints && !totals.error && (
          <Empty>No profiles match in this range: widen it, change the selector, or check <a href="?view=targets">Targets</a>.</Empty>
        )}
        {totals.data && hasPoints && (
          <Timeline
            series={totals.data.series}
            unit={type.sample_unit}
            fromMs={resolveTime(state.from, now)}
            untilMs={resolveTime(state.until, now)}
            selection={state.selFrom ? [Number(state.selFrom), Number(state.selUntil)] : time !== undefined ? [time, time] : null}
            onSelect={(lo, hi) => update({ selFrom: String(lo), selUntil: String(hi), time: "" })}
            onPoint={(ms) => update({ time: String(ms), selFrom: "", selUntil: "" })}
            theme={theme}
            markers={markers}
            onMarker={(incident) => update({ view: "incidents", incident })}
          />
        )}
      </section>

      <section className="panel" aria-label="flamegraph">
        <div className="panel-head">
          <h2>Flamegraph</h2>
          <span className="muted" data-testid="flamegraph-scope">
            {flame.data ? `${flame.data.profiles} profile${flame.data.profiles === 1 ? "" : "s"}, ` : ""}{what}
            {flame.data ? `, total ${formatValue(flame.data.flamegraph.total, type.sample_unit)}` : ""}
          </span>
          {(state.selFrom || state.time) && (
            <button type="button" onClick={() => update({ selFrom: "", selUntil: "", time: "" })}>Whole range</button>
          )}
          <span className="spacer" />
          <MaxNodesControl value={state.maxNodes} onChange={(maxNodes) => update({ maxNodes })}
            shown={flame.data ? flame.data.flamegraph.levels.reduce((n, l) => n + l.length / 4, 0) : 0} />
          <a className="button" href={api.pprofUrl(query, merged, time)} download={`${type.name}.pb.gz`} onClick={download}
            title="the merge shown, as gzipped pprof (go tool pprof reads it)">Download pprof</a>
          <button type="button" onClick={() => update({ view: "compare", ...compareSides(state, now) })}>Compare…</button>
        </div>
        {downloadError && <ErrorBox title="The pprof could not be downloaded" message={downloadError} />}
        {flame.error && <ErrorBox title="The flamegraph could not be loaded" message={flame.error} />}
        {!flame.error && flame.loading && <Spinner label="Merging profiles…" />}
        {flame.data && flame.data.profiles === 0 && (
          <Empty>No profiles in this range: widen it, or check <a href="?view=targets">Targets</a>.</Empty>
        )}
        {flame.data && flame.data.profiles > 0 && (
          <FlamegraphView data={flame.data.flamegraph} unit={type.sample_unit} search={state.search} onSearch={onSearch}
            focus={state.focus} onFocus={onFocus} theme={theme} options={options} onOptions={onOptions} fileName={type.name} />
        )}
        {state.details && (
          <FunctionDetails fn={state.details} query={query} range={merged} time={time} tick={tick} unit={type.sample_unit}
            onClose={() => update({ details: "" })} />
        )}
      </section>
    </>
  );
}

/** The incidents of the range whose labels match the selector, as timeline markers: one request per
 * range, selector or refresh; a failure leaves the timeline without markers rather than failing it. */
function useIncidentMarkers(range: TimeRange, selector: string, tick: number): TimelineMarker[] {
  const incidents = useApi((s) => api.incidents(range, selector, [], s), `${range.from}|${range.until}|${selector}|${tick}`);
  return useMemo(() => (incidents.data ?? []).map((i) => {
    const ms = nsToMs(i.time);
    const d = i.kind === "regression" ? regressionDetails(i) : null;
    const what = d ? ` (${comparedLabel(i, d)} ${d.a.value} → ${d.b.value})` : "";
    return { id: String(i.id), ms, kind: i.kind, label: `${kindName(i.kind)} of ${programName(i.labels)}${what}, ${formatLocal(ms)}` };
  }), [incidents.data]);
}
