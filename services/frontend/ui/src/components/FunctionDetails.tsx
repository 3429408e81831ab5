// A function's details under the flamegraph: the same merge at line granularity, read for that function's
// lines (file and line number, self and total each), when the profiles carry line information.

import { api, type TimeRange } from "../api/client";
import { functionLines } from "../flamegraph/lines";
import { formatValue } from "../flamegraph/profileTypes";
import { Empty, ErrorBox, Spinner } from "./Status";
import { useApi } from "./useApi";

// Lines split every function's frames: more nodes than the flamegraph's keep the function's lines apart.
const LINE_NODES = 65536;

interface Props {
  fn: string;
  query: string;
  range: TimeRange;
  time?: number;
  tick: number;
  unit: string;
  onClose: () => void;
}

export function FunctionDetails({ fn, query, range, time, tick, unit, onClose }: Props) {
  const merged = useApi((s) => api.flamegraph(query, range, LINE_NODES, time, s, "lines"),
    `${query}|${range.from}|${range.until}|${time}|${tick}`);
  const rows = merged.data ? functionLines(merged.data.flamegraph, fn) : [];
  const whole = merged.data?.flamegraph.total ?? 0;
  const share = (v: number) => (whole > 0 ? `${((v / whole) * 100).toFixed(2)}%` : "");
  const files = [...new Set(rows.map((r) => r.file))];
  return (
    <section className="function-details" aria-label={`details of ${fn}`}>
      <div className="panel-head">
        <h3>Function details: <code>{fn}</code></h3>
        {files.length > 0 && <span className="muted">in {files.join(", ")}</span>}
        <span className="spacer" />
        <button type="button" onClick={onClose}>Close</button>
      </div>
      {merged.error && <ErrorBox title="The lines could not be loaded" message={merged.error} />}
      {!merged.error && merged.loading && !merged.data && <Spinner label="Merging by line…" />}
      {merged.data && rows.length === 0 && (
        <Empty>No line information for “{fn}” in these profiles (its frames carry no file and line).</Empty>
      )}
      {rows.length > 0 && (
        <table className="top-table" aria-label="function lines">
          <thead><tr><th>File</th><th>Line</th><th>Self</th><th>Total</th></tr></thead>
          <tbody>
            {rows.map((r) => (
              <tr key={`${r.file}:${r.line}`}>
                <td className="fn">{r.file}</td>
                <td className="num">{r.line}</td>
                <td className="num">{formatValue(r.self, unit)} <span className="muted">{share(r.self)}</span></td>
                <td className="num">{formatValue(r.total, unit)} <span className="muted">{share(r.total)}</span></td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
