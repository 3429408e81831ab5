// What changed (`?view=changes`): the selector picked (a service, or the query bar's selector) compared
// as two values of a label (`version` by default; a first visit picks the two newest) or over two time
// ranges, and the functions ranked by the change of their share (GET /api/v1/changes); one click on a
// row opens the diff flamegraph of the two selections zoomed to that function.

import { useEffect, useMemo } from "react";
import { api, exactSelector, queryText } from "../api/client";
import type { ChangesAnswer, ProfileType } from "../api/types";
import { changesParams, compareViewOfFunction, defaultPair, orderOf, valuesByAppearance } from "../state/changes";
import type { UiState } from "../state/url";
import { ChangesTable } from "./ChangesTable";
import { RangePicker } from "./RangePicker";
import { Empty, ErrorBox, Spinner } from "./Status";
import { useApi } from "./useApi";

interface Props {
  state: UiState;
  type: ProfileType;
  labelNames: string[];
  tick: number;
  update: (patch: Partial<UiState>, replace?: boolean) => void;
}

/** The fewest profiles per side the API tests a change with (libs/changes/stats.py `min_profiles`). */
const MIN_PROFILES = 3;
const README = <>The README's section “Regressions and alerts” says more.</>;

export function ChangesPage({ state, type, labelNames, tick, update }: Props) {
  const ranges = state.changeMode === "ranges";
  const range = { from: state.from, until: state.until };
  const query = queryText(type.id, state.selector);
  // The label's values with profiles in the range, in the order they appeared (index only: cheap).
  const values = useApi(ranges ? null : (s) => api.queryRange(query, range, state.label, s),
    `${query}|${state.label}|${range.from}|${range.until}|${ranges}|${tick}`);
  const ordered = useMemo(() => valuesByAppearance(values.data?.series ?? [], state.label), [values.data, state.label]);
  useEffect(() => {
    const pair = defaultPair(ordered);
    if (!ranges && pair && !state.a && !state.b) update(pair, true);  // the link then names what was picked
  }, [ordered, ranges, state.a, state.b]);

  const params = changesParams(state, type.id);
  const found = useApi(params ? (s) => api.changes(params, s) : null, `${JSON.stringify(params)}|${tick}`);
  const order = orderOf(state);

  return (
    <>
      <Controls state={state} type={type} labelNames={labelNames} values={ordered} update={update} />
      <section className="panel" aria-label="what changed">
        <div className="panel-head">
          <h2>What changed</h2>
          <span className="muted" data-testid="changes-scope">{scope(state, found.data?.profiles)}</span>
          <span className="spacer" />
          <span className="toggle" role="group" aria-label="rank by">
            {(["self", "total"] as const).map((o) => (
              <button key={o} type="button" className={order === o ? "selected" : ""} aria-pressed={order === o}
                title={o === "self" ? "the function's own time" : "the function with its callees"}
                onClick={() => update({ order: o })}>{o === "self" ? "Self" : "Total"}</button>
            ))}
          </span>
        </div>
        {!ranges && values.error && <ErrorBox title="The label's values could not be loaded" message={values.error} />}
        {!ranges && values.data && ordered.length === 0 && <NoValues state={state} update={update} />}
        {!ranges && values.data && ordered.length === 1 && <OneValue state={state} value={ordered[0]} update={update} />}
        {found.error && <ErrorBox title="The comparison could not be made" message={found.error} />}
        {!found.error && found.loading && <Spinner label="Comparing the profiles of both sides…" />}
        {found.data && <Answer state={state} type={type} answer={found.data} update={update} />}
      </section>
    </>
  );
}

function scope(state: UiState, profiles?: { a: number; b: number }): string {
  const counts = profiles ? `: ${profiles.a} and ${profiles.b} profiles` : "";
  if (state.changeMode === "ranges") return `two ranges of ${state.selector || "{}"}${counts}`;
  if (!state.a || !state.b) return "";
  return `${state.label} ${state.a} → ${state.b}${counts}`;
}

function Answer({ state, type, answer, update }: {
  state: UiState; type: ProfileType; answer: ChangesAnswer; update: (patch: Partial<UiState>) => void;
}) {
  const { a, b } = answer.profiles;
  const side = state.changeMode === "ranges" ? ["the first range", "the second range"]
    : [`${state.label} ${state.a}`, `${state.label} ${state.b}`];
  if (a === 0 || b === 0) {
    return (
      <Empty>
        No profiles of {a === 0 ? side[0] : side[1]} in this range: widen the range, or pick another value.
      </Empty>
    );
  }
  return (
    <>
      {Math.min(a, b) < MIN_PROFILES && (
        <Empty>
          <div className="empty-explained">
            <p>Too few profiles to tell a change from noise: {a} of {side[0]}, {b} of {side[1]}; at least {MIN_PROFILES} a side.</p>
            <p>Each stored profile is one observation: widen the range, or wait for more scrapes (one every scrape interval). {README}</p>
          </div>
        </Empty>
      )}
      {answer.notes.length > 0 && (
        <ul className="notes" aria-label="notes">{answer.notes.map((n) => <li key={n}>{n}</li>)}</ul>
      )}
      {answer.functions.length === 0
        ? <Empty>No function holds 0.1 % of the total on either side.</Empty>
        : <ChangesTable functions={answer.functions} order={orderOf(state)} state={state} update={update}
            compareOf={(name) => compareViewOfFunction(state, type.id, name)} />}
    </>
  );
}

function Controls({ state, type, labelNames, values, update }: {
  state: UiState; type: ProfileType; labelNames: string[]; values: string[]; update: (patch: Partial<UiState>) => void;
}) {
  const ranges = state.changeMode === "ranges";
  const range = { from: state.from, until: state.until };
  const services = useApi((s) => api.labelValues("service_name", exactSelector({ __profile_type__: type.id }), range, s),
    `${type.id}|${range.from}|${range.until}`);
  const service = (services.data ?? []).find((v) => exactSelector({ service_name: v }) === state.selector) ?? "";
  const labels = labelNames.filter((n) => n !== "service_name");
  if (!labels.includes(state.label)) labels.unshift(state.label);
  const newestFirst = [...values].reverse();
  const valueSelect = (which: "a" | "b", name: string) => (
    <select aria-label={name} value={state[which]} onChange={(e) => update({ [which]: e.target.value })}>
      {!newestFirst.includes(state[which]) && <option value={state[which]}>{state[which] || "—"}</option>}
      {newestFirst.map((v) => <option key={v} value={v}>{v}</option>)}
    </select>
  );
  return (
    <section className="panel changes-controls" aria-label="selections to compare">
      <label>
        Service{" "}
        <select aria-label="service" value={service}
          onChange={(e) => update({ selector: e.target.value ? exactSelector({ service_name: e.target.value }) : "", a: "", b: "" })}>
          <option value="">{state.selector ? "(the query bar's selector)" : "(every service)"}</option>
          {(services.data ?? []).map((v) => <option key={v} value={v}>{v}</option>)}
        </select>
      </label>
      <span className="toggle" role="group" aria-label="compare">
        <button type="button" className={!ranges ? "selected" : ""} aria-pressed={!ranges}
          onClick={() => update({ changeMode: "" })}>Two values of a label</button>
        <button type="button" className={ranges ? "selected" : ""} aria-pressed={ranges}
          onClick={() => update({ changeMode: "ranges" })}>Two time ranges</button>
      </span>
      {!ranges && (
        <>
          <label>
            Label{" "}
            <select aria-label="label" value={state.label} onChange={(e) => update({ label: e.target.value, a: "", b: "" })}>
              {labels.map((n) => <option key={n} value={n}>{n}</option>)}
            </select>
          </label>
          <span className="pair">{valueSelect("a", "value a")} → {valueSelect("b", "value b")}</span>
          <span className="muted">over the range above</span>
        </>
      )}
      {ranges && (
        <>
          <span className="side-range" aria-label="range a"><strong>a</strong>
            <RangePicker idPrefix="changes-a" from={state.left.from} until={state.left.until}
              onChange={(from, until) => update({ left: { ...state.left, from, until } })} />
          </span>
          <span className="side-range" aria-label="range b"><strong>b</strong>
            <RangePicker idPrefix="changes-b" from={state.right.from} until={state.right.until}
              onChange={(from, until) => update({ right: { ...state.right, from, until } })} />
          </span>
        </>
      )}
    </section>
  );
}

/** The label is on none of the selection's profiles in the range: how to put it there. */
function NoValues({ state, update }: { state: UiState; update: (patch: Partial<UiState>) => void }) {
  return (
    <Empty>
      <div className="empty-explained">
        <p>No profiles of {state.selector || "this type"} in this range carry the label “{state.label}”.</p>
        <p>
          Versions are compared by a label on the profiles: set it in the scrape configuration's target labels
          (<code>labels: {"{"}{state.label}: "1.5"{"}"}</code>), on a push (<code>/ingest?…&amp;{state.label}=1.5</code>) or
          in the SDK's tags. Or pick another label, widen the range, or{" "}
          <button type="button" onClick={() => update({ changeMode: "ranges" })}>compare two time ranges</button>. {README}
        </p>
      </div>
    </Empty>
  );
}

/** One value only: a comparison needs the next one. */
function OneValue({ state, value, update }: { state: UiState; value: string; update: (patch: Partial<UiState>) => void }) {
  return (
    <Empty>
      <div className="empty-explained">
        <p>Only one value of “{state.label}” in this range: {value}. A comparison needs two.</p>
        <p>
          Deploy the next version with its profiles labelled by it, widen the range to hold the previous one, or{" "}
          <button type="button" onClick={() => update({ changeMode: "ranges" })}>compare two time ranges</button>. {README}
        </p>
      </div>
    </Empty>
  );
}
