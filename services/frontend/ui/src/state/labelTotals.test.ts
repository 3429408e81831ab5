import { describe, expect, it } from "vitest";
import type { Series } from "../api/types";
import { parseTypeId } from "../flamegraph/profileTypes";
import { explorableLabels, isGauge, pickedLabel, rangeAmount, valueTotals } from "./labelTotals";

const series = (labels: Record<string, string>, values: number[]): Series => ({
  labels,
  points: values.map((v, i) => [1_700_000_000_000 + i * 10_000, v]),
});

describe("the label picked", () => {
  it("leaves Pyroscope's derived labels out", () => {
    expect(explorableLabels(["__type__", "instance", "__service_name__", "service_name"])).toEqual(["instance", "service_name"]);
  });

  it("is the URL's label, else service_name, else the first", () => {
    expect(pickedLabel("instance", ["instance", "service_name"])).toBe("instance");
    expect(pickedLabel("", ["instance", "service_name"])).toBe("service_name");
    expect(pickedLabel("gone", ["job", "instance"])).toBe("job");
    expect(pickedLabel("", [])).toBe("");
  });
});

describe("valueTotals", () => {
  it("sums each value's steps into its total and its share of all, largest first", () => {
    const rows = valueTotals([
      series({ job: "a" }, [1, 2, 3]),
      series({ job: "b" }, [10, 20]),
      series({ job: "c" }, []),
      series({}, [4]),
    ], "job", false);
    expect(rows.map((r) => [r.value, r.total, r.share])).toEqual([["b", 30, 0.75], ["a", 6, 0.15], ["", 4, 0.1]]);
  });

  it("reads a gauge's steps as means over time: its amount is their mean", () => {
    expect(rangeAmount([[0, 100], [10, 300]], true)).toBe(200);
    expect(rangeAmount([[0, 100], [10, 300]], false)).toBe(400);
    expect(rangeAmount([], true)).toBe(0);
    expect(isGauge(parseTypeId("memory:inuse_space:bytes:space:bytes")!)).toBe(true);
    expect(isGauge(parseTypeId("process_cpu:cpu:nanoseconds:cpu:nanoseconds")!)).toBe(false);
  });

  it("gives every value a zero share when all is zero, and breaks ties by value", () => {
    const rows = valueTotals([series({ job: "b" }, [0]), series({ job: "a" }, [0])], "job", false);
    expect(rows.map((r) => [r.value, r.share])).toEqual([["a", 0], ["b", 0]]);
  });
});
