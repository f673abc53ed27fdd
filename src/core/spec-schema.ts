// The swarm spec accepted by POST /v1/swarms (public contract: ../shared/API.md). No I/O.
// Parsing fills defaults, so everything downstream works with a complete, validated spec.
import { z } from "zod";
import { ReduceSpecSchema } from "./reducers.ts";

export const MAX_TASKS = 10_000;
export const MAX_PROMPT_CHARS = 200_000;

/** Task ids end up in call ids (`swarm:task:attempt:turn`) and URLs: no colon, no whitespace. */
export const TaskIdSchema = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[^\s:]+$/, "task id must not contain whitespace or ':'");

export const TaskInputSchema = z.strictObject({
  id: TaskIdSchema.optional(),
  prompt: z.string().min(1, "prompt must not be empty").max(MAX_PROMPT_CHARS),
  /** A long-running task: runs on the long-chain queue with `limits.long_timeout_s`. */
  long: z.boolean().optional(),
});
export type TaskInput = z.infer<typeof TaskInputSchema>;

export const LimitsSchema = z.strictObject({
  /** The swarm's window W: never more than this many tasks in flight. */
  concurrency: z.number().int().min(1).max(1_500).default(32),
  max_output_tokens: z.number().int().min(1).max(128_000).default(1_024),
  /** Per model call. */
  timeout_s: z.number().min(1).max(600).default(60),
  /** Model calls a task may make across queue deliveries before it fails. */
  max_attempts: z.number().int().min(1).max(10).default(4),
  /**
   * Per model call of a task flagged `long`. At most 12 minutes, so a call, its recording and the
   * acks end inside the queue consumer's 15-minute wall time.
   */
  long_timeout_s: z.number().min(1).max(720).default(600),
  /**
   * Retries the whole swarm may spend (a dead upstream must not multiply traffic); once spent, a
   * retryable failure ends its task. Default: half the task count, at least 10.
   */
  retry_budget: z.number().int().min(0).max(100_000).optional(),
});
export type Limits = z.infer<typeof LimitsSchema>;

export const ResponseFormatSchema = z.discriminatedUnion("type", [
  z.strictObject({ type: z.literal("text") }),
  z.strictObject({ type: z.literal("json_object") }),
  z.strictObject({
    type: z.literal("json_schema"),
    json_schema: z.strictObject({
      name: z.string().min(1).max(64).regex(/^[A-Za-z0-9_-]+$/),
      description: z.string().max(1_000).optional(),
      schema: z.record(z.string(), z.unknown()),
      strict: z.boolean().optional(),
    }),
  }),
]);
export type ResponseFormat = z.infer<typeof ResponseFormatSchema>;

export const ModelNameSchema = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[\w.\-/:@]+$/, "model name has characters a model id never has");

/** `model`: one name, or a weighted mix routed per task by a hash of swarm and task id. */
export const ModelChoiceSchema = z.union([
  ModelNameSchema,
  z
    .array(z.strictObject({ model: ModelNameSchema, weight: z.number().positive().max(1_000_000) }))
    .min(1, "a model mix needs at least one model")
    .max(20),
]);
export type ModelChoice = z.infer<typeof ModelChoiceSchema>;

/** A swarm's spending cap: dispatch stops before a call could exceed it. */
export const BudgetSchema = z
  .strictObject({
    max_usd: z.number().positive().max(1_000_000).optional(),
    max_tokens: z.number().int().positive().max(10_000_000_000).optional(),
    /** When less than `fallback_at` of the budget is left, route tasks to this (cheaper) gateway tier. */
    fallback_tier: z.string().min(1).max(32).optional(),
    fallback_at: z.number().gt(0).lt(1).default(0.2),
  })
  .refine((b) => b.max_usd !== undefined || b.max_tokens !== undefined, "a budget needs max_usd or max_tokens");
export type Budget = z.infer<typeof BudgetSchema>;
/** Just the caps of a budget: what the budget maths needs. */
export type BudgetCaps = Pick<Budget, "max_usd" | "max_tokens">;

/** Free-form labels a user attaches to a swarm (team, ticket, commit): flat and small. */
export const SwarmMetadataSchema = z
  .record(z.string().max(100), z.union([z.string().max(1_000), z.number(), z.boolean(), z.null()]))
  .refine((m) => Object.keys(m).length <= 50, "metadata holds at most 50 keys");

export const SwarmSpecSchema = z.strictObject({
  name: z.string().min(1).max(100),
  model: ModelChoiceSchema,
  /** Tried in order while the primary model's circuit is open. */
  fallback: z.array(ModelNameSchema).max(5).optional(),
  system: z.string().max(MAX_PROMPT_CHARS).optional(),
  tasks: z.array(TaskInputSchema).min(1, "a swarm needs at least one task").max(MAX_TASKS),
  limits: LimitsSchema.prefault({}),
  response_format: ResponseFormatSchema.optional(),
  budget: BudgetSchema.optional(),
  /** How the results become one answer (default: collect, the outputs in task order). */
  reduce: ReduceSpecSchema.optional(),
  metadata: SwarmMetadataSchema.optional(),
});
export type SwarmSpec = z.infer<typeof SwarmSpecSchema>;

/** A task after planning: its id is always set and unique within the swarm. */
export interface PlannedTask {
  id: string;
  prompt: string;
  long?: boolean;
}
