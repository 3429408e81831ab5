// An event's evidence links (queries with nanosecond times, as the API answers them) turned into what
// the UI asks for: the time range of a request, and the single or compare view's URL state that opens
// the same profiles in the main view.
//
// Nanoseconds since the epoch do not fit a JavaScript number exactly (they pass 2^53), so a link's time
// read from JSON may be off by a few hundred nanoseconds: a single profile is asked for by `time` (the
// API picks the nearest profile) or over a window of ±1 ms around it, never by its exact nanosecond.

import type { TimeRange } from "../api/client";
import type { DiffLink, ProfileLink } from "../api/types";
import type { Side, UiState } from "./url";

const MINUTE_MS = 60_000;
/** How much of the program's life the main view shows around a single profile: before and after it. */
export const CONTEXT_BEFORE_MS = 30 * MINUTE_MS;
export const CONTEXT_AFTER_MS = 5 * MINUTE_MS;

export function nsToMs(ns: number): number {
  return Math.floor(ns / 1e6);
}

/** A query's profile type id and its selector: `memory:inuse_space:…{pod="a"}` → type, `{pod="a"}`. */
export function splitQuery(query: string): { type: string; selector: string } {
  const brace = query.indexOf("{");
  return brace < 0 ? { type: query, selector: "" } : { type: query.slice(0, brace), selector: query.slice(brace) };
}

/** The link's single profile time in ms, or undefined for a merge over its range. */
export function linkTimeMs(link: ProfileLink): number | undefined {
  return link.time ? nsToMs(link.time) : undefined;
}

/** The range a request for the link names, as epoch-ms texts (±1 ms around a single profile). */
export function linkRange(link: ProfileLink): TimeRange {
  const at = linkTimeMs(link);
  if (at !== undefined) return { from: String(at - 1), until: String(at + 1) };
  return { from: String(nsToMs(link.from)), until: String(Math.ceil(link.until / 1e6)) };
}

/** What is cleared when a view is opened from evidence: nothing picked before belongs to these profiles. */
const FRESH = { selFrom: "", selUntil: "", time: "", search: "", focus: "", groupBy: "", incident: "" };

/** The single view's state for a link: a merge over its range, or its one profile picked on a timeline
 * of the program's last half hour before it (and a few minutes after). */
export function singleViewOf(link: ProfileLink): Partial<UiState> {
  const { type, selector } = splitQuery(link.query);
  const at = linkTimeMs(link);
  if (at === undefined) return { ...FRESH, view: "single", type, selector, ...linkRange(link) };
  return { ...FRESH, view: "single", type, selector, from: String(at - CONTEXT_BEFORE_MS),
    until: String(at + CONTEXT_AFTER_MS), time: String(at) };
}

/** The compare view's state for a diff link: its left as the baseline, its right as the comparison. */
export function compareViewOf(diff: DiffLink): Partial<UiState> {
  const side = (link: ProfileLink): Side => ({ selector: splitQuery(link.query).selector, ...linkRange(link) });
  return { ...FRESH, view: "compare", type: splitQuery(diff.left.query).type, left: side(diff.left),
    right: side(diff.right) };
}
