// An opened event: its heading with the way back to the list, its facts, its notes (what could not be
// linked and why), then its evidence panes, which each page supplies.

import type { ReactNode } from "react";

interface Props {
  title: ReactNode;
  facts: [string, ReactNode][];
  notes: string[];
  onClose: () => void;
  children: ReactNode;
}

export function EventDetail({ title, facts, notes, onClose, children }: Props) {
  return (
    <section className="panel event-detail" aria-label="event detail">
      <div className="panel-head">
        <h2>{title}</h2>
        <span className="spacer" />
        <button type="button" onClick={onClose} title="back to the list">✕ Close</button>
      </div>
      <dl className="facts" aria-label="facts">
        {facts.map(([name, value]) => (
          <div key={name}><dt>{name}</dt><dd>{value}</dd></div>
        ))}
      </dl>
      {notes.length > 0 && (
        <ul className="notes" aria-label="notes">
          {notes.map((n) => <li key={n}>{n}</li>)}
        </ul>
      )}
      <div className="evidence">{children}</div>
    </section>
  );
}
