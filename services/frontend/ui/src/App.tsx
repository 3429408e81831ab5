// The page: state from the URL, the header with its tenant picker, the query bar, and the view it names
// (explore, labels, compare, what changed, targets, incidents). Before the first profile is stored it asks
// again every few seconds, so a page opened early fills in when data lands.

import { useCallback, useEffect, useMemo, useState } from "react";
import { api, exactSelector, setTenant } from "./api/client";
import type { ProfileType } from "./api/types";
import { ChangesPage } from "./components/ChangesPage";
import { ComparePage } from "./components/ComparePage";
import { CopyLinkButton } from "./components/CopyLinkButton";
import { ExplorePage } from "./components/ExplorePage";
import { IncidentsPage } from "./components/IncidentsPage";
import { LabelsPage } from "./components/LabelsPage";
import { RangePicker } from "./components/RangePicker";
import { SelectorInput } from "./components/SelectorInput";
import { Empty, ErrorBox, Spinner } from "./components/Status";
import { TargetsPage } from "./components/TargetsPage";
import { TenantPicker } from "./components/TenantPicker";
import { useApi } from "./components/useApi";
import { parseTypeId, readableTypeName, sortTypes } from "./flamegraph/profileTypes";
import { INCIDENT_KINDS } from "./state/events";
import { isMinorChange, parseState, stateToSearch, switchTenant, type UiState, type View } from "./state/url";

const REFRESH_CHOICES: [string, string][] = [["", "off"], ["10s", "10s"], ["30s", "30s"], ["1m", "1m"], ["5m", "5m"]];
const REFRESH_MS: Record<string, number> = { "10s": 10e3, "30s": 30e3, "1m": 60e3, "5m": 300e3 };
const PREFERRED_TYPE = "process_cpu:cpu:nanoseconds:cpu:nanoseconds";
// Flamewatch profiles itself; a first visit opens another service (the program being watched) when there is one.
const SELF_SERVICE = "flamewatch";
const VIEW_NAMES: [View, string][] = [["single", "Explore"], ["labels", "Labels"], ["compare", "Compare"],
  ["changes", "What changed"], ["targets", "Targets"], ["incidents", "Incidents"]];
// How often the page loads again while no profile is stored yet.
const FIRST_PROFILE_POLL_MS = 5e3;

function useUrlState(): [UiState, (patch: Partial<UiState>, replace?: boolean) => void] {
  const [state, setState] = useState(() => parseState(window.location.search));
  useEffect(() => {
    const onPop = () => setState(parseState(window.location.search));
    window.addEventListener("popstate", onPop);
    return () => window.removeEventListener("popstate", onPop);
  }, []);
  const update = useCallback((patch: Partial<UiState>, replace = false) => {
    setState((before) => {
      const after = { ...before, ...patch };
      const url = `${window.location.pathname}${stateToSearch(after)}`;
      if (replace || isMinorChange(before, after)) window.history.replaceState(null, "", url);
      else window.history.pushState(null, "", url);
      return after;
    });
  }, []);
  return [state, update];
}

function useTheme(): ["light" | "dark", () => void] {
  const [theme, setTheme] = useState<"light" | "dark">(() => {
    const saved = localStorage.getItem("flamewatch-theme");
    if (saved === "light" || saved === "dark") return saved;
    return window.matchMedia?.("(prefers-color-scheme: dark)").matches ? "dark" : "light";
  });
  useEffect(() => {
    document.documentElement.dataset.theme = theme;
  }, [theme]);
  const toggle = () => setTheme((t) => {
    const next = t === "dark" ? "light" : "dark";
    localStorage.setItem("flamewatch-theme", next);
    return next;
  });
  return [theme, toggle];
}

function useTick(refresh: string): [number, () => void] {
  const [tick, setTick] = useState(0);
  useEffect(() => {
    const ms = REFRESH_MS[refresh];
    if (!ms) return;
    const timer = setInterval(() => setTick((t) => t + 1), ms);
    return () => clearInterval(timer);
  }, [refresh]);
  const again = useCallback(() => setTick((t) => t + 1), []);
  return [tick, again];
}

/** Calls `fn` every `ms` milliseconds; null for not now. */
function useInterval(ms: number | null, fn: () => void) {
  useEffect(() => {
    if (ms === null) return;
    const timer = setInterval(fn, ms);
    return () => clearInterval(timer);
  }, [ms, fn]);
}

export function App() {
  const [state, update] = useUrlState();
  const [theme, toggleTheme] = useTheme();
  const [tick, refresh] = useTick(state.view === "targets" ? "10s" : state.refresh);
  setTenant(state.tenant);  // before the workspace below loads anything: every call reads this tenant
  const tenants = useApi((s) => api.tenants(s), `tenants|${tick}`);  // a tenant's first push shows on refresh

  return (
    <div className="app">
      <header className="topbar">
        <a className="brand" href="?">Flamewatch</a>
        <nav aria-label="views">
          {VIEW_NAMES.map(([v, label]) => (
            <button key={v} type="button" className={state.view === v ? "selected" : ""} aria-current={state.view === v ? "page" : undefined}
              onClick={() => update({ view: v })}>{label}</button>
          ))}
        </nav>
        <span className="spacer" />
        <CopyLinkButton />
        <TenantPicker tenants={tenants.data ?? []} value={state.tenant} onChange={(t) => update(switchTenant(state, t))} />
        <button type="button" onClick={toggleTheme} aria-label="toggle dark mode" title="light / dark">
          {theme === "dark" ? "☀ Light" : "☾ Dark"}
        </button>
      </header>
      {/* Keyed by tenant: another tenant loads its profile types, labels and view afresh. */}
      <Workspace key={state.tenant} state={state} update={update} theme={theme} tick={tick} refresh={refresh} />
    </div>
  );
}

interface WorkspaceProps {
  state: UiState;
  update: (patch: Partial<UiState>, replace?: boolean) => void;
  theme: "light" | "dark";
  tick: number;
  refresh: () => void;
}

function Workspace({ state, update, theme, tick, refresh }: WorkspaceProps) {
  const range = { from: state.from, until: state.until };
  const types = useApi((s) => api.profileTypes({ from: "now-7d", until: "now" }, s), `types|${tick}`);
  const sorted = useMemo(() => sortTypes(types.data ?? []), [types.data]);
  useInterval(types.data?.length === 0 ? FIRST_PROFILE_POLL_MS : null, refresh);
  const type: ProfileType | null = sorted.find((t) => t.id === state.type) ?? parseTypeId(state.type);
  const typeMatch = type ? exactSelector({ __profile_type__: type.id }) : "";
  const labelNames = useApi((s) => api.labelNames(typeMatch, range, s), `${typeMatch}|${range.from}|${range.until}`);
  // the views that need a profile type
  const profiles = state.view === "single" || state.view === "compare" || state.view === "changes"
    || state.view === "labels";

  // A first visit picks CPU and a service for the user; the URL then says what was picked. Not on the
  // Incidents page: a service picked there would filter its list.
  useEffect(() => {
    if (state.type || sorted.length === 0 || state.view === "incidents") return;
    const pick = sorted.find((t) => t.id === PREFERRED_TYPE) ?? sorted[0];
    const patch: Partial<UiState> = { type: pick.id };
    let live = true;  // a tenant switched meanwhile must not get this one's pick
    api.labelValues("service_name", exactSelector({ __profile_type__: pick.id }), range).then((services) => {
      const service = services.find((s) => s !== SELF_SERVICE) ?? services[0];
      if (!state.selector && service) patch.selector = exactSelector({ service_name: service });
    }).catch(() => undefined).finally(() => live && update(patch, true));
    return () => {
      live = false;
    };
  }, [sorted, state.type, state.view]);

  return (
    <>
      {state.view !== "targets" && (
        <div className="querybar">
          {profiles && <label className="type-picker">
            <span className="visually-hidden">Profile type</span>
            <select aria-label="profile type" value={type?.id ?? ""} onChange={(e) => update({ type: e.target.value, selFrom: "", selUntil: "", time: "" })}>
              {!type && <option value="">{types.loading ? "loading…" : "no profile types"}</option>}
              {type && !sorted.some((t) => t.id === type.id) && <option value={type.id}>{readableTypeName(type)}</option>}
              {sorted.map((t) => <option key={t.id} value={t.id} title={t.id}>{readableTypeName(t)}</option>)}
            </select>
          </label>}
          {state.view === "incidents" && (
            <label>
              Kind{" "}
              <select aria-label="incident kind" value={state.kind} onChange={(e) => update({ kind: e.target.value, incident: "" })}>
                <option value="">all</option>
                {INCIDENT_KINDS.map(([k, name]) => <option key={k} value={k}>{name}</option>)}
              </select>
            </label>
          )}
          {(state.view === "single" || state.view === "labels" || state.view === "incidents" || state.view === "changes") && (
            <SelectorInput id="selector" value={state.selector} profileType={profiles ? type?.id ?? "" : ""} range={range}
              onChange={(selector) => update({ selector, selFrom: "", selUntil: "", time: "", ...(state.view === "changes" ? { a: "", b: "" } : {}) })} />
          )}
          {/* every page with one range keeps it here; What changed's two ranges are its own */}
          {(state.view === "single" || state.view === "labels" || state.view === "incidents"
            || (state.view === "changes" && state.changeMode !== "ranges")) && (
            <RangePicker idPrefix="range" from={state.from} until={state.until}
              onChange={(from, until) => update({ from, until, selFrom: "", selUntil: "", time: "" })} />
          )}
          <button type="button" onClick={refresh} title="load again">↻ Refresh</button>
          <label>
            Auto{" "}
            <select aria-label="auto-refresh" value={state.refresh} onChange={(e) => update({ refresh: e.target.value })}>
              {REFRESH_CHOICES.map(([v, label]) => <option key={v} value={v}>{label}</option>)}
            </select>
          </label>
        </div>
      )}

      <main>
        {state.view === "targets" && <TargetsPage tick={tick} />}
        {state.view === "incidents" && <IncidentsPage state={state} update={update} theme={theme} tick={tick} />}
        {profiles && types.error && (
          <ErrorBox title={state.tenant ? `Tenant “${state.tenant}” could not be read` : "The profile types could not be loaded"}
            message={types.error} />
        )}
        {profiles && !type && types.loading && !types.data && <Spinner label="Loading profile types…" />}
        {profiles && !type && types.data?.length === 0 && (
          <Empty>No profiles stored in the last 7 days yet. Scrapes land within a scrape interval: check <a href="?view=targets">Targets</a>.</Empty>
        )}
        {state.view === "single" && type && (
          <ExplorePage state={state} type={type} labelNames={(labelNames.data ?? []).filter((n) => !n.startsWith("__"))}
            tick={tick} theme={theme} update={update} />
        )}
        {state.view === "labels" && type && (
          <LabelsPage state={state} type={type} labelNames={labelNames} tick={tick} theme={theme} update={update} />
        )}
        {state.view === "changes" && type && (
          <ChangesPage state={state} type={type} labelNames={(labelNames.data ?? []).filter((n) => !n.startsWith("__"))}
            tick={tick} update={update} />
        )}
        {state.view === "compare" && type && <ComparePage state={state} type={type} tick={tick} theme={theme} update={update} />}
      </main>
    </>
  );
}
