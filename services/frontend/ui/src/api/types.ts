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
