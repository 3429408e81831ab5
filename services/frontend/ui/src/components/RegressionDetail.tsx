// A regression on the Incidents page (the shared event design): its row (service, the two values compared,
// the function that grew most and by how much) and, opened, its facts, the ranked changes its rule found
// (`details.functions`), a link to What changed with the same two selections, and the diff of the two as
// an evidence pane.

import type { Incident } from "../api/types";
import { changesViewOfRegression, comparedLabel, formatP, formatShare, formatShareChange, regressionDetails } from "../state/changes";
import { kindName, programName } from "../state/events";
import { compareViewOf, nsToMs } from "../state/evidence";
import { formatLocal } from "../state/time";
import type { UiState } from "../state/url";
import { EventDetail } from "./events/EventDetail";
import { incidentRowData, KindBadge, type EventRowData } from "./events/EventTable";
import { EvidencePane, LinkDiff } from "./events/EvidencePanes";
import { ViewLink } from "./ViewLink";

export const REGRESSION_COLUMNS = ["Compared", "Top function", "Change"];

export function regressionRow(i: Incident, state: UiState): EventRowData {
  const d = regressionDetails(i);
  const top = d?.functions[0];
  return incidentRowData(i, state, [
    d ? `${comparedLabel(i, d)} ${d.a.value} → ${d.b.value}` : i.message,
    top ? <code className="fn">{top.name}</code> : "",
    top ? <span className="change grew" title={formatP(top.p)}>{formatShareChange(top.change)}</span> : "",
  ]);
}

interface Props {
  incident: Incident;
  state: UiState;
  update: (patch: Partial<UiState>) => void;
  theme: "light" | "dark";
  onClose: () => void;
}

export function RegressionDetail({ incident, state, update, theme, onClose }: Props) {
  const d = regressionDetails(incident);
  const change = incident.evidence.change;
  const title = <>{kindName(incident.kind)} of {programName(incident.labels)}</>;
  return (
    <EventDetail title={title} facts={facts(incident)} notes={d ? [] : incident.evidence.notes} onClose={onClose}>
      {d && (
        <section className="panel evidence-pane" aria-label="what grew" data-testid="regression-changes">
          <div className="panel-head">
            <h3>What grew</h3>
            <span className="muted">
              {comparedLabel(incident, d)} {d.a.value} → {d.b.value}, {d.rule?.order ?? "self"} share of the total
            </span>
            <span className="spacer" />
            <ViewLink state={state} patch={changesViewOfRegression(incident, d)} update={update} className="button"
              title="every function of the same two selections, ranked">Open in What changed</ViewLink>
          </div>
          <RankedFunctions functions={d.functions} />
        </section>
      )}
      {change && (
        <EvidencePane title="The two versions compared" testId="regression-diff"
          caption={`${formatLocal(nsToMs(change.left.from))} – ${formatLocal(nsToMs(change.right.until))}`}
          actions={<ViewLink state={state} patch={compareViewOf(change)} update={update} className="button"
            title="the same two selections in the Compare view">Open in the main view</ViewLink>}>
          <LinkDiff diff={change} theme={theme} order="growth" />
        </EvidencePane>
      )}
    </EventDetail>
  );
}

function RankedFunctions({ functions }: { functions: { name: string; a: number; b: number; change: number; p: number }[] }) {
  return (
    <table className="changes-table" aria-label="ranked changes">
      <thead>
        <tr><th>Function</th><th>a</th><th>b</th><th>Change</th><th>Significance</th></tr>
      </thead>
      <tbody>
        {functions.map((f) => (
          <tr key={f.name}>
            <td className="fn">{f.name}</td>
            <td className="num">{formatShare(f.a)}</td>
            <td className="num">{formatShare(f.b)}</td>
            <td className="num change grew">{formatShareChange(f.change)}</td>
            <td><span className="significance yes">{formatP(f.p)}</span></td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function facts(i: Incident): [string, React.ReactNode][] {
  const d = regressionDetails(i);
  const out: [string, React.ReactNode][] = [
    ["Kind", <KindBadge kind={i.kind} name={kindName(i.kind)} />],
    ["Time", formatLocal(nsToMs(i.time))],
  ];
  if (d) {
    out.push(["Compared", `${comparedLabel(i, d)} ${d.a.value} → ${d.b.value}`]);
    if (d.profiles) out.push(["Profiles", `${d.profiles.a} and ${d.profiles.b}`]);
    if (d.rule?.threshold !== undefined) out.push(["Threshold", `${formatShareChange(d.rule.threshold)} of the total`]);
    if (d.rule?.group) out.push(["Rule group", d.rule.group]);
  }
  if (i.message) out.push(["Message", i.message]);
  out.push(["Labels", <span className="labels">{Object.entries(i.labels).map(([k, v]) => <span key={k} className="label">{k}="{v}"</span>)}</span>]);
  return out;
}
