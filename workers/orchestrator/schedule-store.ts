// The D1 `schedules` table: saved specs that cron starts. Takes only the D1 database.
// Claiming a minute is one conditional UPDATE, so duplicate cron triggers never start a swarm twice.
import { z } from "zod";

export interface NewSchedule {
  id: string;
  tenant: string;
  name: string;
  cron: string;
  /** The validated swarm spec, JSON. */
  spec: string;
  enabled: boolean;
  /** Epoch ms. */
  createdAt: number;
}

/** A schedule as listed: the spec is summarized in SQL so a listing never reads whole specs. */
export interface ScheduleRow {
  id: string;
  name: string;
  cron: string;
  enabled: boolean;
  createdAt: number;
  /** Epoch minute of the last start, or null. */
  lastRunMinute: number | null;
  lastSwarmId: string | null;
  /** What the schedule starts: `tasks` is 0 for a spec with a goal (planned at each run). */
  swarm: { name: string; model: string; tasks: number; goal: string | null };
}

export interface DueCandidate {
  id: string;
  tenant: string;
  cron: string;
}

export interface ScheduleStore {
  insert(schedule: NewSchedule): Promise<void>;
  listForTenant(tenant: string): Promise<ScheduleRow[]>;
  /** false when no schedule of that id belongs to the tenant. */
  deleteForTenant(tenant: string, id: string): Promise<boolean>;
  listEnabled(): Promise<DueCandidate[]>;
  /** true for exactly one caller per schedule and minute, and only while the schedule is enabled. */
  claimMinute(id: string, minute: number): Promise<boolean>;
  /** The stored spec JSON, or null when the schedule is gone. */
  readSpec(id: string): Promise<string | null>;
  recordSwarm(id: string, swarmId: string): Promise<void>;
}

const ScheduleRowSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    cron: z.string(),
    enabled: z.number(),
    created_at: z.number(),
    last_run_minute: z.number().nullable(),
    last_swarm_id: z.string().nullable(),
    swarm_name: z.string(),
    swarm_model: z.string(),
    swarm_tasks: z.number().int(),
    swarm_goal: z.string().nullable(),
  })
  .transform(
    (row): ScheduleRow => ({
      id: row.id,
      name: row.name,
      cron: row.cron,
      enabled: row.enabled !== 0,
      createdAt: row.created_at,
      lastRunMinute: row.last_run_minute,
      lastSwarmId: row.last_swarm_id,
      swarm: { name: row.swarm_name, model: row.swarm_model, tasks: row.swarm_tasks, goal: row.swarm_goal },
    }),
  );

const DueCandidateSchema = z.object({ id: z.string(), tenant: z.string(), cron: z.string() });
const SpecRowSchema = z.object({ spec: z.string() });

export function createScheduleStore(db: D1Database): ScheduleStore {
  return {
    async insert(s) {
      await db
        .prepare("INSERT INTO schedules (id, tenant, name, cron, spec, enabled, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")
        .bind(s.id, s.tenant, s.name, s.cron, s.spec, s.enabled ? 1 : 0, s.createdAt)
        .run();
    },

    async listForTenant(tenant) {
      const { results } = await db
        .prepare(
          "SELECT id, name, cron, enabled, created_at, last_run_minute, last_swarm_id, " +
            "json_extract(spec, '$.name') AS swarm_name, json_extract(spec, '$.model') AS swarm_model, " +
            // A goal spec has no tasks array (json_array_length gives NULL).
            "COALESCE(json_array_length(spec, '$.tasks'), 0) AS swarm_tasks, json_extract(spec, '$.goal') AS swarm_goal " +
            "FROM schedules WHERE tenant = ?1 ORDER BY created_at DESC, id DESC",
        )
        .bind(tenant)
        .all();
      return z.array(ScheduleRowSchema).parse(results);
    },

    async deleteForTenant(tenant, id) {
      const { meta } = await db.prepare("DELETE FROM schedules WHERE id = ?1 AND tenant = ?2").bind(id, tenant).run();
      return meta.changes === 1;
    },

    async listEnabled() {
      const { results } = await db.prepare("SELECT id, tenant, cron FROM schedules WHERE enabled = 1 ORDER BY id").all();
      return z.array(DueCandidateSchema).parse(results);
    },

    async claimMinute(id, minute) {
      const { meta } = await db
        .prepare("UPDATE schedules SET last_run_minute = ?1 " + "WHERE id = ?2 AND enabled = 1 AND (last_run_minute IS NULL OR last_run_minute < ?1)")
        .bind(minute, id)
        .run();
      return meta.changes === 1;
    },

    async readSpec(id) {
      const row = await db.prepare("SELECT spec FROM schedules WHERE id = ?1").bind(id).first();
      return row === null ? null : SpecRowSchema.parse(row).spec;
    },

    async recordSwarm(id, swarmId) {
      await db.prepare("UPDATE schedules SET last_swarm_id = ?1 WHERE id = ?2").bind(swarmId, id).run();
    },
  };
}
