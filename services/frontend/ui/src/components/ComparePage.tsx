// Two selections (two ranges, or two selectors such as version="1.4" vs version="1.5") as one diff
// flamegraph coloured by relative change, with a legend and a table of left, right and delta.

import { useCallback, useMemo } from "react";
import { api, queryText } from "../api/client";
import type { DiffData, ProfileType } from "../api/types";
import { diffColor, diffRows, formatChange, LEGEND_STOPS, type DiffOrder } from "../flamegraph/diff";
import { formatValue } from "../flamegraph/profileTypes";
import type { Side, UiState } from "../state/url";
import { FlamegraphView, MaxNodesControl } from "./FlamegraphView";
import { RangePicker } from "./RangePicker";
import { SelectorInput } from "./SelectorInput";
import { Empty, ErrorBox, Spinner } from "./Status";
import { useApi } from "./useApi";

interface Props {
  state: UiState;
  type: ProfileType;
  tick: number;
  theme: "light" | "dark";
  update: (patch: Partial<UiState>) => void;
}

export function ComparePage({ state, type, tick, theme, update }: Props) {
  const { left, right } = state;
  const key = `${type.id}|${JSON.stringify([left, right])}|${state.maxNodes}|${tick}`;
  const diff = useApi((s) => api.diff(
    { query: queryText(type.id, left.selector), range: left },
    { query: queryText(type.id, right.selector), range: right },
    state.maxNodes, s), key);
  const onSearch = useCallback((search: string) => update({ search }), [update]);
  const onFocus = useCallback((focus: string) => update({ focus }), [update]);
  const empty = diff.data && (diff.data.left_ticks === 0 || diff.data.right_ticks === 0);

  return (
    <>
      <section className="panel compare-sides" aria-label="selections to compare">
        <SideEditor name="left" title="Baseline (left)" side={left} type={type} onChange={(l) => update({ left: l })} />
        <SideEditor name="right" title="Comparison (right)" side={right} type={type} onChange={(r) => update({ right: r })} />
      </section>
      <section className="panel" aria-label="diff flamegraph">
        <div className="panel-head">
          <h2>Diff flamegraph</h2>
          {diff.data && (
            <span className="muted">
              left total {formatValue(diff.data.left_ticks, type.sample_unit)}, right total{" "}
              {formatValue(diff.data.right_ticks, type.sample_unit)}
            </span>
          )}
          <span className="spacer" />
          <MaxNodesControl value={state.maxNodes} onChange={(maxNodes) => update({ maxNodes })}
            shown={diff.data ? diff.data.levels.reduce((n, l) => n + l.length / 7, 0) : 0} />
        </div>
        {diff.error && <ErrorBox title="The comparison could not be loaded" message={diff.error} />}
        {!diff.error && diff.loading && <Spinner label="Merging both sides…" />}
        {empty && (
          <Empty>
            One side has no profiles ({diff.data!.left_ticks === 0 ? "left" : "right"}): widen its range or change its
            selector.
          </Empty>
        )}
        {diff.data && !empty && (
          <>
            <div className="diff-legend-line"><DiffLegend /></div>
            <FlamegraphView data={diff.data} unit={type.sample_unit} search={state.search} onSearch={onSearch}
              focus={state.focus} onFocus={onFocus} theme={theme} step={7} />
            <DiffTable data={diff.data} unit={type.sample_unit} />
          </>
        )}
      </section>
    </>
  );
}

function SideEditor({ name, title, side, type, onChange }: {
  name: string; title: string; side: Side; type: ProfileType; onChange: (s: Side) => void;
}) {
  return (
    <div className="side" aria-label={title}>
      <h3>{title}</h3>
      <SelectorInput id={`${name}-selector`} label={`${title} selector`} value={side.selector} profileType={type.id}
        range={side} onChange={(selector) => onChange({ ...side, selector })} />
      <RangePicker idPrefix={name} from={side.from} until={side.until} onChange={(from, until) => onChange({ ...side, from, until })} />
    </div>
  );
}

/** The diff colours and what they mean; shared with the evidence panes of events. */
export function DiffLegend({ growth = false }: { growth?: boolean }) {
  return (
    <span className="diff-legend" aria-label="colour legend">
      <span>shrank</span>
      {LEGEND_STOPS.map((s) => (
        <span key={s} className="swatch" style={{ background: diffColor(s) }}>{formatChange(s)}</span>
      ))}
      <span>grew</span>
      <span className="muted">{growth ? "(change of each function's own value)" : "(change of each function's share of its side's total)"}</span>
    </span>
  );
}

/** The functions that changed most (diffRows' order), the first `limit`. */
export function DiffTable({ data, unit, limit = 30, order = "share" }: { data: DiffData; unit: string; limit?: number; order?: DiffOrder }) {
  const rows = useMemo(() => diffRows(data, order).slice(0, limit), [data, limit, order]);
  return (
    <table className="diff-table" aria-label="largest changes">
      <caption>{order === "growth" ? "Largest growth (self)" : "Largest changes"}</caption>
      <thead>
        <tr><th>Function</th><th>Left</th><th>Right</th><th>Delta</th><th>Change</th></tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr key={r.name}>
            <td className="fn">{r.name}</td>
            <td>{formatValue(r.left, unit)}</td>
            <td>{formatValue(r.right, unit)}</td>
            <td>{r.delta > 0 ? "+" : ""}{formatValue(r.delta, unit)}</td>
            <td><span className="swatch" style={{ background: diffColor(r.change) }}>{formatChange(r.change)}</span></td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
