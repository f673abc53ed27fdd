// The swarm spec accepted by POST /v1/swarms (public contract: docs/configuration.md). No I/O.
// Parsing fills defaults, so everything downstream works with a complete, validated spec.
import { z } from "zod";
import { HedgeSpecSchema } from "./hedge-policy.ts";
import { ReduceSpecSchema } from "./reducers.ts";

export const MAX_TASKS = 10_000;
export const MAX_PROMPT_CHARS = 200_000;
export const MAX_GOAL_CHARS = 100_000;

/** Task ids end up in call ids (`swarm:task:attempt:turn`) and URLs: no colon, no whitespace. */
export const TaskIdSchema = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[^\s:]+$/, "task id must not contain whitespace or ':'");

/** Task ids starting with "__" are the engine's own (the planner, the reducers). */
export const UserTaskIdSchema = TaskIdSchema.refine((id) => !id.startsWith("__"), 'task ids starting with "__" are reserved');

export const TaskInputSchema = z.strictObject({
  id: UserTaskIdSchema.optional(),
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
   * retryable failure ends its task. 429s spend it (not a task's max_attempts). Default: the task
   * count, at least 10.
   */
  retry_budget: z.number().int().min(0).max(100_000).optional(),
  /** Model calls of one task's agent loop (tool turns plus the final answer; a repair turn is extra). */
  max_turns: z.number().int().min(1).max(50).default(8),
  /** Tool calls one task may make in all; past it the model is asked for its final answer. */
  max_tool_calls: z.number().int().min(0).max(500).default(16),
  /** A backup call for a straggler (docs/configuration.md "Hedged calls"); off when absent. */
  hedge: HedgeSpecSchema.optional(),
  /**
   * Fail fast: after this many sub-tasks in a row end with the same permanent error class (no
   * success between), dispatch stops and the tasks not yet run end `skipped`. 0 turns it off.
   */
  stop_after_failures: z.number().int().min(0).max(100_000).default(20),
  /**
   * Prompt-cache warm-up: with "auto", a swarm whose tasks share a prefix (tools, response format,
   * system prompt) of ≥ 1,024 tokens, estimated, starts one task and the rest once its first call
   * is recorded (at most WARMUP_RELEASE_MAX_MS later), so the upstream caches the prefix once.
   */
  cache_warmup: z.union([z.literal("auto"), z.literal(false)]).default("auto"),
});
export type Limits = z.infer<typeof LimitsSchema>;

export const ResponseFormatSchema = z.discriminatedUnion("type", [
  z.strictObject({ type: z.literal("text") }),
  z.strictObject({ type: z.literal("json_object") }),
  z.strictObject({
    type: z.literal("json_schema"),
    json_schema: z.strictObject({
      name: z
        .string()
        .min(1)
        .max(64)
        .regex(/^[A-Za-z0-9_-]+$/),
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

export const BUILTIN_TOOLS = ["scratchpad", "http_fetch"] as const;
export type BuiltinTool = (typeof BUILTIN_TOOLS)[number];
/** Names the model sees for the built-in tools; a webhook tool may not take them. */
export const BUILTIN_TOOL_NAMES: readonly string[] = ["scratchpad_get", "scratchpad_put", "scratchpad_list", "http_fetch"];

/** The prefix of every MCP tool's name as the model sees it: `mcp__<server>__<tool>`. */
export const MCP_TOOL_PREFIX = "mcp__";

/** A tool the agent calls by POSTing the model's arguments, signed, to `url` (see docs/agents-and-tools.md "Webhook tools"). */
export const WebhookToolSchema = z.strictObject({
  name: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/, "tool names are 1-64 letters, digits, '_' or '-'")
    .refine((name) => !BUILTIN_TOOL_NAMES.includes(name), "this name belongs to a built-in tool")
    .refine((name) => !name.startsWith(MCP_TOOL_PREFIX), `names starting with "${MCP_TOOL_PREFIX}" belong to MCP servers' tools`),
  description: z.string().min(1).max(1_024),
  /** JSON Schema of the arguments object. */
  parameters: z
    .record(z.string(), z.unknown())
    .refine((p) => p.type === undefined || p.type === "object", 'parameters must be an object schema ("type": "object")'),
  url: z.url({ protocol: /^https?$/, error: "url must be an http(s) URL" }).max(2_048),
});
export type WebhookTool = z.infer<typeof WebhookToolSchema>;

export const ToolSpecSchema = z.union([z.enum(BUILTIN_TOOLS), WebhookToolSchema]);
export type ToolSpec = z.infer<typeof ToolSpecSchema>;

export const MAX_MCP_SERVERS = 8;

/**
 * An MCP server whose tools the sub-agents may call (docs/agents-and-tools.md "MCP servers"): a
 * Streamable HTTP endpoint of either protocol era, under the same egress guard as http_fetch.
 */
export const McpServerSpecSchema = z.strictObject({
  /** Lowercase letters and digits, so `mcp__<name>__<tool>` splits one way only. */
  name: z.string().regex(/^[a-z][a-z0-9]{0,15}$/, "an MCP server name is a lowercase letter then up to 15 lowercase letters or digits"),
  url: z.url({ protocol: /^https?$/, error: "url must be an http(s) URL" }).max(2_048),
  /** The server's tools the agents get: a list of names, or "*" for every tool it lists at submit. */
  tools: z.union([z.literal("*"), z.array(z.string().min(1).max(128)).min(1, 'list at least one tool, or "*" for all of them').max(64)]).default("*"),
  /** Seconds one tool call may take. */
  timeout_s: z.number().min(1).max(120).default(30),
  /** A tenant secret (PUT /v1/secrets/:name) sent as `Authorization: Bearer <value>`. */
  credential: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/, "a secret name is 1-64 letters, digits, '_' or '-'")
    .optional(),
});
export type McpServerSpec = z.infer<typeof McpServerSpecSchema>;

/** `host`, `*.domain` (subdomains only), optionally `:port`. */
export const AllowlistEntrySchema = z
  .string()
  .min(1)
  .max(253)
  .regex(/^(\*\.)?[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/, "an allowlist entry is a host name, *.domain or [ipv6], optionally with :port");

/** A spec with a goal instead of tasks: a planner model splits it into sub-tasks. */
export const PlannerSpecSchema = z.strictObject({
  /** The planner's model (default: the swarm's model; the first of a mix). */
  model: ModelNameSchema.optional(),
  max_tasks: z.number().int().min(1).max(1_000).default(100),
  instructions: z.string().min(1).max(10_000).optional(),
});
export type PlannerSpec = z.infer<typeof PlannerSpecSchema>;

/** Free-form labels a user attaches to a swarm (team, ticket, commit): flat and small. */
export const SwarmMetadataSchema = z
  .record(z.string().max(100), z.union([z.string().max(1_000), z.number(), z.boolean(), z.null()]))
  .refine((m) => Object.keys(m).length <= 50, "metadata holds at most 50 keys");

export const SwarmSpecSchema = z
  .strictObject({
    name: z.string().min(1).max(100),
    model: ModelChoiceSchema,
    /** Tried in order while the primary model's circuit is open. */
    fallback: z.array(ModelNameSchema).max(5).optional(),
    system: z.string().max(MAX_PROMPT_CHARS).optional(),
    /** The sub-tasks, or (instead) a `goal` the planner splits. */
    tasks: z.array(TaskInputSchema).min(1, "a swarm needs at least one task").max(MAX_TASKS).optional(),
    goal: z.string().min(1).max(MAX_GOAL_CHARS).optional(),
    planner: PlannerSpecSchema.optional(),
    /** Tools every sub-agent may call: built-ins by name, webhook tools by definition. */
    tools: z.array(ToolSpecSchema).max(32).optional(),
    /** MCP servers whose tools the agents may call, as `mcp__<server>__<tool>`. */
    mcp_servers: z.array(McpServerSpecSchema).max(MAX_MCP_SERVERS).optional(),
    /** Hosts `http_fetch` may reach. */
    http_allowlist: z.array(AllowlistEntrySchema).max(100).optional(),
    /** Passed to the upstream: may the model ask for several tool calls in one turn (default: the upstream's). */
    parallel_tool_calls: z.boolean().optional(),
    limits: LimitsSchema.prefault({}),
    response_format: ResponseFormatSchema.optional(),
    budget: BudgetSchema.optional(),
    /** How the results become one answer (default: collect, the outputs in task order). */
    reduce: ReduceSpecSchema.optional(),
    metadata: SwarmMetadataSchema.optional(),
  })
  // Also when other fields are wrong (a refinement normally waits for a valid object), so an empty
  // spec hears about its tasks along with its name and model.
  .refine((spec) => spec.tasks !== undefined || spec.goal !== undefined, {
    path: ["tasks"],
    message: "a swarm needs tasks, or a goal for the planner to split",
    when: (payload) => typeof payload.value === "object" && payload.value !== null && !Array.isArray(payload.value),
  })
  .superRefine((spec, ctx) => {
    if (spec.tasks !== undefined && spec.goal !== undefined) {
      ctx.addIssue({ code: "custom", path: ["goal"], message: "give tasks or a goal, not both" });
    }
    if (spec.planner !== undefined && spec.goal === undefined) {
      ctx.addIssue({ code: "custom", path: ["planner"], message: "planner needs a goal" });
    }
    const tools = spec.tools ?? [];
    const names = new Map<string, number>();
    tools.forEach((tool, i) => {
      const name = typeof tool === "string" ? tool : tool.name;
      const first = names.get(name);
      if (first !== undefined) ctx.addIssue({ code: "custom", path: ["tools", i], message: `duplicate tool "${name}" (first at tools.${first})` });
      else names.set(name, i);
    });
    const servers = new Map<string, number>();
    (spec.mcp_servers ?? []).forEach((server, i) => {
      const first = servers.get(server.name);
      if (first !== undefined)
        ctx.addIssue({ code: "custom", path: ["mcp_servers", i, "name"], message: `duplicate MCP server "${server.name}" (first at mcp_servers.${first})` });
      else servers.set(server.name, i);
      if (server.tools === "*") return;
      const seen = new Map<string, number>();
      server.tools.forEach((tool, j) => {
        const at = seen.get(tool);
        if (at !== undefined)
          ctx.addIssue({ code: "custom", path: ["mcp_servers", i, "tools", j], message: `duplicate tool "${tool}" (first at mcp_servers.${i}.tools.${at})` });
        else seen.set(tool, j);
      });
    });
    if (tools.includes("http_fetch") && (spec.http_allowlist ?? []).length === 0) {
      ctx.addIssue({ code: "custom", path: ["http_allowlist"], message: "http_fetch needs an http_allowlist of the hosts it may reach" });
    }
  });
export type SwarmSpec = z.infer<typeof SwarmSpecSchema>;

/** A task after planning: its id is always set and unique within the swarm. */
export interface PlannedTask {
  id: string;
  prompt: string;
  long?: boolean;
  /** The task's own model, instead of the swarm's model or mix (a batch line's `body.model`). */
  model?: string;
}
