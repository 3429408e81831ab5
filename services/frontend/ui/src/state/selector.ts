// What the label selector's autocomplete should offer at the cursor: label names after `{` or `,`,
// values after `name=` / `name!=` / `name=~` / `name!~`.

import { escapeLabelValue } from "../api/client";

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
