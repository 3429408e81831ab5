// Loading, empty and error states, one look everywhere.

import type { ReactNode } from "react";

export function Spinner({ label }: { label: string }) {
  return (
    <div className="status loading" role="status" aria-live="polite">
      <span className="spinner" aria-hidden="true" /> {label}
    </div>
  );
}

export function ErrorBox({ title, message }: { title: string; message: string }) {
  return (
    <div className="status error" role="alert">
      <strong>{title}</strong>
      <span className="error-message">{message}</span>
    </div>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return <div className="status empty">{children}</div>;
}
