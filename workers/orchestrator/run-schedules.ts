// Cron: starts every enabled schedule whose cron matches the tick's minute, at most once per minute.
// Each schedule is claimed with a conditional UPDATE first, so a duplicate trigger starts nothing,
// and one schedule's failure (a bad stored spec, a room error) is logged without stopping the others.
import { cronMatches, parseCron } from "../../src/core/cron.ts";
import { ApiError } from "../../src/core/errors.ts";
import { mapWithConcurrency } from "../../src/core/map-with-concurrency.ts";
import { parseSwarmSpec } from "../../src/core/parse-swarm-spec.ts";
import type { OrchestratorDeps } from "./composition.ts";
import type { DueCandidate } from "./schedule-store.ts";
import { startSwarm } from "./start-swarm.ts";
import { toErrorMessage } from "../../src/core/error-message.ts";

export type RunSchedulesDeps = Pick<
  OrchestratorDeps,
  | "schedules"
  | "swarmRooms"
  | "swarmIndex"
  | "tenants"
  | "newSwarmId"
  | "now"
  | "config"
  | "admission"
  | "audit"
  | "newAuditId"
  | "mcpCatalogs"
  | "secrets"
  | "secretBox"
>;

export type ScheduleRunOutcome =
  | { scheduleId: string; kind: "started"; swarmId: string }
  /** Another trigger of the same minute got it first, or it was disabled meanwhile. */
  | { scheduleId: string; kind: "already_claimed" }
  | { scheduleId: string; kind: "failed"; reason: string };

/** Schedules started concurrently: enough to overlap D1 and Durable Object round trips. */
const START_CONCURRENCY = 8;

export async function runSchedules(deps: RunSchedulesDeps, tick: { scheduledTime: number; cron: string }): Promise<ScheduleRunOutcome[]> {
  const at = new Date(tick.scheduledTime);
  const minute = Math.floor(tick.scheduledTime / 60_000);
  const due = (await deps.schedules.listEnabled()).filter((candidate) => {
    const cron = parseCron(candidate.cron);
    if (!cron.ok) console.error(`schedule ${candidate.id}: stored cron "${candidate.cron}" is invalid: ${cron.error}`);
    return cron.ok && cronMatches(cron.value, at);
  });
  const outcomes = await mapWithConcurrency(due, START_CONCURRENCY, (candidate) => runOne(deps, candidate, minute));
  for (const outcome of outcomes) {
    if (outcome.kind === "failed") console.error(`schedule ${outcome.scheduleId}: not started at minute ${minute}: ${outcome.reason}`);
  }
  return outcomes;
}

async function runOne(deps: RunSchedulesDeps, candidate: DueCandidate, minute: number): Promise<ScheduleRunOutcome> {
  const scheduleId = candidate.id;
  try {
    // Claim before starting: at most one start per schedule and minute. A start that fails after the
    // claim is not retried this minute (at-most-once; the next matching minute runs normally).
    if (!(await deps.schedules.claimMinute(scheduleId, minute))) return { scheduleId, kind: "already_claimed" };
    const stored = await deps.schedules.readSpec(scheduleId);
    if (stored === null) return { scheduleId, kind: "failed", reason: "schedule was deleted" };
    const swarm = parseSwarmSpec(parseJson(stored), ["spec"]);
    if (!swarm.ok) return { scheduleId, kind: "failed", reason: `stored spec is invalid: ${swarm.error.map((d) => `${d.path}: ${d.message}`).join("; ")}` };
    // The tenant's limits as they are now; a deleted tenant's schedules start nothing.
    const tenant = await deps.tenants.get(candidate.tenant);
    if (tenant === null) return { scheduleId, kind: "failed", reason: `tenant ${candidate.tenant} was deleted` };
    const owner = { tenant: tenant.id, limits: tenant.limits, actor: null };
    const { swarmId } = await startSwarm(deps, owner, swarm.value, { kind: "schedule", scheduleId });
    await deps.schedules.recordSwarm(scheduleId, swarmId);
    return { scheduleId, kind: "started", swarmId };
  } catch (error) {
    return { scheduleId, kind: "failed", reason: toFailureReason(error) };
  }
}

/** A refusal's details name what to fix (e.g. a model the gateway no longer serves), so the log keeps them. */
function toFailureReason(error: unknown): string {
  if (error instanceof ApiError && error.details.length > 0) return `${error.message}: ${error.details.map((d) => `${d.path}: ${d.message}`).join("; ")}`;
  return toErrorMessage(error);
}

/** Unparseable JSON becomes `undefined`, which the spec schema then refuses with a path. */
function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
