// The ranked changes of What changed (and of a regression): each function's share on both sides, the
// change with its 95 % interval drawn as a small bar on one scale for the whole table, and whether the
// data can tell it from noise (the adjusted p-value on hover). A row's click opens the diff flamegraph.

import type { ChangeMeasure, FunctionChange } from "../api/types";
import { formatP, formatShare, formatShareChange, type Order } from "../state/changes";
import { type UiState } from "../state/url";
import { isPlainClick, ViewLink } from "./ViewLink";

const BAR_WIDTH = 120;
const BAR_HEIGHT = 14;

/** The largest distance from zero the table's bars draw, so every row shares one scale. */
export function barScale(measures: ChangeMeasure[]): number {
  const far = measures.flatMap((m) => [m.change, m.low ?? 0, m.high ?? 0].map(Math.abs));
  return Math.max(1e-9, ...far);
}

/** The change as a dot on a line from its interval's low to its high, zero in the middle. */
export function ChangeBar({ measure, scale }: { measure: ChangeMeasure; scale: number }) {
  const half = BAR_WIDTH / 2;
  const x = (v: number) => half + (v / scale) * (half - 4);
  const tone = !measure.significant ? "flat" : measure.change > 0 ? "grew" : "shrank";
  const interval = measure.low !== null && measure.high !== null
    ? `95 % interval ${formatShareChange(measure.low)} to ${formatShareChange(measure.high)}`
    : "no interval: a side has a single profile";
  return (
    <svg className={`change-bar ${tone}`} width={BAR_WIDTH} height={BAR_HEIGHT} role="img" aria-label={interval}>
      <title>{interval}</title>
      <line className="zero" x1={half} x2={half} y1={0} y2={BAR_HEIGHT} />
      {measure.low !== null && measure.high !== null && (
        <line className="interval" x1={x(measure.low)} x2={x(measure.high)} y1={BAR_HEIGHT / 2} y2={BAR_HEIGHT / 2} />
      )}
      <circle className="estimate" cx={x(measure.change)} cy={BAR_HEIGHT / 2} r={3.5} />
    </svg>
  );
}

export function Significance({ measure }: { measure: Pick<ChangeMeasure, "p" | "significant"> }) {
  return (
    <span className={`significance ${measure.significant ? "yes" : "no"}`} title={formatP(measure.p)}>
      {measure.significant ? "significant" : "not significant"}
    </span>
  );
}

interface TableProps {
  functions: FunctionChange[];
  order: Order;
  /** The Compare view's state for a function (a row's click and its link). */
  compareOf: (name: string) => Partial<UiState>;
  state: UiState;
  update: (patch: Partial<UiState>) => void;
}

export function ChangesTable({ functions, order, compareOf, state, update }: TableProps) {
  const scale = barScale(functions.map((f) => f[order]));
  return (
    <table className="changes-table" aria-label="ranked changes">
      <thead>
        <tr>
          <th>Function</th>
          <th className={order === "self" ? "ranked" : ""} title="share of the total in the function itself">Self a → b</th>
          <th className={order === "total" ? "ranked" : ""} title="share of the total in the function and its callees">Total a → b</th>
          <th>Change of {order} share</th>
          <th><span className="visually-hidden">interval</span></th>
          <th>Significance</th>
        </tr>
      </thead>
      <tbody>
        {functions.map((f) => {
          const open = (e: React.MouseEvent) => {
            if (isPlainClick(e) && !(e.target as HTMLElement).closest("a")) update(compareOf(f.name));
          };
          const m = f[order];
          return (
            <tr key={f.name} data-function={f.name} onClick={open} title="open the diff flamegraph of the two selections">
              <td className="fn">
                <ViewLink state={state} patch={compareOf(f.name)} update={update}>{f.name}</ViewLink>
              </td>
              <td className="num">{formatShare(f.self.a)} → {formatShare(f.self.b)}</td>
              <td className="num">{formatShare(f.total.a)} → {formatShare(f.total.b)}</td>
              <td className={`num change ${m.change > 0 ? "grew" : m.change < 0 ? "shrank" : ""}`}>{formatShareChange(m.change)}</td>
              <td><ChangeBar measure={m} scale={scale} /></td>
              <td><Significance measure={m} /></td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}
