// What the label explorer lists: the labels it offers, the one it shows, and each value of that label with
// its total over the range and its share of the selection, read from query_range grouped by the label.

import type { ProfileType, Series } from "../api/types";

/** A label's value in the selection over the range. */
export interface ValueTotal {
  /** "" for the series without the label (a selector reaches them with `name=""`). */
  value: string;
  series: Series;
  /** The value's amount over the range (`rangeAmount`). */
  total: number;
  /** Its part of the selection's amount, 0 to 1. */
  share: number;
}

// Sample types that describe a state at one moment, as the querier's ProfileType.is_gauge
// (libs/pprof/profile_types.py): its points are averages over the step, not sums.
const GAUGE_SAMPLE_TYPES = ["inuse_space", "inuse_objects", "goroutine", "goroutines"];

const PREFERRED_LABEL = "service_name";

export function isGauge(type: ProfileType): boolean {
  return GAUGE_SAMPLE_TYPES.includes(type.sample_type);
}

/** The labels worth exploring: Pyroscope's derived `__…__` labels repeat the profile type and service. */
export function explorableLabels(names: string[]): string[] {
  return names.filter((n) => !n.startsWith("__"));
}

/** The label the page shows: the one in the URL when the selection has it, else service_name, else the first. */
export function pickedLabel(wanted: string, names: string[]): string {
  if (names.includes(wanted)) return wanted;
  return names.includes(PREFERRED_LABEL) ? PREFERRED_LABEL : names[0] ?? "";
}

/**
 * A series' amount over the range. The querier sums a cumulative type's profiles per step (CPU time, bytes
 * allocated), so the steps add up to the range's total; a gauge's step is a mean over time (bytes in use),
 * so the range's amount is the mean of its steps, as the value's flamegraph (a merge of means) shows it.
 */
export function rangeAmount(points: [number, number][], gauge: boolean): number {
  const sum = points.reduce((acc, [, v]) => acc + v, 0);
  return gauge && points.length > 0 ? sum / points.length : sum;
}

/** The values of `label` with a profile in the range, largest first, with their shares of them all. */
export function valueTotals(series: Series[], label: string, gauge: boolean): ValueTotal[] {
  const values = series
    .filter((s) => s.points.length > 0)
    .map((s) => ({ value: s.labels[label] ?? "", series: s, total: rangeAmount(s.points, gauge) }));
  const all = values.reduce((acc, v) => acc + v.total, 0);
  return values
    .map((v) => ({ ...v, share: all > 0 ? v.total / all : 0 }))
    .sort((a, b) => b.total - a.total || a.value.localeCompare(b.value));
}
