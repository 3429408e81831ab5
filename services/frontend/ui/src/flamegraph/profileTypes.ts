// Readable names and value units of profile types (ids like `process_cpu:cpu:nanoseconds:cpu:nanoseconds`).

import type { ProfileType } from "../api/types";

const NAMES: Record<string, string> = {
  "process_cpu:cpu": "CPU",
  "process_cpu:samples": "CPU (samples)",
  "memory:alloc_space": "Memory allocated (bytes)",
  "memory:alloc_objects": "Memory allocated (objects)",
  "memory:inuse_space": "Memory in use (bytes)",
  "memory:inuse_objects": "Memory in use (objects)",
  "goroutine:goroutine": "Goroutines",
  "goroutine:goroutines": "Goroutines",
  "mutex:delay": "Mutex wait (time)",
  "mutex:contentions": "Mutex contentions",
  "block:delay": "Blocking (time)",
  "block:contentions": "Blocking contentions",
};

/** "CPU", "Memory allocated (bytes)", …; unknown types read as `name sample_type (unit)`. */
export function readableTypeName(t: ProfileType): string {
  return NAMES[`${t.name}:${t.sample_type}`] ?? `${t.name} ${t.sample_type} (${t.sample_unit})`;
}

/** Sort order: CPU first, then memory, then the rest by name. */
export function sortTypes(types: ProfileType[]): ProfileType[] {
  const rank = (t: ProfileType) => {
    const i = Object.keys(NAMES).indexOf(`${t.name}:${t.sample_type}`);
    return i < 0 ? Object.keys(NAMES).length : i;
  };
  return [...types].sort((a, b) => rank(a) - rank(b) || readableTypeName(a).localeCompare(readableTypeName(b)));
}

/** Parses an id back into its parts (the API lists types, but a permalink may name one with no data). */
export function parseTypeId(id: string): ProfileType | null {
  const parts = id.split(":");
  if (parts.length !== 5 || parts.some((p) => p === "")) return null;
  const [name, sample_type, sample_unit, period_type, period_unit] = parts;
  return { id, name, sample_type, sample_unit, period_type, period_unit };
}

/** A value in a type's unit as text: 1.5 s, 12 MB, 3,400. */
export function formatValue(value: number, unit: string): string {
  if (value === 0) return "0";
  if (unit === "nanoseconds") return formatScaled(value / 1e9, [[3600, "h"], [60, "min"], [1, "s"], [1e-3, "ms"], [1e-6, "µs"]], "ns", 1e-9);
  if (unit === "bytes") return formatScaled(value, [[1024 ** 4, "TiB"], [1024 ** 3, "GiB"], [1024 ** 2, "MiB"], [1024, "KiB"]], "B", 1);
  return Math.round(value).toLocaleString("en-US");
}

function formatScaled(value: number, steps: [number, string][], smallest: string, smallestSize: number): string {
  const size = Math.abs(value);
  for (const [limit, suffix] of steps) {
    if (size >= limit) return `${trim(value / limit)} ${suffix}`;
  }
  return `${trim(value / smallestSize)} ${smallest}`;
}

function trim(x: number): string {
  return Number(x.toPrecision(3)).toLocaleString("en-US");
}
