// One incident opened: its facts and notes, the heap flamegraph from before it beside the in-use growth
// of its run (alloc growth a toggle away), and the CPU before it; each with a link that opens the same
// profiles in the main view.

import { useState } from "react";
import { api } from "../api/client";
import type { DiffLink, Incident, ProfileLink } from "../api/types";
import { formatAge, formatMemoryLimit, kindName, programName } from "../state/events";
import { compareViewOf, nsToMs, singleViewOf } from "../state/evidence";
import { formatLocal } from "../state/time";
import type { UiState } from "../state/url";
import { EventDetail } from "./events/EventDetail";
import { EvidencePane, LinkDiff, LinkFlamegraph } from "./events/EvidencePanes";
import { KindBadge } from "./events/EventTable";
import { RegressionDetail } from "./RegressionDetail";
import { ErrorBox, Spinner } from "./Status";
import { useApi } from "./useApi";
import { ViewLink } from "./ViewLink";

interface Props {
  id: string;
  state: UiState;
  update: (patch: Partial<UiState>) => void;
  theme: "light" | "dark";
  tick: number;
}

export function IncidentDetail({ id, state, update, theme, tick }: Props) {
  const valid = /^\d+$/.test(id);  // a link cut short or edited by hand asks nothing of the API
  const found = useApi(valid ? (s) => api.incident(id, s) : null, `${id}|${tick}`);
  const close = () => update({ incident: "" });
  const error = valid ? found.error : `“${id}” is not an incident id (a number, as in ?view=incidents&incident=42)`;
  if (error) {
    return (
      <section className="panel event-detail" aria-label="event detail">
        <ErrorBox title={`Incident ${id} could not be opened`} message={error} />
        <button type="button" onClick={close}>Back to the list</button>
      </section>
    );
  }
  if (!found.data) return <Spinner label={`Loading incident ${id}…`} />;
  const incident = found.data;
  if (incident.kind === "regression") {
    return <RegressionDetail incident={incident} state={state} update={update} theme={theme} onClose={close} />;
  }
  const open = (patch: Partial<UiState>) => (
    <ViewLink state={state} patch={patch} update={update} className="button" title="the same profiles in the Explore or Compare view">
      Open in the main view
    </ViewLink>
  );
  return (
    <EventDetail title={<>{kindName(incident.kind)} of {programName(incident.labels)}</>} facts={facts(incident)}
      notes={incident.evidence.notes} onClose={close}>
      <Evidence incident={incident} theme={theme} open={open} />
    </EventDetail>
  );
}

function facts(i: Incident): [string, React.ReactNode][] {
  const ev = i.evidence;
  const out: [string, React.ReactNode][] = [
    ["Kind", <KindBadge kind={i.kind} name={kindName(i.kind)} />],
    ["Time", formatLocal(nsToMs(i.time))],
    ["Last heap", ev.last_heap && ev.last_heap_age_ns !== null ? `${formatAge(ev.last_heap_age_ns)} before` : "none"],
    ["Memory limit", formatMemoryLimit(i.memory_limit_bytes)],
    ["Exit code", i.exit_code],
  ];
  if (i.restart_count) out.push(["Restarts", i.restart_count]);
  if (i.started_ns) out.push(["Run started", formatLocal(nsToMs(i.started_ns))]);
  if (i.message) out.push(["Message", i.message]);
  out.push(["Labels", <span className="labels">{Object.entries(i.labels).map(([k, v]) => <span key={k} className="label">{k}="{v}"</span>)}</span>]);
  return out;
}

function Evidence({ incident, theme, open }: {
  incident: Incident; theme: "light" | "dark"; open: (patch: Partial<UiState>) => React.ReactNode;
}) {
  const ev = incident.evidence;
  const end = incident.kind === "oom_kill" ? "the kill" : "the end";
  return (
    <>
      {(ev.last_heap || ev.inuse_growth) && (
        <div className="evidence-pair">
          {ev.last_heap && (
            <EvidencePane title={`Heap before ${end}`} testId="last-heap" actions={open(singleViewOf(ev.last_heap))}
              caption={`in use, profile of ${formatLocal(nsToMs(ev.last_heap.time ?? ev.last_heap.until))}`}>
              <LinkFlamegraph link={ev.last_heap} theme={theme} />
            </EvidencePane>
          )}
          {ev.inuse_growth && <Growth inuse={ev.inuse_growth} alloc={ev.alloc_growth} theme={theme} open={open} />}
        </div>
      )}
      {ev.cpu_before && <CpuBefore link={ev.cpu_before} theme={theme} open={open} />}
    </>
  );
}

function Growth({ inuse, alloc, theme, open }: {
  inuse: DiffLink; alloc: DiffLink | null; theme: "light" | "dark"; open: (patch: Partial<UiState>) => React.ReactNode;
}) {
  const [which, setWhich] = useState<"inuse" | "alloc">("inuse");
  const diff = which === "alloc" && alloc ? alloc : inuse;
  const toggle = alloc && (
    <span className="toggle" role="group" aria-label="growth of">
      {([["inuse", "In use"], ["alloc", "Allocated"]] as const).map(([value, label]) => (
        <button key={value} type="button" className={which === value ? "selected" : ""} aria-pressed={which === value}
          onClick={() => setWhich(value)}>{label}</button>
      ))}
    </span>
  );
  const span = `${formatLocal(nsToMs(diff.left.time ?? diff.left.from))} → ${formatLocal(nsToMs(diff.right.time ?? diff.right.until))}`;
  return (
    <EvidencePane title="Growth over the run" testId="growth" caption={`first heap → last heap, ${span}`}
      actions={<>{toggle}{open(compareViewOf(diff))}</>}>
      <LinkDiff diff={diff} theme={theme} order="growth" />
    </EvidencePane>
  );
}

function CpuBefore({ link, theme, open }: { link: ProfileLink; theme: "light" | "dark"; open: (patch: Partial<UiState>) => React.ReactNode }) {
  return (
    <EvidencePane title="CPU before" testId="cpu-before" actions={open(singleViewOf(link))}
      caption={`${formatLocal(nsToMs(link.from))} – ${formatLocal(nsToMs(link.until))}`}>
      <LinkFlamegraph link={link} theme={theme} table />
    </EvidencePane>
  );
}
