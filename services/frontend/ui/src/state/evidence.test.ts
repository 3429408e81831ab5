import { describe, expect, it } from "vitest";
import type { DiffLink, ProfileLink } from "../api/types";
import { compareViewOf, CONTEXT_AFTER_MS, CONTEXT_BEFORE_MS, linkRange, singleViewOf, splitQuery } from "./evidence";
import { DEFAULT_STATE, parseState, stateToSearch } from "./url";

const HEAP = "memory:inuse_space:bytes:space:bytes";
const POD = '{container="api",namespace="shop",pod="api-7d9f"}';
// Nanoseconds as the API answers them: past 2^53, so JSON.parse rounds them to a multiple of 256.
const LAST_NS = 1764130000123456789;
const LAST_MS = 1764130000123;
const FIRST_MS = 1764129400000;
const last: ProfileLink = { query: HEAP + POD, from: LAST_NS, until: LAST_NS, time: LAST_NS };
const first: ProfileLink = { query: HEAP + POD, from: FIRST_MS * 1e6, until: FIRST_MS * 1e6, time: FIRST_MS * 1e6 };

describe("evidence links", () => {
  it("split into the profile type and the selector", () => {
    expect(splitQuery(HEAP + POD)).toEqual({ type: HEAP, selector: POD });
    expect(splitQuery(`${HEAP}{}`)).toEqual({ type: HEAP, selector: "{}" });
    expect(splitQuery(HEAP)).toEqual({ type: HEAP, selector: "" });
  });

  it("ask for a single profile over ±1 ms, so a rounded nanosecond still finds it", () => {
    expect(Number.isSafeInteger(LAST_NS)).toBe(false);
    expect(linkRange(last)).toEqual({ from: String(LAST_MS - 1), until: String(LAST_MS + 1) });
  });

  it("ask for a merge over its range in milliseconds, rounded outwards", () => {
    const cpu: ProfileLink = { query: `process_cpu:cpu:nanoseconds:cpu:nanoseconds${POD}`, from: 1_500_000, until: 2_000_001 };
    expect(linkRange(cpu)).toEqual({ from: "1", until: "3" });
  });
});

describe("evidence opened in the main view", () => {
  it("picks a single profile on the program's timeline of the half hour before it", () => {
    const patch = singleViewOf(last);
    expect(patch).toMatchObject({ view: "single", type: HEAP, selector: POD, time: String(LAST_MS),
      from: String(LAST_MS - CONTEXT_BEFORE_MS), until: String(LAST_MS + CONTEXT_AFTER_MS) });
    // Through the URL and back, as the link's href is followed.
    const opened = parseState(stateToSearch({ ...DEFAULT_STATE, tenant: "team-a", view: "incidents", incident: "9",
      ...patch }));
    expect(opened).toMatchObject({ view: "single", tenant: "team-a", incident: "", type: HEAP, selector: POD,
      time: String(LAST_MS) });
  });

  it("opens a merge over its range without a picked profile", () => {
    const cpu: ProfileLink = { query: `process_cpu:cpu:nanoseconds:cpu:nanoseconds${POD}`, from: 1e18, until: 1e18 + 3e11 };
    expect(singleViewOf(cpu)).toMatchObject({ view: "single", type: "process_cpu:cpu:nanoseconds:cpu:nanoseconds",
      from: "1000000000000", until: "1000000300000", time: "" });
  });

  it("opens a growth diff as a comparison: first heap left, last heap right", () => {
    const growth: DiffLink = { left: first, right: last };
    const patch = compareViewOf(growth);
    expect(patch).toMatchObject({
      view: "compare",
      type: HEAP,
      left: { selector: POD, from: String(FIRST_MS - 1), until: String(FIRST_MS + 1) },
      right: { selector: POD, from: String(LAST_MS - 1), until: String(LAST_MS + 1) },
    });
    const search = stateToSearch({ ...DEFAULT_STATE, ...patch });
    expect(parseState(search).left).toEqual(patch.left);
    expect(search).toContain("view=compare");
  });

  it("leaves nothing of what was picked before (zoom, search, the incident)", () => {
    const patch = singleViewOf(last);
    expect(patch).toMatchObject({ focus: "", search: "", selFrom: "", selUntil: "", incident: "" });
  });
});
