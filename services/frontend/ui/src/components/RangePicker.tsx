// Time range: presets (5m … 7d) and absolute from/to.

import { useState } from "react";
import { describeRange, fromLocalInput, PRESETS, presetOf, resolveTime, toLocalInput } from "../state/time";

interface Props {
  from: string;
  until: string;
  onChange: (from: string, until: string) => void;
  idPrefix: string;
}

export function RangePicker({ from, until, onChange, idPrefix }: Props) {
  const [open, setOpen] = useState(false);
  const preset = presetOf(from, until);
  const now = Date.now();
  const [absFrom, setAbsFrom] = useState("");
  const [absUntil, setAbsUntil] = useState("");
  const openAbsolute = () => {
    setAbsFrom(toLocalInput(resolveTime(from, now)));
    setAbsUntil(toLocalInput(resolveTime(until, now)));
    setOpen((o) => !o);
  };
  return (
    <div className="range-picker">
      <div className="presets" role="group" aria-label="time range">
        {PRESETS.map((p) => (
          <button key={p} type="button" className={p === preset ? "selected" : ""} aria-pressed={p === preset}
            onClick={() => onChange(`now-${p}`, "now")}>
            {p}
          </button>
        ))}
        <button type="button" className={preset ? "" : "selected"} onClick={openAbsolute} aria-expanded={open}
          title="absolute from / to">
          {preset ? "custom" : describeRange(from, until, now)}
        </button>
      </div>
      {open && (
        <form className="absolute-range" onSubmit={(e) => {
          e.preventDefault();
          const f = fromLocalInput(absFrom);
          const u = fromLocalInput(absUntil);
          if (f && u) {
            onChange(f, u);
            setOpen(false);
          }
        }}>
          <label htmlFor={`${idPrefix}-from`}>From</label>
          <input id={`${idPrefix}-from`} type="datetime-local" step="1" value={absFrom} onChange={(e) => setAbsFrom(e.target.value)} />
          <label htmlFor={`${idPrefix}-until`}>To</label>
          <input id={`${idPrefix}-until`} type="datetime-local" step="1" value={absUntil} onChange={(e) => setAbsUntil(e.target.value)} />
          <button type="submit">Apply</button>
        </form>
      )}
    </div>
  );
}
