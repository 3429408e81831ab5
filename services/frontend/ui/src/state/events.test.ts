import { describe, expect, it } from "vitest";
import { formatAge, formatMemoryLimit, kindName, programName } from "./events";

describe("events as the pages show them", () => {
  it("name kinds, and keep an unknown one as it is", () => {
    expect(kindName("oom_kill")).toBe("OOM kill");
    expect(kindName("regression")).toBe("Regression");
    expect(kindName("oom_score")).toBe("oom_score");
  });

  it("name the program by service, else by its pod, else by its labels", () => {
    expect(programName({ service_name: "shop/api", pod: "api-1" })).toBe("shop/api");
    expect(programName({ namespace: "shop", pod: "api-1", container: "api" })).toBe("shop/api-1/api");
    expect(programName({ job: "batch" })).toBe("job=batch");
  });

  it("say ages and limits in words", () => {
    expect(formatAge(4.2e9)).toBe("4.2 s");
    expect(formatAge(190e9)).toBe("3 min 10 s");
    expect(formatAge(7500e9)).toBe("2 h 5 min");
    expect(formatMemoryLimit(256 * 1024 * 1024)).toBe("256 MiB");
    expect(formatMemoryLimit(0)).toBe("none known");
  });
});
