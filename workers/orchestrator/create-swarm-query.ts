// The query of POST /v1/swarms: `dry_run=1` answers the estimate instead of starting the swarm,
// with an optional projection (`jobs_per_day`, `days_per_month`). Unknown parameters are refused,
// so a misspelt `dry_run` never starts a swarm that was meant to be priced.
import type { Context } from "hono";
import { z } from "zod";
import { ApiError, toIssueDetails } from "../../src/core/errors.ts";
import type { Projection } from "../../src/core/estimate-swarm.ts";
import { ProjectionSchema } from "../../src/core/parse-estimate-request.ts";

/** A plain decimal ("24", "0.5"); "1e3", " 5" and "" are refused rather than coerced. */
const decimalParam = z
  .string()
  .regex(/^\d{1,7}(\.\d{1,6})?$/, "must be a decimal number")
  .transform(Number);

export const CreateSwarmQuerySchema = z.strictObject({
  dry_run: z.enum(["1", "true", "0", "false"], "must be 1, true, 0 or false").optional(),
  jobs_per_day: decimalParam.optional(),
  days_per_month: decimalParam.optional(),
});

export interface CreateSwarmQuery {
  dryRun: boolean;
  projection: Projection | null;
}

export function parseCreateSwarmQuery(c: Context): CreateSwarmQuery {
  const parsed = CreateSwarmQuerySchema.safeParse(c.req.query());
  if (!parsed.success) throw new ApiError("invalid_request", "invalid query parameters", toIssueDetails(parsed.error));
  const { dry_run, jobs_per_day, days_per_month } = parsed.data;
  const dryRun = dry_run === "1" || dry_run === "true";
  if (!dryRun) {
    const stray = jobs_per_day !== undefined ? "jobs_per_day" : days_per_month !== undefined ? "days_per_month" : null;
    if (stray !== null) throw new ApiError("invalid_request", "invalid query parameters", [{ path: stray, message: "only with dry_run=1" }]);
    return { dryRun, projection: null };
  }
  if (jobs_per_day === undefined) {
    if (days_per_month !== undefined) {
      throw new ApiError("invalid_request", "invalid query parameters", [{ path: "jobs_per_day", message: "needed with days_per_month" }]);
    }
    return { dryRun, projection: null };
  }
  const projection = ProjectionSchema.safeParse({ jobs_per_day, days_per_month });
  if (!projection.success) throw new ApiError("invalid_request", "invalid query parameters", toIssueDetails(projection.error));
  return { dryRun, projection: projection.data };
}
