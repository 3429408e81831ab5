// Frame colours: a function keeps its colour wherever it appears and across reloads (a hash of its name
// picks from a warm palette), in light and dark; "other" and the root stand apart from every function;
// frames that do not match a search, and the ancestors above a zoomed frame, are greyed.

import { diffColor } from "./diff";

export type Theme = "light" | "dark";

export const OTHER_NAME = "other";
export const ROOT_NAME = "total";

// Hues from red through orange to yellow, as flamegraphs are expected to look; two lightnesses per hue
// so neighbours with close hues still differ.
const HUES = [2, 10, 18, 26, 34, 42, 50];
const LIGHTNESS: Record<Theme, [number, number]> = { light: [62, 70], dark: [40, 47] };
const SATURATION: Record<Theme, number> = { light: 78, dark: 62 };

function buildPalette(theme: Theme): string[] {
  const [a, b] = LIGHTNESS[theme];
  return HUES.flatMap((h) => [`hsl(${h}, ${SATURATION[theme]}%, ${a}%)`, `hsl(${h}, ${SATURATION[theme]}%, ${b}%)`]);
}

export const PALETTES: Record<Theme, string[]> = { light: buildPalette("light"), dark: buildPalette("dark") };

/** Colours that are not a function's: blue-grey "other", neutral root, greyed (dimmed) frames. */
export const SPECIAL: Record<Theme, { other: string; root: string; dimmed: string; ancestor: string; text: string; dimmedText: string }> = {
  light: { other: "hsl(210, 22%, 72%)", root: "hsl(220, 10%, 80%)", dimmed: "hsl(220, 12%, 92%)", ancestor: "hsl(220, 10%, 85%)",
    text: "#1d2330", dimmedText: "#98a2b3" },
  dark: { other: "hsl(210, 18%, 36%)", root: "hsl(220, 8%, 32%)", dimmed: "hsl(220, 10%, 20%)", ancestor: "hsl(220, 8%, 27%)",
    text: "#f2f4f7", dimmedText: "#667085" },
};

/** FNV-1a over the name's UTF-16 code units: cheap, and the same name always lands on the same colour. */
export function nameHash(name: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) {
    h ^= name.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

export function functionColor(name: string, theme: Theme): string {
  if (name === OTHER_NAME) return SPECIAL[theme].other;
  if (name === ROOT_NAME) return SPECIAL[theme].root;
  const palette = PALETTES[theme];
  return palette[nameHash(name) % palette.length];
}

/** Colours of every name, computed once per flamegraph and theme rather than per drawn frame. */
export function nameColors(names: string[], theme: Theme): string[] {
  return names.map((n) => functionColor(n, theme));
}

/** A diff frame's colour: diff.ts's scale (green shrank, red grew), "other" kept apart. */
export function diffFrameColor(name: string, change: number, theme: Theme): string {
  return name === OTHER_NAME ? SPECIAL[theme].other : diffColor(change);
}
