// The label explorer, as Pyroscope's tag explorer: pick a label of the profile type, read its values over
// the range as a timeline and as a table of totals and shares of the selection; a value's row opens Explore
// with the selector narrowed to that value.

import { useMemo } from "react";
import { api, queryText, type TimeRange } from "../api/client";
import type { ProfileType } from "../api/types";
import { formatValue } from "../flamegraph/profileTypes";
import { formatShare } from "../state/changes";
import { explorableLabels, isGauge, pickedLabel, valueTotals, type ValueTotal } from "../state/labelTotals";
import { narrowSelector } from "../state/selector";
import { resolveTime } from "../state/time";
import type { UiState } from "../state/url";
import { Empty, ErrorBox, Spinner } from "./Status";
import { COLOR_COUNT, seriesColor, Timeline } from "./Timeline";
import { useApi, type Loaded } from "./useApi";
import { isPlainClick, ViewLink } from "./ViewLink";

interface Props {
  state: UiState;
  type: ProfileType;
  /** The label names of the profile type over the range, as the App loads them. */
  labelNames: Loaded<string[]>;
  tick: number;
  theme: "light" | "dark";
  update: (patch: Partial<UiState>) => void;
}

export function LabelsPage({ state, type, labelNames, tick, theme, update }: Props) {
  const names = useMemo(() => explorableLabels(labelNames.data ?? []), [labelNames.data]);
  const label = pickedLabel(state.exploreBy, names);
  return (
    <>
      <section className="panel" aria-label="label picker">
        <div className="panel-head">
          <h2>Label</h2>
          <select aria-label="explored label" value={label} onChange={(e) => update({ exploreBy: e.target.value })}>
            {names.map((n) => <option key={n} value={n}>{n}</option>)}
          </select>
          <span className="muted hint">each value's share of the selection · click a value for its flamegraph</span>
        </div>
        {labelNames.error && <ErrorBox title="The label names could not be loaded" message={labelNames.error} />}
        {!labelNames.error && labelNames.loading && !labelNames.data && <Spinner label="Loading label names…" />}
        {labelNames.data && !label && (
          <Empty>These profiles carry no labels to explore in this range: widen it, or check <a href="?view=targets">Targets</a>.</Empty>
        )}
      </section>
      {/* Keyed by the label: another label's answer must not be shown, read as this one's, while it loads. */}
      {label && <LabelValues key={label} state={state} type={type} label={label} tick={tick} theme={theme} update={update} />}
    </>
  );
}

interface ValuesProps {
  state: UiState;
  type: ProfileType;
  label: string;
  tick: number;
  theme: "light" | "dark";
  update: (patch: Partial<UiState>) => void;
}

/** One label's values: their timeline (the largest ones, a colour each) and their table. */
function LabelValues({ state, type, label, tick, theme, update }: ValuesProps) {
  const query = queryText(type.id, state.selector);
  const range: TimeRange = { from: state.from, until: state.until };
  const now = useMemo(() => Date.now(), [tick, state.from, state.until]);
  const totals = useApi((s) => api.queryRange(query, range, label, s),
    `${query}|${range.from}|${range.until}|${label}|${tick}`);
  const rows = useMemo(() => valueTotals(totals.data?.series ?? [], label, isGauge(type)), [totals.data, label, type]);
  const drawn = useMemo(() => rows.slice(0, COLOR_COUNT).map((r) => r.series), [rows]);
  // Explore of the value, as a selector typed there would open it.
  const exploreOf = (value: string): Partial<UiState> => ({ view: "single", selector: narrowSelector(state.selector, label, value),
    selFrom: "", selUntil: "", time: "" });

  return (
    <>
      <section className="panel" aria-label="label values over time">
        <div className="panel-head">
          <h2>{label} over time</h2>
          <span className="muted hint">
            {rows.length > COLOR_COUNT ? `the ${COLOR_COUNT} largest values · ` : ""}drag to narrow the range
          </span>
        </div>
        {totals.error && <ErrorBox title={`The values of ${label} could not be loaded`} message={totals.error} />}
        {!totals.error && totals.loading && !totals.data && <Spinner label={`Loading the values of ${label}…`} />}
        {totals.data?.warnings.map((w) => <div key={w} className="status warning">{w}</div>)}
        {totals.data && rows.length === 0 && !totals.error && (
          <Empty>No profiles match in this range: widen it, change the selector, or check <a href="?view=targets">Targets</a>.</Empty>
        )}
        {rows.length > 0 && (
          <Timeline series={drawn} unit={type.sample_unit} fromMs={resolveTime(state.from, now)} untilMs={resolveTime(state.until, now)}
            selection={null} onSelect={(lo, hi) => update({ from: String(lo), until: String(hi) })} theme={theme} />
        )}
      </section>
      {rows.length > 0 && (
        <section className="panel" aria-label="label values">
          <div className="panel-head">
            <h2>Values of {label}</h2>
            <span className="muted" data-testid="value-count">{rows.length} value{rows.length === 1 ? "" : "s"}</span>
          </div>
          <ValuesTable label={label} rows={rows} gauge={isGauge(type)} unit={type.sample_unit} exploreOf={exploreOf}
            state={state} update={update} />
        </section>
      )}
    </>
  );
}

interface TableProps {
  label: string;
  rows: ValueTotal[];
  gauge: boolean;
  unit: string;
  exploreOf: (value: string) => Partial<UiState>;
  state: UiState;
  update: (patch: Partial<UiState>) => void;
}

function ValuesTable({ label, rows, gauge, unit, exploreOf, state, update }: TableProps) {
  return (
    <table className="labels-table" aria-label={`values of ${label}`}>
      <thead>
        <tr>
          <th>{label}</th>
          <th className="num" title={gauge ? "the mean over the range" : "the sum over the range"}>{gauge ? "Average" : "Total"}</th>
          <th className="num">Share</th>
          <th><span className="visually-hidden">share bar</span></th>
          <th><span className="visually-hidden">open</span></th>
        </tr>
      </thead>
      <tbody>
        {rows.map((row, i) => {
          // A plain click on the row opens Explore; the link inside is the same view for a new tab.
          const open = (e: React.MouseEvent) => {
            if (isPlainClick(e) && !(e.target as HTMLElement).closest("a")) update(exploreOf(row.value));
          };
          const color = i < COLOR_COUNT ? seriesColor(i) : "var(--muted)";
          return (
            <tr key={row.value} data-value={row.value} onClick={open} title={`open the flamegraph of ${label}="${row.value}"`}>
              <td className="value">
                <span className="value-color" style={{ background: color }} />
                {row.value === "" ? <span className="muted" title={`the series without ${label}`}>(none)</span> : row.value}
              </td>
              <td className="num">{formatValue(row.total, unit)}</td>
              <td className="num share">{formatShare(row.share)}</td>
              <td className="share-bar"><span style={{ width: `${row.share * 100}%`, background: color }} /></td>
              <td><ViewLink state={state} patch={exploreOf(row.value)} update={update}>Flamegraph</ViewLink></td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}
