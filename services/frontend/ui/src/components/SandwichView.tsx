// A function's sandwich in place of the flamegraph: who called it (its callers stacked above it, a flame
// graph with the function at the bottom) and what it called (an icicle with the function on top), both
// at its total with recursion counted once. Each half zooms on its own.

import { useMemo, useState } from "react";
import { buildLayout, type Frame, type Layout } from "../flamegraph/layout";
import type { Theme } from "../flamegraph/palette";
import { formatValue } from "../flamegraph/profileTypes";
import { sandwich } from "../flamegraph/transform";
import { FlameCanvas, type FrameAction } from "./FlameCanvas";
import { Empty } from "./Status";

interface Props {
  /** The flamegraph the function is read from (not inverted). */
  layout: Layout;
  name: string;
  unit: string;
  theme: Theme;
  matches: Uint8Array | null;
  actions: FrameAction[];
  onClose: () => void;
}

export function SandwichView({ layout, name, unit, theme, matches, actions, onClose }: Props) {
  const fn = layout.names.indexOf(name);
  const halves = useMemo(() => {
    if (fn < 0) return null;
    const { callers, callees } = sandwich(layout, fn);
    return callers.total > 0 ? { callers: buildLayout(callers), callees: buildLayout(callees) } : null;
  }, [layout, fn]);
  const [callersFocus, setCallersFocus] = useState<Frame | null>(null);
  const [calleesFocus, setCalleesFocus] = useState<Frame | null>(null);
  const close = <button type="button" onClick={onClose} title="back to the flamegraph (Escape)">Close sandwich</button>;
  if (!halves) {
    return <Empty>“{name}” is not in this flamegraph. {close}</Empty>;
  }
  const total = halves.callers.total;
  const share = layout.total > 0 ? ` = ${((total / layout.total) * 100).toFixed(2)}% of all` : "";
  return (
    <div className="sandwich" data-testid="sandwich" aria-label={`sandwich of ${name}`}>
      <div className="sandwich-head">
        <span>Sandwich of <code>{name}</code>: total {formatValue(total, unit)}{share}</span>
        <span className="spacer" />
        {close}
      </div>
      <h3>Callers <span className="muted hint">(who called it, outward)</span></h3>
      <FlameCanvas layout={halves.callers} unit={unit} theme={theme} focus={callersFocus} matches={matches} flame
        onZoom={setCallersFocus} actions={actions} title={`callers of ${name}`} />
      <h3>Callees <span className="muted hint">(what it called)</span></h3>
      <FlameCanvas layout={halves.callees} unit={unit} theme={theme} focus={calleesFocus} matches={matches}
        onZoom={setCalleesFocus} actions={actions} title={`callees of ${name}`} />
    </div>
  );
}
