// The SwarmRoom's swarm row and task rows as its modules read them: the `swarm` row (inserted at
// start) read once per request and again only after a statement wrote it, its fixed settings
// parsed once per instance, task rows by id, and the `free_attempts` table. It decides nothing:
// no dispatch, budget, routing or completion happens here.
import { z } from "zod";
import { callsPerAttempt } from "../core/agent-limits.ts";
import { toModelLabel, type WeightedModel } from "../core/route-model.ts";
import {
  BudgetSchema,
  LimitsSchema,
  ResponseFormatSchema,
  ToolSpecSchema,
  type Budget,
  type Limits,
  type PlannerSpec,
  type ResponseFormat,
  type ToolSpec,
} from "../core/spec-schema.ts";
import type { StartSwarmInput, TaskRunConfig, ToolSpecWire } from "../core/swarm-contract.ts";
import type { TaskLifeRow } from "../core/task-transitions.ts";
import { PinnedMcpServerSchema } from "../core/mcp-catalog.ts";
import { insertPlanTask, insertTasks } from "./swarm-phases.ts";
import { TASK_COLUMNS, WeightedModelsSchema, type SwarmRow, type TaskRow } from "./swarm-room-rows.ts";

/** The swarm's settings that never change after it starts. */
export interface FixedSettings {
  id: string;
  limits: Limits;
  budget: Budget | null;
  mix: WeightedModel[];
  fallback: string[];
}

function toToolWires(tools: readonly ToolSpec[]): ToolSpecWire[] {
  return tools.map((tool) =>
    typeof tool === "string" ? tool : { name: tool.name, description: tool.description, url: tool.url, parameters_json: JSON.stringify(tool.parameters) },
  );
}

export function toLifeRow(task: TaskRow): TaskLifeRow {
  return { state: task.state, attempts: task.attempts, leaseUntil: task.state === "running" ? task.deadline : null };
}

/** A statement that writes the swarm row: the cached row is stale once it ran. */
const WRITES_SWARM_ROW = /^\s*(?:UPDATE|INSERT\s+(?:OR\s+\w+\s+)?INTO|REPLACE\s+INTO|DELETE\s+FROM)\s+swarm\b/i;

export class SwarmStore {
  /**
   * The room's SqlStorage as every module must use it: a statement through it that writes the
   * swarm row (the room's own, the phases', anyone's) drops the row this request read.
   */
  readonly sql: SqlStorage;
  /** The swarm row as read in this request; undefined = read it again. */
  private row: SwarmRow | null | undefined = undefined;
  /** Memo of fixed(). */
  private parsed: FixedSettings | null = null;
  /** Memo of toRunConfig. */
  private runConfig: TaskRunConfig | null = null;
  /** Whether any task has an attempt that was deferred before its first call; null = not looked yet. */
  private anyFreeAttempts: boolean | null = null;

  constructor(sql: SqlStorage) {
    const forget = () => {
      this.row = undefined;
    };
    // A Proxy keeps SqlStorage's whole surface (its methods need the real object as `this`).
    this.sql = new Proxy(sql, {
      get(target, property) {
        if (property === "exec") {
          return (query: string, ...bindings: unknown[]) => {
            const cursor = target.exec(query, ...bindings);
            if (WRITES_SWARM_ROW.test(query)) forget();
            return cursor;
          };
        }
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  }

  static migrate(sql: SqlStorage): void {
    // Attempts deferred before any call, per task: each gives its place in max_attempts back (see freeAttempts).
    sql.exec("CREATE TABLE IF NOT EXISTS free_attempts (task_id TEXT PRIMARY KEY, n INTEGER NOT NULL)");
  }

  /** A request (an RPC or the alarm) begins: storage may have been written by others since the last one. */
  begin(): void {
    this.row = undefined;
  }

  /** The swarm row (null before start), read once per request and again after a write to it. Never mutate it. */
  swarm(): SwarmRow | null {
    if (this.row === undefined) this.row = this.sql.exec<SwarmRow>("SELECT * FROM swarm LIMIT 1").toArray()[0] ?? null;
    return this.row;
  }

  task(taskId: string): TaskRow | null {
    return this.sql.exec<TaskRow>(`SELECT ${TASK_COLUMNS} FROM tasks WHERE id = ?`, taskId).toArray()[0] ?? null;
  }

  /** The rows of these tasks (those that exist), by id, in one statement: a pull's reports read theirs at once. */
  tasksById(taskIds: readonly string[]): Map<string, TaskRow> {
    const rows = new Map<string, TaskRow>();
    if (taskIds.length === 0) return rows;
    const cursor = this.sql.exec<TaskRow>(`SELECT ${TASK_COLUMNS} FROM tasks WHERE id IN (SELECT value FROM json_each(?))`, JSON.stringify(taskIds));
    for (const row of cursor) rows.set(row.id, row);
    return rows;
  }

  /** The swarm row when it is the tenant's; null otherwise (or before start). */
  swarmOf(tenant: string): SwarmRow | null {
    const swarm = this.swarm();
    return swarm === null || swarm.tenant !== tenant ? null : swarm;
  }

  /** Stores the swarm's row as it starts, and its first tasks: the spec's, or the planner's call for its goal. */
  insertSwarm(input: StartSwarmInput, fields: { mix: WeightedModel[]; budget: Budget | null; tenantMonth: string | null; planner: PlannerSpec | null }): void {
    const { spec } = input;
    const { mix, budget, tenantMonth, planner } = fields;
    const origin = input.origin.kind === "api" ? "api" : `schedule:${input.origin.scheduleId}`;
    this.sql.exec(
      `INSERT INTO swarm (id, tenant, name, model, model_mix, budget, tenant_month, reduce, fallback, system, limits, response_format, metadata, origin, state, window, task_count, created_at,
         tools, http_allowlist, parallel_tool_calls, goal, planner, mcp_catalog, batch_input)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      input.swarmId,
      input.tenant,
      spec.name,
      toModelLabel(spec.model),
      JSON.stringify(mix),
      budget ? JSON.stringify(budget) : null,
      tenantMonth,
      spec.reduce ? JSON.stringify(spec.reduce) : null,
      spec.fallback && spec.fallback.length > 0 ? JSON.stringify(spec.fallback) : null,
      spec.system ?? null,
      JSON.stringify(spec.limits),
      spec.response_format ? JSON.stringify(spec.response_format) : null,
      spec.metadata ? JSON.stringify(spec.metadata) : null,
      origin,
      planner === null ? "running" : "planning",
      spec.limits.concurrency,
      input.tasks.length,
      input.createdAt,
      spec.tools && spec.tools.length > 0 ? JSON.stringify(spec.tools) : null,
      spec.http_allowlist && spec.http_allowlist.length > 0 ? JSON.stringify(spec.http_allowlist) : null,
      spec.parallel_tool_calls === undefined ? null : spec.parallel_tool_calls ? 1 : 0,
      spec.goal ?? null,
      planner === null ? null : JSON.stringify(planner),
      input.mcpCatalog !== undefined && input.mcpCatalog.length > 0 ? JSON.stringify(input.mcpCatalog) : null,
      input.batchInput ?? null,
    );
    const stored = this.swarm();
    if (planner !== null && stored !== null) {
      insertPlanTask(this.sql, stored, planner, spec.limits, null);
    } else {
      insertTasks(this.sql, input.tasks);
    }
  }

  /**
   * The swarm's settings that never change after it starts (limits, budget, models), parsed once
   * per instance instead of on every grant and record.
   */
  fixed(swarm: SwarmRow): FixedSettings {
    if (this.parsed !== null && this.parsed.id === swarm.id) return this.parsed;
    this.parsed = {
      id: swarm.id,
      limits: LimitsSchema.parse(JSON.parse(swarm.limits)),
      budget: swarm.budget === null ? null : BudgetSchema.parse(JSON.parse(swarm.budget)),
      mix: swarm.model_mix === null ? [{ model: swarm.model, weight: 1 }] : WeightedModelsSchema.parse(JSON.parse(swarm.model_mix)),
      fallback: swarm.fallback === null ? [] : z.array(z.string()).parse(JSON.parse(swarm.fallback)),
    };
    return this.parsed;
  }

  limits(swarm: SwarmRow): Limits {
    return this.fixed(swarm).limits;
  }

  budget(swarm: SwarmRow): Budget | null {
    return this.fixed(swarm).budget;
  }

  mix(swarm: SwarmRow): WeightedModel[] {
    return this.fixed(swarm).mix;
  }

  /** The swarm's run settings. They are fixed when it starts, so they are parsed once per instance. */
  toRunConfig(swarm: SwarmRow): TaskRunConfig {
    if (this.runConfig !== null) return this.runConfig;
    const responseFormat: ResponseFormat | null = swarm.response_format === null ? null : ResponseFormatSchema.parse(JSON.parse(swarm.response_format));
    this.runConfig = {
      swarmId: swarm.id,
      tenant: swarm.tenant,
      model: swarm.model,
      system: swarm.system,
      limits: this.limits(swarm),
      responseFormat,
      tools: swarm.tools === null ? [] : toToolWires(z.array(ToolSpecSchema).parse(JSON.parse(swarm.tools))),
      httpAllowlist: swarm.http_allowlist === null ? [] : z.array(z.string()).parse(JSON.parse(swarm.http_allowlist)),
      parallelToolCalls: swarm.parallel_tool_calls === null ? null : swarm.parallel_tool_calls === 1,
      mcpServers: swarm.mcp_catalog === null ? [] : z.array(PinnedMcpServerSchema).parse(JSON.parse(swarm.mcp_catalog)),
      batchInput: swarm.batch_input,
    };
    return this.runConfig;
  }

  /** Model calls one attempt of a sub-task may make: its agent loop's turns and a repair turn. */
  callsPerTask(swarm: SwarmRow): number {
    const config = this.toRunConfig(swarm);
    return callsPerAttempt({ tools: config.tools, response_format: config.responseFormat, limits: config.limits });
  }

  /**
   * Attempts of a task that were deferred before any call (no upstream key had a permit): each
   * gives its place in max_attempts back, so a task's attempts allowed are max_attempts plus these.
   */
  freeAttempts(taskId: string): number {
    this.anyFreeAttempts ??= this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM (SELECT 1 FROM free_attempts LIMIT 1)").one().n > 0;
    if (!this.anyFreeAttempts) return 0;
    return this.sql.exec<{ n: number }>("SELECT n FROM free_attempts WHERE task_id = ?", taskId).toArray()[0]?.n ?? 0;
  }

  /**
   * The attempts a task may be granted: `maxAttempts` plus those it gave back. They can only change
   * a decision about a task that has used `maxAttempts`, so only such a task's are read.
   */
  attemptsAllowed(task: Pick<TaskRow, "id" | "attempts">, maxAttempts: number): number {
    return task.attempts < maxAttempts ? maxAttempts : maxAttempts + this.freeAttempts(task.id);
  }

  /** One more attempt of the task was deferred before any call. */
  addFreeAttempt(taskId: string): void {
    this.sql.exec("INSERT INTO free_attempts (task_id, n) VALUES (?, 1) ON CONFLICT (task_id) DO UPDATE SET n = n + 1", taskId);
    this.anyFreeAttempts = true;
  }
}
