// The one module that talks to the REST API under /api/v1: components never build URLs by hand, nor
// headers: every call names the tenant picked in the header (X-Scope-OrgID), set once by the App.

import type { ChangesAnswer, DiffData, FlamegraphAnswer, Incident, ProfileType, RangeAnswer, Target, Tenant } from "./types";

/** An answer other than 2xx, carrying the server's own message. */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

export interface TimeRange {
  from: string;
  until: string;
}

// Escapes of a double-quoted selector string, as the selector parser (libs/labels/selector.py) reads
// them: Go's, so any label value round-trips, whatever quotes, backslashes or control characters it has.
const ESCAPES: Record<string, string> = {
  "\\": "\\\\",
  '"': '\\"',
  "\x07": "\\a",
  "\b": "\\b",
  "\f": "\\f",
  "\n": "\\n",
  "\r": "\\r",
  "\t": "\\t",
  "\v": "\\v",
};
// What Python's str.isprintable() refuses: control, format, private, unassigned and surrogate code
// points (\p{C}), and separators (\p{Z}) other than the space.
const NOT_PRINTABLE = /^[\p{C}\p{Z}]$/u;

function escapeChar(char: string): string {
  if (char in ESCAPES) return ESCAPES[char];
  if (char === " " || !NOT_PRINTABLE.test(char)) return char;
  const code = char.codePointAt(0)!;
  const hex = (digits: number) => code.toString(16).padStart(digits, "0");
  return code < 0x80 ? `\\x${hex(2)}` : code <= 0xffff ? `\\u${hex(4)}` : `\\U${hex(8)}`;
}

/** A label value's text between the double quotes of a selector (what goes after `name="`). */
export function escapeLabelValue(value: string): string {
  return Array.from(value, escapeChar).join("");
}

/** A label value as a selector string: double-quoted, escaped. */
export function quoteLabelValue(value: string): string {
  return `"${escapeLabelValue(value)}"`;
}

/** The selector matching exactly these labels, e.g. `{service_name="demo"}`; `{}` for none. */
export function exactSelector(labels: Record<string, string>): string {
  return `{${Object.entries(labels).map(([name, value]) => `${name}=${quoteLabelValue(value)}`).join(",")}}`;
}

/** A query: profile type id followed by a label selector, e.g. `process_cpu:…{job="demo"}`. */
export function queryText(profileType: string, selector: string): string {
  const s = selector.trim();
  return `${profileType}${s === "" ? "{}" : s}`;
}

/** The two selections of GET /api/v1/changes: `query` with `label`="`a`" against `label`="`b`" over one
 * range, or `a_query` and `b_query` over a range each. */
export interface ChangesParams {
  query?: string;
  label?: string;
  a?: string;
  b?: string;
  a_query?: string;
  b_query?: string;
  from?: string;
  until?: string;
  a_from?: string;
  a_until?: string;
  b_from?: string;
  b_until?: string;
  order: "self" | "total";
}

type Params = Record<string, string | number | string[] | undefined>;

export function apiUrl(path: string, params: Params = {}): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined || value === "") continue;
    for (const v of Array.isArray(value) ? value : [value]) search.append(key, String(v));
  }
  const qs = search.toString();
  return `/api/v1/${path}${qs ? `?${qs}` : ""}`;
}

let tenant = "";

/** The tenant every call from now on reads; "" for the credential's default (no header). */
export function setTenant(name: string): void {
  tenant = name;
}

/** The headers of a call: what it accepts and, once one is picked, the tenant it reads. */
export function requestHeaders(accept: string): Record<string, string> {
  return tenant ? { accept, "x-scope-orgid": tenant } : { accept };
}

async function get(path: string, params: Params, accept: string, signal?: AbortSignal): Promise<Response> {
  let response: Response;
  try {
    response = await fetch(apiUrl(path, params), { signal, headers: requestHeaders(accept) });
  } catch (err) {
    if ((err as Error).name === "AbortError") throw err;
    throw new ApiError(`cannot reach the Flamewatch API: ${(err as Error).message}`, 0);
  }
  if (!response.ok) throw new ApiError(await errorMessage(response), response.status);
  return response;
}

async function getJson<T>(path: string, params: Params, signal?: AbortSignal): Promise<T> {
  return (await (await get(path, params, "application/json", signal)).json()) as T;
}

/** Saves a blob as a file, as a download link would (a link cannot send the tenant header). */
export function saveFile(blob: Blob, fileName: string): void {
  const url = URL.createObjectURL(blob);
  const link = document.createElement("a");
  link.href = url;
  link.download = fileName;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

async function errorMessage(response: Response): Promise<string> {
  const text = await response.text();
  try {
    const body = JSON.parse(text) as { error?: string; detail?: unknown };
    if (body.error) return body.error;
    if (body.detail) return typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail);
  } catch {
    // not JSON: fall through to the raw text
  }
  return text.trim() || `${response.status} ${response.statusText}`;
}

export const api = {
  tenants: (signal?: AbortSignal) => getJson<{ data: Tenant[] }>("tenants", {}, signal).then((a) => a.data),

  profileTypes: (range: TimeRange, signal?: AbortSignal) =>
    getJson<{ data: ProfileType[] }>("profile_types", { from: range.from, until: range.until }, signal).then(
      (a) => a.data,
    ),

  labelNames: (match: string, range: TimeRange, signal?: AbortSignal) =>
    getJson<{ data: string[] }>("labels", { "match[]": match, from: range.from, until: range.until }, signal).then(
      (a) => a.data,
    ),

  labelValues: (name: string, match: string, range: TimeRange, signal?: AbortSignal) =>
    getJson<{ data: string[] }>(
      `label/${encodeURIComponent(name)}/values`,
      { "match[]": match, from: range.from, until: range.until },
      signal,
    ).then((a) => a.data),

  queryRange: (query: string, range: TimeRange, groupBy: string, signal?: AbortSignal) =>
    getJson<RangeAnswer>(
      "query_range",
      { query, from: range.from, until: range.until, group_by: groupBy || undefined },
      signal,
    ),

  /** The merge as a flamegraph; with `granularity` "lines" each frame is a function's line (`fn file:line`). */
  flamegraph: (query: string, range: TimeRange, maxNodes: number, time?: number, signal?: AbortSignal,
    granularity?: "lines") =>
    getJson<FlamegraphAnswer>(
      "query",
      { query, from: range.from, until: range.until, time, format: "flamegraph", max_nodes: maxNodes, granularity },
      signal,
    ),

  diff: (left: { query: string; range: TimeRange }, right: { query: string; range: TimeRange }, maxNodes: number,
    signal?: AbortSignal) =>
    getJson<{ flamegraph: DiffData }>(
      "diff",
      {
        left_query: left.query,
        left_from: left.range.from,
        left_until: left.range.until,
        right_query: right.query,
        right_from: right.range.from,
        right_until: right.range.until,
        max_nodes: maxNodes,
      },
      signal,
    ).then((a) => a.flamegraph),

  /** What changed from selection a to b, function by function (ChangesParams: two values of a label, or
   * two whole selections with a range each). */
  changes: (params: ChangesParams, signal?: AbortSignal) => getJson<ChangesAnswer>("changes", { ...params }, signal),

  targets: (signal?: AbortSignal) =>
    getJson<{ data: { activeTargets: Target[] } }>("targets", {}, signal).then((a) => a.data.activeTargets),

  /** Incidents in a range whose labels match the selector, newest first; `kinds` empty for every kind. */
  incidents: (range: TimeRange, selector: string, kinds: string[], signal?: AbortSignal) =>
    getJson<{ incidents: Incident[] }>(
      "incidents",
      { from: range.from, until: range.until, query: selector.trim() || undefined, kind: kinds },
      signal,
    ).then((a) => a.incidents),

  /** One incident by its id, as its permalink names it. */
  incident: (id: string, signal?: AbortSignal) =>
    getJson<Incident>(`incidents/${encodeURIComponent(id)}`, {}, signal),

  /** The merge as gzipped pprof: its URL for a link, and the download itself (opens in `go tool pprof`). */
  pprofUrl: (query: string, range: TimeRange, time?: number) => apiUrl("query", pprofParams(query, range, time)),

  downloadPprof: async (query: string, range: TimeRange, time: number | undefined, fileName: string) =>
    saveFile(await (await get("query", pprofParams(query, range, time), "application/octet-stream")).blob(), fileName),
};

function pprofParams(query: string, range: TimeRange, time?: number): Params {
  return { query, from: range.from, until: range.until, time, format: "pprof" };
}
