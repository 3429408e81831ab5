// Loads one API answer for a key: the previous request is aborted when the key changes, and the last
// good answer stays on screen while the next one loads.

import { useEffect, useState } from "react";

export interface Loaded<T> {
  data: T | null;
  error: string | null;
  loading: boolean;
}

export function useApi<T>(load: ((signal: AbortSignal) => Promise<T>) | null, key: string): Loaded<T> {
  const [state, setState] = useState<Loaded<T>>({ data: null, error: null, loading: load !== null });
  useEffect(() => {
    if (!load) {
      setState({ data: null, error: null, loading: false });
      return;
    }
    const controller = new AbortController();
    setState((s) => ({ ...s, loading: true }));
    load(controller.signal).then(
      (data) => setState({ data, error: null, loading: false }),
      (err: Error) => {
        if (err.name !== "AbortError") setState({ data: null, error: err.message, loading: false });
      },
    );
    return () => controller.abort();
    // `key` names everything `load` depends on.
  }, [key]);
  return state;
}
