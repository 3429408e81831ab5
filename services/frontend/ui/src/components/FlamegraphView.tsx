// The flamegraph with its top table beside it: our canvas renderer, the search bound to the URL with the
// matches' share, the zoomed frame's breadcrumbs (also in the URL), and a max-nodes control. A page that
// keeps the panel's options offers them too: icicle or flame, inverted stacks, graph and/or table, a
// function's sandwich, and exports of what is shown.

import { useCallback, useEffect, useMemo, useRef } from "react";
import type { FlamegraphData } from "../api/types";
import { nodeCount, searchShare } from "../flamegraph/convert";
import { ancestry, buildLayout, findFocus, matchingNames, nameOf, pathOf, type Frame, type Layout } from "../flamegraph/layout";
import type { Theme } from "../flamegraph/palette";
import { formatValue } from "../flamegraph/profileTypes";
import { splitLineName } from "../flamegraph/lines";
import { invert } from "../flamegraph/transform";
import { decodeFocus, encodeFocus, type UiState } from "../state/url";
import { FlameCanvas, type FrameAction } from "./FlameCanvas";
import { ExportMenu } from "./ExportMenu";
import { copyWithNotice, useNotice } from "./copy";
import { SandwichView } from "./SandwichView";
import { TopTable } from "./TopTable";

/** The panel's options a page keeps in its URL. */
export type FlameOptions = Pick<UiState, "orientation" | "invert" | "panes" | "sandwich" | "lines" | "details">;

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
  /** The panel's options and where their changes go; without them it offers none (a diff's panes). */
  options?: FlameOptions;
  onOptions?: (patch: Partial<FlameOptions>) => void;
  /** The file name exports start with. */
  fileName?: string;
}

const NO_OPTIONS: FlameOptions = { orientation: "", invert: "", panes: "", sandwich: "", lines: "", details: "" };

export function FlamegraphView({ data, unit, search, onSearch, focus, onFocus, theme, step = 4, table = true,
  growth = false, options = NO_OPTIONS, onOptions, fileName = "flamegraph" }: Props) {
  const base = useMemo(() => buildLayout(data, step), [data, step]);
  const inverted = step === 4 && options.invert === "1";
  const shown = useMemo(() => (inverted ? invert(base) : data), [base, data, inverted]);
  const layout = useMemo(() => (inverted ? buildLayout(shown) : base), [base, shown, inverted]);
  const path = useMemo(() => decodeFocus(focus), [focus]);
  const focusFrame = useMemo(() => findFocus(layout, path), [layout, path]);
  const matches = useMemo(() => matchingNames(layout.names, search), [layout, search]);
  const share = useMemo(() => (step === 4 ? searchShare(data, search) : null), [data, search, step]);
  const zoom = useCallback((frame: Frame | null) => onFocus(frame ? encodeFocus(pathOf(layout, frame)) : ""), [layout, onFocus]);
  const canvas = useRef<HTMLCanvasElement>(null);
  const flame = options.orientation === "flame";
  const sandwiched = step === 4 && options.sandwich !== "" && onOptions !== undefined;
  const showTable = step === 4 && table && options.panes !== "graph";
  const showGraph = !(step === 4 && table && options.panes === "table");
  useEscapeToReset(focus !== "" || sandwiched, () => (sandwiched ? onOptions?.({ sandwich: "" }) : onFocus("")));
  const [notice, say] = useNotice();
  const openSandwich = useCallback((name: string) => onOptions?.({ sandwich: name }), [onOptions]);
  const actions: FrameAction[] = useMemo(() => [
    ...(step === 4 && onOptions ? [{ label: "Sandwich view", run: openSandwich },
      { label: "Function details", run: (name: string) => onOptions({ details: splitLineName(name)?.fn ?? name }) }] : []),
    { label: "Highlight in search", run: (name: string) => onSearch(name) },
    { label: "Copy function name",
      run: (name: string) => void copyWithNotice(name, say, `Copied “${name}”`, "select it in the table") },
  ], [step, onOptions, openSandwich, onSearch, say]);

  return (
    <div className="flamegraph" data-testid="flamegraph-panel" data-nodes={nodeCount(data, step)} data-total={data.total}>
      <div className="flame-toolbar">
        <input type="search" name="flamegraph-search" aria-label="search functions" placeholder="Search functions…"
          value={search} onChange={(e) => onSearch(e.target.value)} />
        {!sandwiched && (
          <Breadcrumbs layout={layout} focus={focusFrame} missing={path.length > 0 && !focusFrame ? path[path.length - 1] : null}
            onZoom={zoom} />
        )}
        {sandwiched && <span className="spacer" />}
        {onOptions && (
          <OptionsBar options={options} onOptions={(patch) => {
            // Another tree has other paths: a zoom into the last one would not be found in it.
            if (patch.invert !== undefined || patch.lines !== undefined) onFocus("");
            onOptions(patch);
          }} single={step === 4} table={table} />
        )}
        {notice && <span className="copy-notice" role="status">{notice}</span>}
        {onOptions && (
          <ExportMenu canvas={sandwiched ? null : canvas} layout={layout} data={shown} unit={unit}
            fileName={inverted ? `${fileName}-inverted` : fileName} />
        )}
      </div>
      {share && search.trim() !== "" && (
        <div className="search-share" role="status" aria-label="search matches">
          “{search}”: {share.matches} frame{share.matches === 1 ? "" : "s"}, {formatValue(share.value, unit)} ={" "}
          <strong>{(share.share * 100).toFixed(2)}%</strong> of the total
        </div>
      )}
      <div className={showTable && showGraph ? "flamegraph-with-table" : "flamegraph-alone"}>
        {showTable && <TopTable data={data} unit={unit} search={search} onSearch={onSearch}
          onSandwich={onOptions ? openSandwich : undefined} sandwich={options.sandwich} />}
        {showGraph && (
          <div className="flamegraph-canvas">
            {sandwiched
              ? <SandwichView layout={base} name={options.sandwich} unit={unit} theme={theme} matches={matches}
                  actions={actions} onClose={() => onOptions?.({ sandwich: "" })} />
              : <FlameCanvas layout={layout} unit={unit} theme={theme} focus={focusFrame} matches={matches} onZoom={zoom}
                  growth={growth} flame={flame} actions={actions} canvasRef={canvas}
                  title={inverted ? "inverted flamegraph" : "flamegraph"} />}
          </div>
        )}
      </div>
    </div>
  );
}

function OptionsBar({ options, onOptions, single, table }: {
  options: FlameOptions; onOptions: (patch: Partial<FlameOptions>) => void; single: boolean; table: boolean;
}) {
  const choice = (field: "orientation" | "panes", value: string, label: string, title: string) => (
    <button type="button" className={options[field] === value ? "selected" : ""} aria-pressed={options[field] === value}
      title={title} onClick={() => onOptions({ [field]: value })}>{label}</button>
  );
  return (
    <div className="flame-options">
      <span className="segmented" role="group" aria-label="orientation">
        {choice("orientation", "", "Icicle", "the root on top, callees below their callers")}
        {choice("orientation", "flame", "Flame", "the root at the bottom, callees above their callers")}
      </span>
      {single && (
        <label title="start each stack at the function that burns, then its callers">
          <input type="checkbox" checked={options.invert === "1"} onChange={(e) => onOptions({ invert: e.target.checked ? "1" : "" })} />
          Invert
        </label>
      )}
      {single && (
        <label title="split each function into its lines (file:line), where the profile has line information">
          <input type="checkbox" checked={options.lines === "1"} onChange={(e) => onOptions({ lines: e.target.checked ? "1" : "" })} />
          Lines
        </label>
      )}
      {single && table && (
        <span className="segmented" role="group" aria-label="panes">
          {choice("panes", "", "Both", "the table and the graph")}
          {choice("panes", "graph", "Graph", "the graph only, full width")}
          {choice("panes", "table", "Table", "the table only, full width")}
        </span>
      )}
    </div>
  );
}

/** Escape steps back (out of a zoom, or a sandwich), unless the key is meant for a field being typed in. */
function useEscapeToReset(active: boolean, reset: () => void) {
  const latest = useRef(reset);
  latest.current = reset;
  useEffect(() => {
    if (!active) return;
    const onKey = (e: KeyboardEvent) => {
      const target = e.target as HTMLElement | null;
      if (e.key !== "Escape" || target?.closest("input, select, textarea, [role=menu]")) return;
      latest.current();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [active]);
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
