// The SwarmRoom's stored row shapes and the JSON columns' schemas (docs/data.md), shared by the
// room and the modules that read and write its SQLite.
import { z } from "zod";
import { ResponseFormatSchema } from "../core/spec-schema.ts";
import type { CircuitState, SwarmState, TaskKind, TaskState } from "../core/swarm-contract.ts";

/** The `swarm` row (docs/data.md). */
export type SwarmRow = {
  id: string;
  tenant: string;
  name: string;
  model: string;
  system: string | null;
  limits: string;
  response_format: string | null;
  metadata: string | null;
  origin: string;
  state: SwarmState;
  window: number;
  task_count: number;
  created_at: number;
  finished_at: number | null;
  index_dirty: number;
  fallback: string | null;
  window_credit: number;
  window_decreased_at: number | null;
  retries_used: number;
  model_mix: string | null;
  budget: string | null;
  tenant_month: string | null;
  tenant_settled: number;
  reduce: string | null;
  reason: string | null;
  tools: string | null;
  http_allowlist: string | null;
  parallel_tool_calls: number | null;
  goal: string | null;
  planner: string | null;
  /** A batch's input file (its R2 key); null for a swarm from a spec. */
  batch_input: string | null;
  plan_attempts: number;
  plan_errors: string | null;
  reduction: string | null;
  mcp_catalog: string | null;
  /** The run of the same permanent failure (FailureStreakSchema JSON); null before any. */
  failure_streak: string | null;
  /** Prompt-cache warm-up: NULL none held; 0 the first task not granted yet; > 0 the rest held until then (epoch ms). */
  warmup_until: number | null;
};

export type CircuitRow = {
  model: string;
  state: CircuitState;
  failures: number;
  first_failure_at: number | null;
  opened_at: number | null;
  probes: number;
};

/** The columns of `tasks` that its life cycle reads (TASK_COLUMNS). */
export type TaskRow = {
  seq: number;
  id: string;
  state: TaskState;
  attempts: number;
  deadline: number | null;
  retry_at: number | null;
  long: number;
  reserved_usd: number;
  reserved_tokens: number;
  kind: TaskKind;
  model_hint: string | null;
  /** 1: a running task leased outside the window, not started yet (src/core/standby.ts). */
  standby: number;
};

/** The states whose tasks hold a lease (`deadline`), as SQL: a WHERE on them uses tasks_by_state. */
export const LEASED_STATES = "('running', 'dispatched')";

export const TASK_COLUMNS = "seq, id, state, attempts, deadline, retry_at, long, reserved_usd, reserved_tokens, kind, model_hint, standby";

/** `tasks.checkpoint`: AgentCheckpoint. */
export const CheckpointSchema = z.object({
  step: z.number(),
  turns: z.number(),
  toolCalls: z.number(),
  repairs: z.number(),
  messages_json: z.string(),
  mcp_calls_json: z.string().optional(),
  answer_json: z.string().optional(),
});
/** `tasks.override`: TaskOverride of a plan or reduce task. */
export const OverrideSchema = z.object({ system: z.string(), responseFormat: ResponseFormatSchema.nullable(), maxOutputTokens: z.number() });
/** `swarm.model_mix`. */
export const WeightedModelsSchema = z.array(z.object({ model: z.string(), weight: z.number() }));
