// The Incidents page: the incidents of the range (OOM kills, restarts with an error, regressions) matching
// the selector and kind picked in the query bar, newest first, in one table per family (each with its own
// columns); one click opens an incident's detail above the list, and the URL
// (`?view=incidents&incident=<id>`) is its permalink.

import { api } from "../api/client";
import type { Incident } from "../api/types";
import { formatAge, formatMemoryLimit } from "../state/events";
import { describeRange } from "../state/time";
import type { UiState } from "../state/url";
import { EventTable, incidentRowData, type EventRowData } from "./events/EventTable";
import { REGRESSION_COLUMNS, regressionRow } from "./RegressionDetail";
import { IncidentDetail } from "./IncidentDetail";
import { Empty, ErrorBox, Spinner } from "./Status";
import { useApi } from "./useApi";

interface Props {
  state: UiState;
  update: (patch: Partial<UiState>) => void;
  theme: "light" | "dark";
  tick: number;
}

const COLUMNS = ["Exit code", "Memory limit", "Last heap", "Notes"];

export function IncidentsPage({ state, update, theme, tick }: Props) {
  const range = { from: state.from, until: state.until };
  const list = useApi((s) => api.incidents(range, state.selector, state.kind ? [state.kind] : [], s),
    `${range.from}|${range.until}|${state.selector}|${state.kind}|${tick}`);
  const all = list.data ?? [];
  const rows = all.filter((i) => i.kind !== "regression").map((i) => incidentRow(i, state));
  const regressions = all.filter((i) => i.kind === "regression").map((i) => regressionRow(i, state));
  const filtered = state.selector.trim() !== "" || state.kind !== "";
  const count = list.data ? `${list.data.length} in ` : "";
  const open = (incident: string) => {
    update({ incident });
    window.scrollTo({ top: 0 });  // the detail opens above the list
  };

  return (
    <>
      {state.incident && (
        <IncidentDetail key={state.incident} id={state.incident} state={state} update={update} theme={theme} tick={tick} />
      )}
      <section className="panel" aria-label="incidents">
        <div className="panel-head">
          <h2>Incidents</h2>
          <span className="muted">{count}{describeRange(state.from, state.until, Date.now())}</span>
        </div>
        {list.error && <ErrorBox title="The incidents could not be loaded" message={list.error} />}
        {!list.error && list.loading && !list.data && <Spinner label="Loading incidents…" />}
        {list.data && all.length === 0 && (filtered
          ? (
            <Empty>
              No incidents match these filters in this range.{" "}
              <button type="button" onClick={() => update({ selector: "", kind: "" })}>Clear the filters</button>
            </Empty>
          )
          : <NoIncidents />)}
        {regressions.length > 0 && (
          <>
            {rows.length > 0 && <h3 className="event-family">Regressions</h3>}
            <EventTable label="regressions" columns={REGRESSION_COLUMNS} rows={regressions} selected={state.incident} onOpen={open} />
          </>
        )}
        {rows.length > 0 && (
          <>
            {regressions.length > 0 && <h3 className="event-family">Kills and restarts</h3>}
            <EventTable label="incidents" columns={COLUMNS} rows={rows} selected={state.incident} onOpen={open} />
          </>
        )}
      </section>
    </>
  );
}

/** What records incidents, for a user who has none yet. */
function NoIncidents() {
  return (
    <Empty>
      <div className="empty-explained">
        <p>No incidents in this range.</p>
        <p>
          Incidents are recorded by the collector's Kubernetes watcher (OOM kills and restarts with an error of the pods
          it discovers), by <code>flamewatch event</code> run from a supervisor or script, and by{" "}
          <code>POST /api/v1/events</code>. Each one links the heap profile from just before it.
          The README's section “OOM kills” says how to set each up.
        </p>
        <p>
          Regressions are recorded by comparison rules (<code>--rules.file</code>) when a new version makes a function
          significantly more expensive; the README's section “Regressions and alerts” says how.
        </p>
      </div>
    </Empty>
  );
}

function incidentRow(i: Incident, state: UiState): EventRowData {
  const ev = i.evidence;
  return incidentRowData(i, state, [
    i.exit_code,
    formatMemoryLimit(i.memory_limit_bytes),
    ev.last_heap && ev.last_heap_age_ns !== null ? `${formatAge(ev.last_heap_age_ns)} before` : "none",
    ev.notes.length ? <span className="note-cell" title={ev.notes.join("\n")}>{ev.notes[0]}</span> : "",
  ]);
}
