// A link to another view's URL state: a plain click changes the view in place (a history step), a
// middle or modified click opens the same state in a new tab, as any permalink does.

import type { ReactNode } from "react";
import { stateToSearch, type UiState } from "../state/url";

interface Props {
  state: UiState;
  patch: Partial<UiState>;
  update: (patch: Partial<UiState>) => void;
  children: ReactNode;
  className?: string;
  title?: string;
}

/** A left click with no modifier key: the page handles it; any other click is the browser's (a new tab). */
export function isPlainClick(e: React.MouseEvent): boolean {
  return e.button === 0 && !e.metaKey && !e.ctrlKey && !e.shiftKey && !e.altKey;
}

export function ViewLink({ state, patch, update, children, className, title }: Props) {
  const href = stateToSearch({ ...state, ...patch }) || "?";
  const follow = (e: React.MouseEvent) => {
    if (!isPlainClick(e)) return;
    e.preventDefault();
    update(patch);
  };
  return <a href={href} onClick={follow} className={className} title={title}>{children}</a>;
}
