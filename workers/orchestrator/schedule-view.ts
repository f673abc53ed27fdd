// The public JSON shape of a schedule, with its next run computed from the cron at read time.
// The spec is summarized (name, model, task count): a listing never echoes whole prompts.
import { nextCronTime, parseCron } from "../../src/core/cron.ts";
import type { ScheduleRow } from "./schedule-store.ts";

export interface ScheduleView {
  id: string;
  name: string;
  cron: string;
  enabled: boolean;
  swarm: { name: string; model: string; tasks: number; goal: string | null };
  created_at: string;
  /** null when disabled, or the cron never fires again. */
  next_run_at: string | null;
  last_run_at: string | null;
  last_swarm_id: string | null;
}

export function toScheduleView(row: ScheduleRow, now: number): ScheduleView {
  const cron = parseCron(row.cron);
  const next = row.enabled && cron.ok ? nextCronTime(cron.value, new Date(now)) : null;
  return {
    id: row.id,
    name: row.name,
    cron: row.cron,
    enabled: row.enabled,
    swarm: row.swarm,
    created_at: new Date(row.createdAt).toISOString(),
    next_run_at: next === null ? null : next.toISOString(),
    last_run_at: row.lastRunMinute === null ? null : new Date(row.lastRunMinute * 60_000).toISOString(),
    last_swarm_id: row.lastSwarmId,
  };
}
