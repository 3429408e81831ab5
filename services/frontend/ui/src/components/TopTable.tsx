// The top table beside the flamegraph: per function its self and total (recursion counted once), filtered
// by the search; a click on a row (or Enter on it) searches for that function, which highlights its
// frames; its sandwich button opens the function's callers and callees.

import { useMemo, useState } from "react";
import type { FlamegraphData } from "../api/types";
import { formatValue } from "../flamegraph/profileTypes";
import { topRows, type TopRow } from "../flamegraph/totals";

const SHOWN_ROWS = 400; // more rows than anyone scrolls through; keeps a 20,000-node profile light

type Column = "name" | "self" | "total";

const ORDER: Record<Column, (a: TopRow, b: TopRow) => number> = {
  name: (a, b) => a.name.localeCompare(b.name),
  self: (a, b) => b.self - a.self || b.total - a.total,
  total: (a, b) => b.total - a.total || b.self - a.self,
};

export function TopTable({ data, unit, search, onSearch, onSandwich, sandwich = "" }: {
  data: FlamegraphData; unit: string; search: string; onSearch: (text: string) => void;
  /** Opens a function's sandwich; no buttons without it. */
  onSandwich?: (name: string) => void;
  /** The function whose sandwich is shown. */
  sandwich?: string;
}) {
  const [column, setColumn] = useState<Column>("self");
  const all = useMemo(() => topRows(data), [data]);
  const needle = search.trim().toLowerCase();
  const rows = useMemo(() => all.filter((r) => r.name.toLowerCase().includes(needle)).sort(ORDER[column]),
    [all, needle, column]);
  const share = (v: number) => (data.total > 0 ? `${((v / data.total) * 100).toFixed(2)}%` : "");
  const header = (c: Column, label: string) => (
    <th aria-sort={column === c ? (c === "name" ? "ascending" : "descending") : "none"}>
      <button type="button" className="sort" onClick={() => setColumn(c)}>{label}{column === c ? " ▾" : ""}</button>
    </th>
  );
  return (
    <div className="top-table-wrap">
      <table className="top-table" aria-label="top functions" data-testid="top-table">
        <thead>
          <tr>
            {header("name", "Function")}{header("self", "Self")}{header("total", "Total")}
            {onSandwich && <th><span className="visually-hidden">Sandwich</span></th>}
          </tr>
        </thead>
        <tbody>
          {rows.slice(0, SHOWN_ROWS).map((r) => (
            <tr key={r.name} onClick={() => onSearch(r.name)} title="click to highlight its frames" tabIndex={0}
              onKeyDown={(e) => {
                if (e.key !== "Enter" || e.target !== e.currentTarget) return;
                e.preventDefault();
                onSearch(r.name);
              }}
              className={needle !== "" && r.name.toLowerCase() === needle ? "selected" : ""}>
              <td className="fn">{r.name}</td>
              <td className="num">
                <Bar value={r.self} whole={data.total} />{formatValue(r.self, unit)} <span className="muted">{share(r.self)}</span>
              </td>
              <td className="num">
                <Bar value={r.total} whole={data.total} />{formatValue(r.total, unit)} <span className="muted">{share(r.total)}</span>
              </td>
              {onSandwich && (
                // The cell is the button: a <button> in each of 400 rows made every hover frame a third slower.
                <td className={`act${sandwich === r.name ? " selected" : ""}`} role="button" tabIndex={0}
                  aria-label={`sandwich view of ${r.name}`} title="sandwich view: its callers and callees"
                  onClick={(e) => {
                    e.stopPropagation();
                    onSandwich(r.name);
                  }}
                  onKeyDown={(e) => {
                    if (e.key !== "Enter" && e.key !== " ") return;
                    e.preventDefault();
                    e.stopPropagation();
                    onSandwich(r.name);
                  }}>⇅</td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
      {rows.length > SHOWN_ROWS && <div className="muted more">{rows.length - SHOWN_ROWS} more functions: search to narrow</div>}
      {rows.length === 0 && <div className="muted more">No function matches “{search}”.</div>}
    </div>
  );
}

function Bar({ value, whole }: { value: number; whole: number }) {
  return <span className="bar" style={{ width: `${whole > 0 ? (value / whole) * 100 : 0}%` }} aria-hidden="true" />;
}
