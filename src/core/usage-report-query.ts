// Parses the query of GET /v1/usage: the UTC range [from, to) and the grouping. No I/O.
// Every refusal names the parameter, so the HTTP layer answers 400 invalid_request with its path.
import { z } from "zod";
import type { ErrorDetail } from "./errors.ts";
import { err, ok, type Result } from "./result.ts";

export const DAY_MS = 86_400_000;
export const DEFAULT_USAGE_RANGE_DAYS = 30;
/** A leap year and no more: a longer report is a data export, not a query for the ledger index. */
export const MAX_USAGE_RANGE_DAYS = 366;

export const UsageGroupBySchema = z.enum(["model", "day", "swarm", "token"]);
export type UsageGroupBy = z.infer<typeof UsageGroupBySchema>;

export interface UsageReportQuery {
  /** Epoch ms, inclusive. */
  from: number;
  /** Epoch ms, exclusive. */
  to: number;
  groupBy: UsageGroupBy;
}

const KNOWN_PARAMS = new Set(["from", "to", "group_by"]);

const INSTANT = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?(Z|[+-]\d{2}:\d{2})?)?$/;

const INSTANT_HINT = "expected YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS[.mmm]][Z|±HH:MM] (UTC when no offset is given)";

/**
 * Epoch ms of an ISO 8601 date (`2026-05-01`, midnight UTC) or datetime (`2026-05-01T12:30:00Z`;
 * no offset means UTC), else null. Impossible dates (`2026-02-30`, `24:00`) are refused rather
 * than rolled over, as `Date.parse` would.
 */
export function parseUtcInstant(text: string): number | null {
  const m = INSTANT.exec(text);
  if (m === null) return null;
  const part = (i: number): number => Number(m[i] ?? 0);
  const [year, month, day, hour, minute, second] = [part(1), part(2), part(3), part(4), part(5), part(6)] as const;
  const date = new Date(0);
  // setUTCFullYear, not Date.UTC: Date.UTC maps the years 0–99 to 1900–1999.
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, Number((m[7] ?? "0").padEnd(3, "0")));
  const fields = [date.getUTCFullYear(), date.getUTCMonth() + 1, date.getUTCDate(), date.getUTCHours(), date.getUTCMinutes(), date.getUTCSeconds()];
  if (fields.join() !== [year, month, day, hour, minute, second].join()) return null;
  const zone = m[8];
  if (zone === undefined || zone === "Z") return date.getTime();
  const offsetHours = Number(zone.slice(1, 3));
  const offsetMinutes = Number(zone.slice(4, 6));
  if (offsetHours > 23 || offsetMinutes > 59) return null;
  const sign = zone.startsWith("-") ? -1 : 1;
  return date.getTime() - sign * (offsetHours * 60 + offsetMinutes) * 60_000;
}

/**
 * Validates `from`, `to` and `group_by` against the clock `now` (epoch ms). Defaults: `to` = now,
 * `from` = `to` − 30 days, `group_by` = model. Refuses an unknown parameter, a malformed instant,
 * from ≥ to, and a range longer than 366 days.
 */
export function parseUsageReportQuery(query: Readonly<Record<string, string>>, now: number): Result<UsageReportQuery, ErrorDetail[]> {
  const problems: ErrorDetail[] = [];
  for (const name of Object.keys(query)) {
    if (!KNOWN_PARAMS.has(name)) problems.push({ path: name, message: "unknown parameter (expected from, to, group_by)" });
  }

  const readInstant = (name: "from" | "to"): number | undefined => {
    const text = query[name];
    if (text === undefined) return undefined;
    const at = parseUtcInstant(text);
    if (at === null) problems.push({ path: name, message: `not a date or datetime: ${INSTANT_HINT}` });
    return at ?? undefined;
  };
  const fromGiven = readInstant("from");
  const toGiven = readInstant("to");

  const groupBy = UsageGroupBySchema.safeParse(query.group_by ?? "model");
  if (!groupBy.success) problems.push({ path: "group_by", message: `must be one of ${UsageGroupBySchema.options.join(", ")}` });

  if (problems.length > 0 || !groupBy.success) return err(problems);

  const to = toGiven ?? now;
  const from = fromGiven ?? to - DEFAULT_USAGE_RANGE_DAYS * DAY_MS;
  // `from` is named: only an explicit `from` can make the range empty or too long.
  if (from >= to) {
    return err([{ path: "from", message: `must be before to (${new Date(to).toISOString()})` }]);
  }
  if (to - from > MAX_USAGE_RANGE_DAYS * DAY_MS) {
    const days = Math.ceil((to - from) / DAY_MS);
    return err([{ path: "from", message: `the range spans ${days} days; at most ${MAX_USAGE_RANGE_DAYS} are allowed` }]);
  }
  return ok({ from, to, groupBy: groupBy.data });
}
