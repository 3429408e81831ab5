// What changed, in URL state: the request the page makes of GET /api/v1/changes, the label values it
// offers (newest last), the Compare view's state for one ranked function, and a regression event turned
// into the What-changed view of the two selections its rule compared.

import { quoteLabelValue, queryText, type ChangesParams } from "../api/client";
import type { Incident, RegressionDetails, Series } from "../api/types";
import { nsToMs, splitQuery } from "./evidence";
import { encodeFocus, type Side, type UiState } from "./url";

export type Order = "self" | "total";

export function orderOf(state: UiState): Order {
  return state.order === "total" ? "total" : "self";
}

/** The selector with `label="value"` added: `{service_name="api"}` → `{service_name="api",version="1.1"}`. */
export function withLabel(selector: string, label: string, value: string): string {
  const s = selector.trim();
  const inner = s.startsWith("{") && s.endsWith("}") ? s.slice(1, -1).trim() : s;
  return `{${inner}${inner ? "," : ""}${label}=${quoteLabelValue(value)}}`;
}

/** The two sides as selections: the selector with each value of the label over the range, or the
 * selector over each side's range. */
export function changeSides(state: UiState): { left: Side; right: Side } {
  if (state.changeMode === "ranges") {
    return {
      left: { selector: state.selector, from: state.left.from, until: state.left.until },
      right: { selector: state.selector, from: state.right.from, until: state.right.until },
    };
  }
  const side = (value: string): Side => ({ selector: withLabel(state.selector, state.label, value), from: state.from,
    until: state.until });
  return { left: side(state.a), right: side(state.b) };
}

/** What the page asks of the API; null while the label's two values are not picked yet. */
export function changesParams(state: UiState, type: string): ChangesParams | null {
  const order = orderOf(state);
  const query = queryText(type, state.selector);
  if (state.changeMode === "ranges") {
    return { query, a_from: state.left.from, a_until: state.left.until, b_from: state.right.from,
      b_until: state.right.until, order };
  }
  if (!state.label || !state.a || !state.b) return null;
  return { query, label: state.label, a: state.a, b: state.b, from: state.from, until: state.until, order };
}

/** The values of the label (query_range grouped by it), in the order they first appear, newest last; the
 * series without the label (grouped under "") are none. */
export function valuesByAppearance(series: Series[], label: string): string[] {
  const first = new Map<string, number>();
  for (const s of series) {
    const value = s.labels[label];
    if (!value || s.points.length === 0) continue;
    const at = Math.min(...s.points.map((p) => p[0]));
    first.set(value, Math.min(at, first.get(value) ?? Infinity));
  }
  return [...first.entries()].sort((x, y) => x[1] - y[1] || x[0].localeCompare(y[0])).map(([v]) => v);
}

/** The pair a first visit compares: the previous value against the newest; null with fewer than two. */
export function defaultPair(values: string[]): { a: string; b: string } | null {
  return values.length < 2 ? null : { a: values[values.length - 2], b: values[values.length - 1] };
}

/** The Compare view of the two selections, zoomed to the function (its heaviest frame) and searching it. */
export function compareViewOfFunction(state: UiState, type: string, name: string): Partial<UiState> {
  return { view: "compare", type, ...changeSides(state), focus: encodeFocus([name]), search: name, selFrom: "",
    selUntil: "", time: "", incident: "" };
}

/** A regression's details, or null when the event carries none in the rule's shape. */
export function regressionDetails(incident: Incident): RegressionDetails | null {
  const d = incident.details as Partial<RegressionDetails> | undefined;
  if (!d || !d.a || !d.b || typeof d.a.query !== "string" || typeof d.b.query !== "string") return null;
  return { ...d, functions: Array.isArray(d.functions) ? d.functions : [] } as RegressionDetails;
}

/** The label a regression compared: its rule's, else the one label whose value differs between the sides. */
export function comparedLabel(incident: Incident, details: RegressionDetails): string {
  if (details.rule?.compare) return details.rule.compare;
  return Object.keys(incident.labels).find((k) => incident.labels[k] === details.b.value) ?? "version";
}

/**
 * The What-changed view of the two selections a regression's rule compared: its query without the compared
 * label (the rule adds `label="value"` last), the two values, over a range holding both sides' windows.
 */
export function changesViewOfRegression(incident: Incident, details: RegressionDetails): Partial<UiState> {
  const label = comparedLabel(incident, details);
  const { type, selector } = splitQuery(details.a.query);
  const suffix = `${label}=${quoteLabelValue(details.a.value)}}`;
  let base: string;
  if (selector.endsWith(suffix)) base = `${selector.slice(0, -suffix.length).replace(/,$/, "")}}`;
  else {
    const own = new Set([label, ...Object.keys(details.rule?.labels ?? {})]);
    const kept = Object.entries(incident.labels).filter(([k]) => !own.has(k));
    base = `{${kept.map(([k, v]) => `${k}=${quoteLabelValue(v)}`).join(",")}}`;
  }
  const from = Math.min(details.a.from, details.b.from);
  const until = Math.max(details.a.until, details.b.until);
  return { view: "changes", type, selector: base === "{}" ? "" : base, label, a: details.a.value, b: details.b.value,
    changeMode: "", from: String(nsToMs(from)), until: String(Math.ceil(until / 1e6)), incident: "", focus: "",
    search: "" };
}

/** A share of the total as a percentage: 0.2013 → "20.13 %". */
export function formatShare(share: number): string {
  return `${(share * 100).toFixed(share !== 0 && Math.abs(share) < 0.001 ? 3 : 2)} %`;
}

/** A change of share, signed: +0.0231 → "+2.31 %". */
export function formatShareChange(change: number): string {
  return `${change > 0 ? "+" : change < 0 ? "−" : "±"}${formatShare(Math.abs(change))}`;
}

/** An adjusted p-value in words: "p = 0.0012", "p < 0.0001". */
export function formatP(p: number): string {
  return p < 1e-4 ? "adjusted p < 0.0001" : `adjusted p = ${Number(p.toPrecision(2))}`;
}
