import { describe, expect, it } from "vitest";
import { parseEstimateRequest } from "./parse-estimate-request.ts";

const spec = { name: "s", model: "mock-1", tasks: [{ prompt: "x" }] };

describe("parseEstimateRequest", () => {
  it("accepts a bare spec: no projection", () => {
    const parsed = parseEstimateRequest(spec);
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.error));
    expect(parsed.value.projection).toBeNull();
    expect(parsed.value.swarm.tasks).toEqual([{ id: "t00001", prompt: "x" }]);
  });

  it.each<[unknown, { jobs_per_day: number; days_per_month: number }]>([
    [{ jobs_per_day: 24 }, { jobs_per_day: 24, days_per_month: 30 }],
    [
      { jobs_per_day: 0.5, days_per_month: 22 },
      { jobs_per_day: 0.5, days_per_month: 22 },
    ],
  ])("splits off projection %j", (projection, expected) => {
    const parsed = parseEstimateRequest({ ...spec, projection });
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.error));
    expect(parsed.value.projection).toEqual(expected);
  });

  it.each<[string, unknown, string[]]>([
    ["jobs_per_day missing", { ...spec, projection: {} }, ["projection.jobs_per_day"]],
    ["jobs_per_day zero", { ...spec, projection: { jobs_per_day: 0 } }, ["projection.jobs_per_day"]],
    ["jobs_per_day as a string", { ...spec, projection: { jobs_per_day: "24" } }, ["projection.jobs_per_day"]],
    ["days_per_month 32", { ...spec, projection: { jobs_per_day: 1, days_per_month: 32 } }, ["projection.days_per_month"]],
    ["an unknown projection key", { ...spec, projection: { jobs_per_day: 1, weeks: 4 } }, ["projection"]],
    ["projection null", { ...spec, projection: null }, ["projection"]],
    ["spec and projection both wrong", { ...spec, tasks: [{ prompt: "" }], projection: { jobs_per_day: -1 } }, ["tasks.0.prompt", "projection.jobs_per_day"]],
    ["an unknown top-level key (the spec stays strict)", { ...spec, projections: { jobs_per_day: 1 } }, ["(root)"]],
    ["an array body", [spec], ["(root)"]],
  ])("%s → %j", (_case, body, paths) => {
    const parsed = parseEstimateRequest(body);
    if (parsed.ok) throw new Error("expected a refusal");
    expect(parsed.error.map((d) => d.path)).toEqual(paths);
  });
});
