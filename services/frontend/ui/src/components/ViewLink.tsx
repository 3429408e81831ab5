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

export function ViewLink({ state, patch, update, children, className, title }: Props) {
  const href = stateToSearch({ ...state, ...patch }) || "?";
  const follow = (e: React.MouseEvent) => {
    if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    update(patch);
  };
  return <a href={href} onClick={follow} className={className} title={title}>{children}</a>;
}
