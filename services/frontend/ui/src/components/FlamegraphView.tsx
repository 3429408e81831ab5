// The flamegraph with its top table beside it (Pyroscope's canvas renderer), our search bound to the URL
// with the matches' share, and a max-nodes control.

import "@pyroscope/flamegraph/dist/index.css";
import { lazy, Suspense, useMemo } from "react";
import type { FlamegraphData } from "../api/types";
import { nodeCount, searchShare, type RenderableProfile } from "../flamegraph/convert";
import { formatValue } from "../flamegraph/profileTypes";
import { Spinner } from "./Status";
import { TopTable } from "./TopTable";

// The renderer is most of the bundle: its chunk starts loading with the page (not when first drawn), in
// parallel with the API's answers, while the page and the timeline draw.
const renderer = import("@pyroscope/flamegraph");
const FlamegraphRenderer = lazy(() => renderer.then((m) => ({ default: m.FlamegraphRenderer })));

export const MAX_NODES_CHOICES = [1024, 4096, 8192, 16384, 32768, 65536];

interface Props {
  data: FlamegraphData;
  profile: RenderableProfile;
  unit: string;
  search: string;
  onSearch: (text: string) => void;
  theme: "light" | "dark";
  step?: number;
}

export function FlamegraphView({ data, profile, unit, search, onSearch, theme, step = 4 }: Props) {
  const share = useMemo(() => (step === 4 ? searchShare(data, search) : null), [data, search, step]);
  const sharedQuery = useMemo(() => ({
    searchQuery: search,
    onQueryChange: (v: React.SetStateAction<string | undefined>) => onSearch(typeof v === "function" ? v(search) ?? "" : v ?? ""),
    syncEnabled: true,
    toggleSync: () => undefined,
    id: "flamewatch",
  }), [search, onSearch]);
  return (
    <div className="flamegraph" data-testid="flamegraph-panel" data-nodes={nodeCount(data, step)}>
      {share && search.trim() !== "" && (
        <div className="search-share" role="status" aria-label="search matches">
          “{search}”: {share.matches} frame{share.matches === 1 ? "" : "s"}, {formatValue(share.value, unit)} ={" "}
          <strong>{(share.share * 100).toFixed(2)}%</strong> of the total
        </div>
      )}
      <div className={step === 4 ? "flamegraph-with-table" : "flamegraph-alone"}>
        {step === 4 && <TopTable data={data} unit={unit} search={search} onSearch={onSearch} />}
        {/* The library's own table sums a recursive function's frames; ours counts each stack once. */}
        <div className="flamegraph-canvas">
          <Suspense fallback={<Spinner label="Loading the flamegraph renderer…" />}>
            <FlamegraphRenderer profile={profile as never} showCredit={false} colorMode={theme}
              sharedQuery={sharedQuery as never} onlyDisplay="flamegraph" />
          </Suspense>
        </div>
      </div>
    </div>
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
