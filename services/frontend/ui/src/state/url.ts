// Everything the user picked, as URL query parameters: a link reproduces the view, and each change
// that is worth going back to is a browser history entry.

export type View = "single" | "compare" | "targets" | "incidents" | "changes" | "labels";

export interface Side {
  selector: string;
  from: string;
  until: string;
}

export interface UiState {
  view: View;
  /** The tenant read (X-Scope-OrgID), picked in the header; "" for the credential's default. */
  tenant: string;
  /** Profile type id; empty until the API lists types (then the first, CPU when present). */
  type: string;
  selector: string;
  from: string;
  until: string;
  groupBy: string;
  /** A sub-range dragged on the timeline (epoch ms as text), merged instead of the whole range. */
  selFrom: string;
  selUntil: string;
  /** A single profile picked on the timeline (epoch ms). */
  time: string;
  search: string;
  /** The zoomed flamegraph frame: its path of names from below the root (encodeFocus), "" for all. */
  focus: string;
  maxNodes: number;
  /** How the flamegraph is drawn: "" an icicle (root on top), "flame" a flame graph (root at the bottom). */
  orientation: string;
  /** "1": the call stacks inverted (what burns at the root's side, then its callers). */
  invert: string;
  /** What the flamegraph panel shows: "" graph and table, "graph" or "table" alone. */
  panes: string;
  /** The function whose sandwich (callers above, callees below) replaces the flamegraph; "" for none. */
  sandwich: string;
  /** "1": frames are a function's lines (`fn file:line`), merged at line granularity. */
  lines: string;
  /** The function whose lines are listed under the flamegraph (its details); "" for none. */
  details: string;
  refresh: string;
  /** The incident opened on the Incidents page (its id, as its permalink names it); "" for the list alone. */
  incident: string;
  /** The event kind the Incidents page lists (oom_kill, restart, regression); "" for every kind. */
  kind: string;
  /** What changed: the label whose two values are compared (`version`), and the two values (a the baseline). */
  label: string;
  a: string;
  b: string;
  /** What changed compares two values of `label` over the range ("") or the selector over two ranges, the
   * sides' `from`/`until` ("ranges"). */
  changeMode: string;
  /** What changed ranks by the change of each function's self or total share. */
  order: string;
  /** The label explorer's label (its values listed with their shares); "" for service_name, else the first. */
  exploreBy: string;
  /** The two sides of the Compare view; What changed in "ranges" mode reads their ranges. */
  left: Side;
  right: Side;
}

export const DEFAULT_MAX_NODES = 8192;

export const DEFAULT_STATE: UiState = {
  view: "single",
  tenant: "",
  type: "",
  selector: "",
  from: "now-1h",
  until: "now",
  groupBy: "",
  selFrom: "",
  selUntil: "",
  time: "",
  search: "",
  focus: "",
  maxNodes: DEFAULT_MAX_NODES,
  orientation: "",
  invert: "",
  panes: "",
  sandwich: "",
  lines: "",
  details: "",
  refresh: "",
  incident: "",
  kind: "",
  label: "version",
  a: "",
  b: "",
  changeMode: "",
  order: "self",
  exploreBy: "",
  left: { selector: "", from: "now-1h", until: "now-30m" },
  right: { selector: "", from: "now-30m", until: "now" },
};

const VIEWS: View[] = ["single", "compare", "targets", "incidents", "changes", "labels"];

// Plain fields and their query parameter names; the sides of a comparison are l_* and r_*.
const FIELDS = [
  ["tenant", "tenant"],
  ["type", "type"],
  ["selector", "query"],
  ["from", "from"],
  ["until", "until"],
  ["groupBy", "group_by"],
  ["selFrom", "sel_from"],
  ["selUntil", "sel_until"],
  ["time", "time"],
  ["search", "search"],
  ["focus", "focus"],
  ["orientation", "orientation"],
  ["invert", "invert"],
  ["panes", "panes"],
  ["sandwich", "sandwich"],
  ["lines", "lines"],
  ["details", "details"],
  ["refresh", "refresh"],
  ["incident", "incident"],
  ["kind", "kind"],
  ["label", "label"],
  ["a", "a"],
  ["b", "b"],
  ["changeMode", "compare"],
  ["order", "order"],
  ["exploreBy", "explore_by"],
] as const;

const SIDE_FIELDS = [
  ["selector", "query"],
  ["from", "from"],
  ["until", "until"],
] as const;

export function parseState(search: string): UiState {
  const p = new URLSearchParams(search);
  const state: UiState = { ...DEFAULT_STATE, left: { ...DEFAULT_STATE.left }, right: { ...DEFAULT_STATE.right } };
  const view = p.get("view") as View | null;
  if (view && VIEWS.includes(view)) state.view = view;
  for (const [field, param] of FIELDS) state[field] = p.get(param) ?? DEFAULT_STATE[field];
  for (const [side, prefix] of [["left", "l_"], ["right", "r_"]] as const) {
    for (const [field, param] of SIDE_FIELDS) state[side][field] = p.get(prefix + param) ?? DEFAULT_STATE[side][field];
  }
  const maxNodes = Number(p.get("max_nodes"));
  if (Number.isInteger(maxNodes) && maxNodes > 0) state.maxNodes = maxNodes;
  return state;
}

/** The query string for a state; fields at their defaults are left out so links stay short. */
export function stateToSearch(state: UiState): string {
  const p = new URLSearchParams();
  if (state.view !== DEFAULT_STATE.view) p.set("view", state.view);
  for (const [field, param] of FIELDS) if (state[field] !== DEFAULT_STATE[field]) p.set(param, state[field]);
  if (state.maxNodes !== DEFAULT_STATE.maxNodes) p.set("max_nodes", String(state.maxNodes));
  // The sides belong to the Compare view, and their ranges to What changed over two ranges.
  const sideFields = state.view === "compare" ? SIDE_FIELDS
    : state.view === "changes" && state.changeMode === "ranges" ? SIDE_FIELDS.slice(1) : [];
  for (const [side, prefix] of [["left", "l_"], ["right", "r_"]] as const) {
    for (const [field, param] of sideFields) {
      if (state[side][field] !== DEFAULT_STATE[side][field]) p.set(prefix + param, state[side][field]);
    }
  }
  const text = p.toString();
  return text ? `?${text}` : "";
}

/**
 * Changes that only refine what is shown (search text typed, auto-refresh) replace the current history
 * entry; everything else adds one, so the back button steps through what the user looked at.
 */
export function isMinorChange(before: UiState, after: UiState): boolean {
  const strip = (s: UiState) => stateToSearch({ ...s, search: "", refresh: "" });
  return strip(before) === strip(after);
}

/**
 * Another tenant holds other profile types, services and functions: what was picked in the last one
 * goes, and the page picks a type and service of the new one as on a first visit. Ranges stay.
 */
export function switchTenant(state: UiState, tenant: string): Partial<UiState> {
  const cleared = { type: "", selector: "", groupBy: "", selFrom: "", selUntil: "", time: "", search: "", focus: "",
    sandwich: "", details: "", incident: "", a: "", b: "" };
  return { tenant, ...cleared, left: { ...state.left, selector: "" }, right: { ...state.right, selector: "" } };
}

// A focus path is written as collapsed stacks are (names joined by ";"), so it reads plainly in a link;
// a ";" or a backslash inside a name is escaped with a backslash.
export function encodeFocus(path: string[]): string {
  return path.map((name) => name.replace(/[\\;]/g, (c) => `\\${c}`)).join(";");
}

export function decodeFocus(text: string): string[] {
  if (text === "") return [];
  const path: string[] = [];
  let name = "";
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "\\" && i + 1 < text.length) name += text[++i];
    else if (c === ";") {
      path.push(name);
      name = "";
    } else name += c;
  }
  path.push(name);
  return path;
}
