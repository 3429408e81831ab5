import type uPlot from "uplot";
import { describe, expect, it } from "vitest";
import { zeroBasedRange } from "./Timeline";

const plot = {} as uPlot;

describe("the timeline's y axis", () => {
  it("starts at zero, however far above it the points lie", () => {
    const [min, max] = zeroBasedRange(plot, 9.2e9, 9.7e9);
    expect(min).toBe(0);
    expect(max).toBeGreaterThanOrEqual(9.7e9);
  });

  it("ends a little above the largest point, so its line stays clear of the top", () => {
    const [, max] = zeroBasedRange(plot, 10, 97.3);
    expect(max).toBeGreaterThan(97.3);
    expect(max).toBeLessThan(97.3 * 1.25);
  });

  it("keeps a height when every point is zero, or there are none", () => {
    expect(zeroBasedRange(plot, 0, 0)[1]).toBeGreaterThan(0);
    expect(zeroBasedRange(plot, null, null)[1]).toBeGreaterThan(0);
  });
});
