// Time range texts as the API reads them (now, now-1h, epoch ms, RFC 3339), resolved in the browser too
// so the timeline knows its axis.

export const PRESETS = ["5m", "15m", "1h", "6h", "24h", "7d"] as const;

const UNIT_MS: Record<string, number> = { s: 1e3, m: 60e3, h: 3600e3, d: 86400e3, w: 7 * 86400e3 };

/** Milliseconds since the epoch for a time text, or NaN when it cannot be read. */
export function resolveTime(text: string, now: number): number {
  const t = text.trim();
  if (t === "" || t === "now") return now;
  const relative = /^now-(\d+(?:\.\d+)?)([smhdw])$/.exec(t);
  if (relative) return now - Number(relative[1]) * UNIT_MS[relative[2]];
  if (/^\d+$/.test(t)) {
    const n = Number(t);
    // Same reading as the API: up to 11 digits seconds, up to 14 milliseconds, longer nanoseconds.
    return t.length <= 11 ? n * 1e3 : t.length <= 14 ? n : Math.floor(n / 1e6);
  }
  return Date.parse(t);
}

/** The preset a range is, e.g. "1h" for now-1h..now, or null for any other range. */
export function presetOf(from: string, until: string): string | null {
  if (until !== "now") return null;
  const m = /^now-(\d+[mhd])$/.exec(from);
  return m && (PRESETS as readonly string[]).includes(m[1]) ? m[1] : null;
}

/** A short readable form of a range for headings: "last 1h" or two local date-times. */
export function describeRange(from: string, until: string, now: number): string {
  const preset = presetOf(from, until);
  if (preset) return `last ${preset}`;
  return `${formatLocal(resolveTime(from, now))} – ${formatLocal(resolveTime(until, now))}`;
}

export function formatLocal(ms: number): string {
  if (!Number.isFinite(ms)) return "?";
  const d = new Date(ms);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** Value for an <input type="datetime-local"> (local time, to the second). */
export function toLocalInput(ms: number): string {
  return formatLocal(ms).replace(" ", "T");
}

export function fromLocalInput(value: string): string {
  const ms = new Date(value).getTime();
  return Number.isFinite(ms) ? String(Math.round(ms)) : "";
}
