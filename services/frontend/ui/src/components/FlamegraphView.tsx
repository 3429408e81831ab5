// The flamegraph with its top table beside it: our canvas renderer, the search bound to the URL with the
// matches' share, the zoomed frame's breadcrumbs (also in the URL), and a max-nodes control.

import { useCallback, useEffect, useMemo } from "react";
import type { FlamegraphData } from "../api/types";
import { nodeCount, searchShare } from "../flamegraph/convert";
import { ancestry, buildLayout, findFocus, matchingNames, nameOf, pathOf, type Frame, type Layout } from "../flamegraph/layout";
import type { Theme } from "../flamegraph/palette";
import { formatValue } from "../flamegraph/profileTypes";
import { decodeFocus, encodeFocus } from "../state/url";
import { FlameCanvas } from "./FlameCanvas";
import { TopTable } from "./TopTable";

export const MAX_NODES_CHOICES = [1024, 4096, 8192, 16384, 32768, 65536];

interface Props {
  data: FlamegraphData;
  unit: string;
  search: string;
  onSearch: (text: string) => void;
  /** The zoomed frame's path as the URL keeps it (encodeFocus); "" for all. */
  focus: string;
  onFocus: (focus: string) => void;
  theme: Theme;
  /** A diff coloured by the change of each frame's value, not of its share (a growth between two heaps). */
  growth?: boolean;
  step?: 4 | 7;
  /** The top table beside a single flamegraph; off where panes share the width. */
  table?: boolean;
}

export function FlamegraphView({ data, unit, search, onSearch, focus, onFocus, theme, step = 4, table = true,
  growth = false }: Props) {
  const layout = useMemo(() => buildLayout(data, step), [data, step]);
  const path = useMemo(() => decodeFocus(focus), [focus]);
  const focusFrame = useMemo(() => findFocus(layout, path), [layout, path]);
  const matches = useMemo(() => matchingNames(layout.names, search), [layout, search]);
  const share = useMemo(() => (step === 4 ? searchShare(data, search) : null), [data, search, step]);
  const zoom = useCallback((frame: Frame | null) => onFocus(frame ? encodeFocus(pathOf(layout, frame)) : ""), [layout, onFocus]);
  useEscapeToReset(focus !== "", onFocus);

  return (
    <div className="flamegraph" data-testid="flamegraph-panel" data-nodes={nodeCount(data, step)}>
      <div className="flame-toolbar">
        <input type="search" name="flamegraph-search" aria-label="search functions" placeholder="Search functions…"
          value={search} onChange={(e) => onSearch(e.target.value)} />
        <Breadcrumbs layout={layout} focus={focusFrame} missing={path.length > 0 && !focusFrame ? path[path.length - 1] : null}
          onZoom={zoom} />
      </div>
      {share && search.trim() !== "" && (
        <div className="search-share" role="status" aria-label="search matches">
          “{search}”: {share.matches} frame{share.matches === 1 ? "" : "s"}, {formatValue(share.value, unit)} ={" "}
          <strong>{(share.share * 100).toFixed(2)}%</strong> of the total
        </div>
      )}
      <div className={step === 4 && table ? "flamegraph-with-table" : "flamegraph-alone"}>
        {step === 4 && table && <TopTable data={data} unit={unit} search={search} onSearch={onSearch} />}
        <div className="flamegraph-canvas">
          <FlameCanvas layout={layout} unit={unit} theme={theme} focus={focusFrame} matches={matches} onZoom={zoom}
            growth={growth} />
        </div>
      </div>
    </div>
  );
}

/** Escape zooms back out to all, unless the key is meant for a field being typed in. */
function useEscapeToReset(zoomed: boolean, onFocus: (focus: string) => void) {
  useEffect(() => {
    if (!zoomed) return;
    const onKey = (e: KeyboardEvent) => {
      const target = e.target as HTMLElement | null;
      if (e.key !== "Escape" || target?.closest("input, select, textarea")) return;
      onFocus("");
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [zoomed, onFocus]);
}

function Breadcrumbs({ layout, focus, missing, onZoom }: {
  layout: Layout; focus: Frame | null; missing: string | null; onZoom: (frame: Frame | null) => void;
}) {
  const chain = focus ? ancestry(layout, focus).slice(1) : [];
  return (
    <nav className="breadcrumbs" aria-label="breadcrumbs">
      <ol>
        <li>
          {focus ? <button type="button" onClick={() => onZoom(null)}>all</button> : <span aria-current="location">all</span>}
        </li>
        {chain.map((frame, i) => (
          <li key={`${frame.depth}`}>
            {i < chain.length - 1
              ? <button type="button" onClick={() => onZoom(frame)} title={nameOf(layout, frame)}>{nameOf(layout, frame)}</button>
              : <span aria-current="location" title={nameOf(layout, frame)}>{nameOf(layout, frame)}</span>}
          </li>
        ))}
      </ol>
      {focus && <button type="button" className="reset" onClick={() => onZoom(null)} title="show all (Escape)">reset</button>}
      {!focus && missing !== null && <span className="muted">“{missing}” is not in this flamegraph: showing all</span>}
      {!focus && missing === null && <span className="muted hint">click a frame to zoom</span>}
    </nav>
  );
}

export function MaxNodesControl({ value, onChange, shown }: { value: number; onChange: (n: number) => void; shown: number }) {
  const choices = MAX_NODES_CHOICES.includes(value) ? MAX_NODES_CHOICES : [...MAX_NODES_CHOICES, value].sort((a, b) => a - b);
  return (
    <label className="max-nodes" title="the heaviest nodes are kept; the rest are summed into 'other'">
      Max nodes{" "}
      <select value={value} onChange={(e) => onChange(Number(e.target.value))} aria-label="max nodes">
        {choices.map((n) => <option key={n} value={n}>{n.toLocaleString("en-US")}</option>)}
      </select>{" "}
      <span className="muted">({shown.toLocaleString("en-US")} shown)</span>
    </label>
  );
}
