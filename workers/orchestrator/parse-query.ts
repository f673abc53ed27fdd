// Validates a request's query parameters with a zod schema: 400 invalid_request naming each parameter.
import type { Context } from "hono";
import type { z } from "zod";
import { ApiError, toIssueDetails } from "../../src/core/errors.ts";

export function parseQuery<S extends z.ZodType>(c: Context, schema: S): z.output<S> {
  const parsed = schema.safeParse(c.req.query());
  if (!parsed.success) throw new ApiError("invalid_request", "invalid query parameters", toIssueDetails(parsed.error));
  return parsed.data;
}
