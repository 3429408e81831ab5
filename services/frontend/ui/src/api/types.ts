// The shapes of the /api/v1 answers the UI reads (see services/querier/README.md).

/** A tenant the credential may read (GET /api/v1/tenants); the default is the one a call naming none reads. */
export interface Tenant {
  name: string;
  series: number;
  default: boolean;
}

export interface ProfileType {
  id: string;
  name: string;
  sample_type: string;
  sample_unit: string;
  period_type: string;
  period_unit: string;
}

export interface Series {
  labels: Record<string, string>;
  points: [number, number][];
}

export interface RangeAnswer {
  series: Series[];
  warnings: string[];
}

/** Pyroscope's level encoding: per level, 4 numbers a node (x_delta, total, self, name index). */
export interface FlamegraphData {
  names: string[];
  levels: number[][];
  total: number;
  max_self: number;
  /** Per name: the file its frames were executed from (the profile's mapping), "" when unknown; absent when
   * the profiles name no mappings. */
  binaries?: string[];
}

/** The diff encoding: 7 numbers a node (left x_delta, total, self, right x_delta, total, self, name). */
export interface DiffData extends FlamegraphData {
  left_ticks: number;
  right_ticks: number;
}

export interface FlamegraphAnswer {
  profile_type: string;
  profiles: number;
  flamegraph: FlamegraphData;
}

export interface Target {
  scrapePool: string;
  profileType: string;
  scrapeUrl: string;
  labels: Record<string, string>;
  discoveredLabels: Record<string, string>;
  health: string;
  lastScrape: string | null;
  lastScrapeDuration: number;
  lastError: string;
}

/** Evidence as a query the API answers: a merge over a range, or with `time` the one profile of that time. */
export interface ProfileLink {
  query: string;
  /** Epoch nanoseconds. */
  from: number;
  until: number;
  time?: number;
}

/** A diff as two queries: left the baseline, right the comparison. */
export interface DiffLink {
  left: ProfileLink;
  right: ProfileLink;
}

/** The profiles that explain an incident (services/querier/incidents.py); what cannot be linked is in `notes`. */
export interface Evidence {
  last_heap: ProfileLink | null;
  /** Nanoseconds between the last heap profile and the incident; null without one. */
  last_heap_age_ns: number | null;
  first_heap: ProfileLink | null;
  inuse_growth: DiffLink | null;
  alloc_growth: DiffLink | null;
  cpu_before: ProfileLink | null;
  /** A regression: the two selections its rule compared, as a diff. */
  change?: DiffLink | null;
  notes: string[];
  /** The UI's permalink of the incident (`/?view=incidents&incident=<id>`). */
  ui_path: string;
}

/** An event (OOM kill, restart with an error) with its evidence (GET /api/v1/incidents). */
export interface Incident {
  id: number;
  kind: string;
  /** Epoch nanoseconds. */
  time: number;
  labels: Record<string, string>;
  exit_code: number;
  /** 0: none or unknown. */
  memory_limit_bytes: number;
  restart_count: number;
  started_ns: number;
  message: string;
  key: string;
  recorded: number;
  evidence: Evidence;
  /** What a kind carries besides: a regression's selections and ranked changes (RegressionDetails). */
  details?: Record<string, unknown>;
}

/** One measure (self or total) of a function on both sides, as shares of the total (0.01 = 1 %). */
export interface ChangeMeasure {
  a: number;
  b: number;
  /** b - a, in shares of the total. */
  change: number;
  /** The change's 95 % interval; null when a side has a single profile. */
  low: number | null;
  high: number | null;
  /** The rank test's p-value, adjusted for the false discovery rate. */
  p: number;
  significant: boolean;
}

export interface FunctionChange {
  name: string;
  self: ChangeMeasure;
  total: ChangeMeasure;
}

export interface ChangesSide {
  query: string;
  /** Epoch nanoseconds. */
  from: number;
  until: number;
}

/** GET /api/v1/changes: functions ranked by the change of their share, largest increase first. */
export interface ChangesAnswer {
  a: ChangesSide;
  b: ChangesSide;
  order: "self" | "total";
  profiles: { a: number; b: number };
  functions: FunctionChange[];
  notes: string[];
}

/** A regression event's `details`, as a comparison rule writes them (services/querier/rules.py). */
export interface RegressionDetails {
  rule?: { group?: string; compare?: string; threshold?: number; order?: string; labels?: Record<string, string> };
  a: ChangesSide & { value: string };
  b: ChangesSide & { value: string };
  profiles?: { a: number; b: number };
  /** The significant increases beyond the rule's threshold, largest first, in the rule's measure. */
  functions: { name: string; a: number; b: number; change: number; p: number }[];
}
