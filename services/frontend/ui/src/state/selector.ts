// Selector text in the browser: what the autocomplete should offer at the cursor (label names after `{`
// or `,`, values after `name=` / `name!=` / `name=~` / `name!~`), and a selector narrowed to one value.

import { escapeLabelValue, quoteLabelValue } from "../api/client";

export type Completion =
  | { kind: "name"; prefix: string; start: number }
  | { kind: "value"; name: string; prefix: string; start: number }
  | null;

export function completionAt(text: string, cursor: number): Completion {
  const before = text.slice(0, cursor);
  const value = /([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)$/.exec(before);
  if (value && insideBraces(before)) {
    return { kind: "value", name: value[1], prefix: value[3], start: cursor - value[3].length };
  }
  const name = /(?:^|[{,])\s*([A-Za-z_][A-Za-z0-9_]*)?$/.exec(before);
  if (name && insideBraces(before) && !insideQuotes(before)) {
    const prefix = name[1] ?? "";
    return { kind: "name", prefix, start: cursor - prefix.length };
  }
  return null;
}

function insideBraces(before: string): boolean {
  return before.lastIndexOf("{") > before.lastIndexOf("}");
}

function insideQuotes(before: string): boolean {
  return (before.replace(/\\./g, "").match(/"/g) ?? []).length % 2 === 1;
}

/** Text after choosing `choice` at a completion point, and where the cursor goes. */
export function applyCompletion(text: string, cursor: number, c: NonNullable<Completion>, choice: string) {
  const rest = text.slice(cursor);
  if (c.kind === "name") {
    const insert = `${choice}="`;
    return { text: text.slice(0, c.start) + insert + rest, cursor: c.start + insert.length };
  }
  const escaped = escapeLabelValue(choice);
  const closing = rest.startsWith('"') ? "" : '"';
  const insert = escaped + closing;
  return { text: text.slice(0, c.start) + insert + rest, cursor: c.start + insert.length + (closing ? 0 : 1) };
}

// One matcher as the selector parser (libs/labels/selector.py) reads it: a name, an operator and a
// double-quoted, single-quoted or raw (backquoted) string, then a comma or the end.
const MATCHER = /\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)\s*(?:,|$)/y;

/** The matchers of a `{…}` selector as written, with their label names; null when the text is not one. */
export function splitMatchers(selector: string): { name: string; text: string }[] | null {
  const s = selector.trim();
  if (s === "") return [];
  if (!s.startsWith("{") || !s.endsWith("}")) return null;
  const inner = s.slice(1, -1);
  const matchers: { name: string; text: string }[] = [];
  MATCHER.lastIndex = 0;
  while (inner.slice(MATCHER.lastIndex).trim() !== "") {
    const m = MATCHER.exec(inner);
    if (!m) return null;
    matchers.push({ name: m[1], text: `${m[1]}${m[2]}${m[3]}` });
  }
  return matchers;
}

/**
 * The selector narrowed to `name="value"`. Its other matchers on `name` give way: the value comes from
 * the selection, so it satisfies them, and one equality reads plainer than `job=~"a|b", job="a"`. A text
 * this cannot read keeps all of it and gets the matcher appended, for the API to judge.
 */
export function narrowSelector(selector: string, name: string, value: string): string {
  const matcher = `${name}=${quoteLabelValue(value)}`;
  const matchers = splitMatchers(selector);
  const kept = matchers === null
    ? [selector.trim().replace(/^\{|\}$/g, "")]
    : matchers.filter((m) => m.name !== name).map((m) => m.text);
  return `{${[...kept, matcher].join(", ")}}`;
}
