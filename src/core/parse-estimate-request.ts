// Parses the body of POST /v1/swarms/estimate: a swarm spec plus an optional top-level
// `projection`, which is split off before the (strict) spec is validated exactly as POST /v1/swarms does. No I/O.
import { z } from "zod";
import { toIssuePath, type ErrorDetail } from "./errors.ts";
import { DEFAULT_DAYS_PER_MONTH, type Projection } from "./estimate-swarm.ts";
import { parseSwarmSpec, type PlannedSwarm } from "./parse-swarm-spec.ts";
import { err, ok, type Result } from "./result.ts";
import { isRecord } from "./is-record.ts";

/** Bounds keep the projected figures far inside exact double arithmetic. */
export const JOBS_PER_DAY_MAX = 1_000_000;

export const ProjectionSchema = z.strictObject({
  jobs_per_day: z.number().positive().max(JOBS_PER_DAY_MAX),
  days_per_month: z.number().positive().max(31).default(DEFAULT_DAYS_PER_MONTH),
});

export interface EstimateRequest {
  swarm: PlannedSwarm;
  projection: Projection | null;
}

/** Spec problems and projection problems are reported together, each with its path in the body. */
export function parseEstimateRequest(body: unknown): Result<EstimateRequest, ErrorDetail[]> {
  let specInput = body;
  let projection: Result<Projection | null, ErrorDetail[]> = ok(null);
  if (isRecord(body) && Object.hasOwn(body, "projection")) {
    const { projection: rawProjection, ...rest } = body;
    specInput = rest;
    const parsed = ProjectionSchema.safeParse(rawProjection);
    projection = parsed.success
      ? ok(parsed.data)
      : err(parsed.error.issues.map((issue) => ({ path: toIssuePath(["projection", ...issue.path]), message: issue.message })));
  }
  const swarm = parseSwarmSpec(specInput);
  const problems = [...(swarm.ok ? [] : swarm.error), ...(projection.ok ? [] : projection.error)];
  if (!swarm.ok || !projection.ok) return err(problems);
  return ok({ swarm: swarm.value, projection: projection.value });
}
