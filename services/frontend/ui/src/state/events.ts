// Events as the pages show them: readable kind names, the program an event happened to, and figures
// (ages, memory) in words. Kinds are libs/events/model.py's.

import { formatValue } from "../flamegraph/profileTypes";

export const INCIDENT_KINDS: [string, string][] = [["oom_kill", "OOM kill"], ["restart", "Restart"], ["regression", "Regression"]];

export function kindName(kind: string): string {
  return INCIDENT_KINDS.find(([k]) => k === kind)?.[1] ?? kind;
}

// The labels that name a program, most telling first; the rest of an event's labels are shown in full.
const PROGRAM_LABELS = ["service_name", "namespace", "pod", "container"];

/** A short name of the program: its service_name, else namespace/pod/container, else every label. */
export function programName(labels: Record<string, string>): string {
  if (labels.service_name) return labels.service_name;
  const k8s = PROGRAM_LABELS.slice(1).map((n) => labels[n]).filter(Boolean);
  if (k8s.length) return k8s.join("/");
  return Object.entries(labels).map(([k, v]) => `${k}=${v}`).join(", ");
}

/** "4.2 s", "3 min 10 s", "2 h 5 min" for a duration in nanoseconds. */
export function formatAge(ns: number): string {
  const s = ns / 1e9;
  if (s < 60) return `${Number(s.toPrecision(2))} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
  return `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min`;
}

export function formatMemoryLimit(bytes: number): string {
  return bytes > 0 ? formatValue(bytes, "bytes") : "none known";
}
