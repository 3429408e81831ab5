// The list of events of a page (incidents today; regressions later): one row per event with its kind,
// time, program and the page's own columns, newest first as the API answers. A click anywhere on a row
// opens it; its time is also a link (the permalink), for a new tab or to copy.

import type { ReactNode } from "react";
import type { Incident } from "../../api/types";
import { kindName, programName } from "../../state/events";
import { nsToMs } from "../../state/evidence";
import { formatLocal } from "../../state/time";
import { stateToSearch, type UiState } from "../../state/url";
import { isPlainClick } from "../ViewLink";

export interface EventRowData {
  id: string;
  kind: string;
  kindName: string;
  timeMs: number;
  program: string;
  labels: Record<string, string>;
  /** The page's own columns, in the order of `EventTable`'s `columns`. */
  cells: ReactNode[];
  /** The event's permalink (query string). */
  href: string;
}

/** An incident's row: what every kind shows, then the page's own `cells`. */
export function incidentRowData(i: Incident, state: UiState, cells: ReactNode[]): EventRowData {
  return { id: String(i.id), kind: i.kind, kindName: kindName(i.kind), timeMs: nsToMs(i.time), program: programName(i.labels),
    labels: i.labels, href: stateToSearch({ ...state, incident: String(i.id) }), cells };
}

interface TableProps {
  label: string;
  columns: string[];
  rows: EventRowData[];
  selected: string;
  onOpen: (id: string) => void;
}

export function EventTable({ label, columns, rows, selected, onOpen }: TableProps) {
  return (
    <table className="events-table" aria-label={label}>
      <thead>
        <tr><th>Kind</th><th>Time</th><th>Program</th>{columns.map((c) => <th key={c}>{c}</th>)}</tr>
      </thead>
      <tbody>
        {rows.map((row) => <EventRow key={row.id} row={row} selected={row.id === selected} onOpen={onOpen} />)}
      </tbody>
    </table>
  );
}

export function EventRow({ row, selected, onOpen }: { row: EventRowData; selected: boolean; onOpen: (id: string) => void }) {
  // The row opens the event; a plain click on its link bubbles up to the row, another opens a new tab.
  const open = (e: React.MouseEvent) => {
    if (isPlainClick(e)) onOpen(row.id);
  };
  const follow = (e: React.MouseEvent) => {
    if (isPlainClick(e)) e.preventDefault();
  };
  return (
    <tr className={selected ? "selected" : ""} aria-selected={selected} data-event-id={row.id} onClick={open}>
      <td><KindBadge kind={row.kind} name={row.kindName} /></td>
      <td><a href={row.href} onClick={follow}>{formatLocal(row.timeMs)}</a></td>
      <td className="labels" title={Object.entries(row.labels).map(([k, v]) => `${k}="${v}"`).join(", ")}>
        <strong>{row.program}</strong>
        <div>{Object.entries(row.labels).map(([k, v]) => <span key={k} className="label">{k}="{v}"</span>)}</div>
      </td>
      {row.cells.map((cell, i) => <td key={i}>{cell}</td>)}
    </tr>
  );
}

export function KindBadge({ kind, name }: { kind: string; name: string }) {
  return <span className={`event-kind kind-${kind}`}>{name}</span>;
}
