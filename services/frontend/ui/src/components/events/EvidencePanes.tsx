// Evidence panes: a profile link drawn as a flamegraph, a diff link as a diff flamegraph, each asked
// for as the link says (state/evidence.ts) with its own search and zoom, and a way to open it in the
// main view. Incidents use them for the heap before a kill and its growth; regressions will for the
// versions they compare.

import { useState, type ReactNode } from "react";
import { api } from "../../api/client";
import type { DiffLink, ProfileLink } from "../../api/types";
import type { DiffOrder } from "../../flamegraph/diff";
import { formatValue, parseTypeId } from "../../flamegraph/profileTypes";
import { linkRange, linkTimeMs, splitQuery } from "../../state/evidence";
import { DiffLegend, DiffTable } from "../ComparePage";
import { FlamegraphView } from "../FlamegraphView";
import { Empty, ErrorBox, Spinner } from "../Status";
import { useApi } from "../useApi";

const MAX_NODES = 4096;

function unitOf(query: string): string {
  return parseTypeId(splitQuery(query).type)?.sample_unit ?? "";
}

interface PaneProps {
  title: string;
  /** What the pane shows, in words (which profile, which range). */
  caption: ReactNode;
  /** Controls in the pane's heading: an "open in the main view" link, toggles. */
  actions: ReactNode;
  children: ReactNode;
  testId: string;
}

export function EvidencePane({ title, caption, actions, children, testId }: PaneProps) {
  return (
    <section className="panel evidence-pane" aria-label={title} data-testid={testId}>
      <div className="panel-head">
        <h3>{title}</h3>
        <span className="muted">{caption}</span>
        <span className="spacer" />
        {actions}
      </div>
      {children}
    </section>
  );
}

interface GraphProps {
  theme: "light" | "dark";
  /** The top table beside the graph (off where two panes share the width). */
  table?: boolean;
}

export function LinkFlamegraph({ link, theme, table = false }: GraphProps & { link: ProfileLink }) {
  const range = linkRange(link);
  const at = linkTimeMs(link);
  const flame = useApi((s) => api.flamegraph(link.query, range, MAX_NODES, at, s),
    `${link.query}|${range.from}|${range.until}|${at}`);
  const [search, setSearch] = useState("");
  const [focus, setFocus] = useState("");
  const unit = unitOf(link.query);
  if (flame.error) return <ErrorBox title="The profile could not be loaded" message={flame.error} />;
  if (!flame.data) return <Spinner label="Loading the profile…" />;
  if (flame.data.profiles === 0) return <Empty>This profile is no longer stored (retention), or its series was deleted.</Empty>;
  return (
    <>
      <div className="muted pane-total">total {formatValue(flame.data.flamegraph.total, unit)}</div>
      <FlamegraphView data={flame.data.flamegraph} unit={unit} search={search} onSearch={setSearch} focus={focus}
        onFocus={setFocus} theme={theme} table={table} />
    </>
  );
}

export function LinkDiff({ diff, theme, order = "share" }: GraphProps & { diff: DiffLink; order?: DiffOrder }) {
  const left = { query: diff.left.query, range: linkRange(diff.left) };
  const right = { query: diff.right.query, range: linkRange(diff.right) };
  const answer = useApi((s) => api.diff(left, right, MAX_NODES, s), JSON.stringify([left, right]));
  const [search, setSearch] = useState("");
  const [focus, setFocus] = useState("");
  const unit = unitOf(diff.left.query);
  if (answer.error) return <ErrorBox title="The diff could not be loaded" message={answer.error} />;
  if (!answer.data) return <Spinner label="Merging both sides…" />;
  if (answer.data.left_ticks === 0 && answer.data.right_ticks === 0) {
    return <Empty>These profiles are no longer stored (retention), or their series were deleted.</Empty>;
  }
  return (
    <>
      <div className="muted pane-total">
        {formatValue(answer.data.left_ticks, unit)} → {formatValue(answer.data.right_ticks, unit)}
      </div>
      <div className="diff-legend-line"><DiffLegend growth={order === "growth"} /></div>
      <FlamegraphView data={answer.data} unit={unit} search={search} onSearch={setSearch} focus={focus} onFocus={setFocus}
        theme={theme} step={7} growth={order === "growth"} />
      <DiffTable data={answer.data} unit={unit} limit={8} order={order} />
    </>
  );
}
