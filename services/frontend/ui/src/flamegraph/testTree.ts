// A small flamegraph answer shared by the unit tests (imported by tests only, so never bundled).

import type { FlamegraphData } from "../api/types";

// total(100, self 10) → main(90) → { a(30, self 30) at 0, b(60, self 40) at 30 → a(20, self 20) at 30 }.
// Names sorted as the API sends them; levels in the delta encoding.
export const TREE: FlamegraphData = {
  names: ["a", "b", "main", "total"],
  levels: [
    [0, 100, 10, 3],
    [0, 90, 0, 2],
    [0, 30, 30, 0, 0, 60, 40, 1],
    [30, 20, 20, 0],
  ],
  total: 100,
  max_self: 40,
};
