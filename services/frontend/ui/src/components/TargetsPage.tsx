// The collector's targets by job: health, last scrape, its duration and the last error.

import { api } from "../api/client";
import type { Target } from "../api/types";
import { Empty, ErrorBox, Spinner } from "./Status";
import { useApi } from "./useApi";

export function TargetsPage({ tick }: { tick: number }) {
  const targets = useApi((s) => api.targets(s), String(tick));
  const jobs = new Map<string, Target[]>();
  for (const t of targets.data ?? []) jobs.set(t.scrapePool, [...(jobs.get(t.scrapePool) ?? []), t]);
  return (
    <section className="panel" aria-label="targets">
      <div className="panel-head"><h2>Scrape targets</h2></div>
      {targets.error && <ErrorBox title="The targets could not be loaded" message={targets.error} />}
      {!targets.error && targets.loading && !targets.data && <Spinner label="Loading targets…" />}
      {targets.data && targets.data.length === 0 && (
        <Empty>No targets: add a job under <code>scrape_configs</code> in the configuration file.</Empty>
      )}
      {[...jobs].map(([job, list]) => {
        const up = list.filter((t) => t.health === "up").length;
        return (
          <div key={job} className="job">
            <h3>{job} <span className="muted">({up}/{list.length} up)</span></h3>
            <table className="targets-table" aria-label={`job ${job}`}>
              <thead>
                <tr><th>Endpoint</th><th>Profile</th><th>State</th><th>Labels</th><th>Last scrape</th><th>Duration</th><th>Error</th></tr>
              </thead>
              <tbody>
                {list.map((t) => (
                  <tr key={t.scrapeUrl}>
                    <td><code>{t.scrapeUrl}</code></td>
                    <td>{t.profileType}</td>
                    <td><span className={`health ${t.health}`}>{t.health}</span></td>
                    <td className="labels">{Object.entries(t.labels).map(([k, v]) => <span key={k} className="label">{k}="{v}"</span>)}</td>
                    <td>{t.lastScrape ? ago(t.lastScrape) : "never"}</td>
                    <td>{t.lastScrape ? `${(t.lastScrapeDuration * 1000).toFixed(0)} ms` : "–"}</td>
                    <td className="error-message">{t.lastError}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        );
      })}
    </section>
  );
}

function ago(iso: string): string {
  const s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  return s < 120 ? `${s}s ago` : s < 7200 ? `${Math.round(s / 60)}m ago` : `${Math.round(s / 3600)}h ago`;
}
