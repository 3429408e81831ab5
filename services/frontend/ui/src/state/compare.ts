// The two sides a comparison starts from when the user leaves the single view for it.

import { resolveTime } from "./time";
import type { Side, UiState } from "./url";

/** What "Compare…" starts from: the dragged selection against the whole range, or else the range's
 * first half against its second half, both with the current selector. */
export function compareSides(state: UiState, now: number): { left: Side; right: Side } {
  const side = (from: string, until: string): Side => ({ selector: state.selector, from, until });
  if (state.selFrom && state.selUntil) {
    return { left: side(state.selFrom, state.selUntil), right: side(state.from, state.until) };
  }
  const lo = resolveTime(state.from, now);
  const hi = resolveTime(state.until, now);
  const middle = String(Math.round((lo + hi) / 2));
  return { left: side(String(lo), middle), right: side(middle, String(hi)) };
}
