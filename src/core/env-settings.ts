// The one place both Workers turn their string settings (vars and secrets) into typed values: one
// reader per kind of setting, one per consumer (the SwarmRoom, the orchestrator, the agent and its
// tools). It takes a plain record of strings, never a Cloudflare Env. Errors name the setting and
// what it accepts; a var's bad value is quoted, a secret's never. No I/O.
//
// Kind readers return Results. Consumer readers throw, naming every bad setting at once: their
// callers are composition roots, for which a bad setting is an operator error that fails the
// request or batch with the cause in the log. The orchestrator's prices, gateway and tenant budgets
// stay Results, so that only the routes that need them fail.
import type { z } from "zod";
import { API_KEY_KINDS, type ApiKeyKind } from "./api-key.ts";
import { toIssuePath } from "./errors.ts";
import { GatewayConfigSchema, UpstreamKeysSchema, withGatewayPrices, type GatewayConfig } from "./gateway-config.ts";
import { HEADER_SLOTS_PER_INVOCATION } from "./lane-sizing.ts";
import { parsePriceTable, type PriceTable } from "./pricing.ts";
import { err, ok, type Result } from "./result.ts";
import { TenantBudgetsSchema, type TenantBudgets } from "./tenant-budget.ts";

/** Settings by name, as a Worker's env holds them (unset = undefined). */
export type SettingsEnv<K extends string = string> = Readonly<Partial<Record<K, string | undefined>>>;

const isBlank = (text: string | undefined): boolean => (text ?? "").trim() === "";

// ── Kinds ─────────────────────────────────────────────────────────────────────────────────────

export interface IntRange {
  min: number;
  /** Absent: no bound below the largest safe integer. */
  max?: number;
  /** The value when the setting is unset or blank; absent = the setting is required. */
  fallback?: number;
}

/** A whole number in decimal digits ("1e3", "0x10", "-1" and "1.5" are refused), within the range. */
export function readIntSetting<K extends string>(env: SettingsEnv<K>, name: K, range: IntRange): Result<number, string> {
  const raw = (env[name] ?? "").trim();
  if (raw === "" && range.fallback !== undefined) return ok(range.fallback);
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(n) || n < range.min || n > (range.max ?? Number.MAX_SAFE_INTEGER)) {
    return err(`${name} must be ${toRangeText(range)}, got ${JSON.stringify(raw)}`);
  }
  return ok(n);
}

function toRangeText({ min, max }: IntRange): string {
  if (max !== undefined) return `an integer from ${min} to ${max}`;
  return min === 0 ? "a non-negative integer" : `an integer of at least ${min}`;
}

/** "true" or "false" in any case; unset or blank = `fallback`. */
export function readBooleanSetting<K extends string>(env: SettingsEnv<K>, name: K, options: { fallback: boolean }): Result<boolean, string> {
  const raw = (env[name] ?? "").trim();
  switch (raw.toLowerCase()) {
    case "":
      return ok(options.fallback);
    case "true":
      return ok(true);
    case "false":
      return ok(false);
    default:
      return err(`${name} must be "true" or "false", got ${JSON.stringify(raw)}`);
  }
}

/** A secret (or any free text), trimmed; unset or blank = null. Nothing to refuse, so nothing is ever echoed. */
export function readSecretSetting<K extends string>(env: SettingsEnv<K>, name: K): string | null {
  const value = (env[name] ?? "").trim();
  return value === "" ? null : value;
}

/** A comma-separated list, each entry trimmed, empty entries dropped; unset = []. */
export function readListSetting<K extends string>(env: SettingsEnv<K>, name: K): string[] {
  return (env[name] ?? "")
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry.length > 0);
}

export interface JsonSettingOptions<B> {
  /** The value of an unset or blank setting. */
  blank: B;
  /**
   * For a secret: what it must be. Its errors then say only this, never its content or a path into
   * it (a key name may be as telling as a value).
   */
  secretFormat?: string;
}

/** JSON validated by `schema`; errors give each issue's path within the setting. */
export function readJsonSetting<K extends string, S extends z.ZodType, B>(
  env: SettingsEnv<K>,
  name: K,
  schema: S,
  options: JsonSettingOptions<B>,
): Result<z.output<S> | B, string> {
  const text = env[name];
  if (text === undefined || isBlank(text)) return ok(options.blank);
  return parseJsonSetting(name, text, schema, options.secretFormat);
}

function parseJsonSetting<S extends z.ZodType>(name: string, text: string, schema: S, secretFormat?: string): Result<z.output<S>, string> {
  let input: unknown;
  try {
    input = JSON.parse(text);
  } catch {
    return err(secretFormat === undefined ? `${name} is not valid JSON` : toSecretError(name, secretFormat));
  }
  return checkJsonSetting(name, input, schema, secretFormat);
}

function checkJsonSetting<S extends z.ZodType>(name: string, input: unknown, schema: S, secretFormat?: string): Result<z.output<S>, string> {
  const parsed = schema.safeParse(input);
  if (parsed.success) return ok(parsed.data);
  if (secretFormat !== undefined) return err(toSecretError(name, secretFormat));
  return err(`${name}: ${parsed.error.issues.map((issue) => `${toIssuePath(issue.path)}: ${issue.message}`).join("; ")}`);
}

const toSecretError = (name: string, format: string): string => `${name} must be ${format} (its content is not shown)`;

// ── Settings more than one consumer reads ─────────────────────────────────────────────────────

/**
 * GATEWAY_CONFIG as the agent reads it. Blank → the single-upstream default: `defaultBaseUrl` (the
 * agent's MODEL_BASE_URL) with one unlimited key `default`, serving every model by its own name.
 */
export function parseGatewayConfig(text: string | undefined, defaultBaseUrl: string): Result<GatewayConfig, string> {
  if (text === undefined || isBlank(text)) {
    return checkJsonSetting(
      "GATEWAY_CONFIG",
      { upstreams: { default: { base_url: defaultBaseUrl, keys: [{ id: "default" }] } }, default_upstream: "default" },
      GatewayConfigSchema,
    );
  }
  return parseJsonSetting("GATEWAY_CONFIG", text, GatewayConfigSchema);
}

/** GATEWAY_CONFIG as the orchestrator and the SwarmRoom read it: blank = no gateway, every model name is served. */
function readServedModels(env: SettingsEnv<"GATEWAY_CONFIG">): Result<GatewayConfig | null, string> {
  return readJsonSetting(env, "GATEWAY_CONFIG", GatewayConfigSchema, { blank: null });
}

/**
 * The price table every part of the engine uses: the defaults, MODEL_PRICES over them, and the
 * prices the gateway config gives its models over both. Blank GATEWAY_CONFIG adds nothing.
 */
export function parseEffectivePrices(modelPrices: string | undefined, gatewayConfig: string | undefined): Result<PriceTable, string> {
  const table = parsePriceTable(modelPrices);
  if (!table.ok) return table;
  const gateway = readServedModels({ GATEWAY_CONFIG: gatewayConfig });
  if (!gateway.ok) return gateway;
  return ok(gateway.value === null ? table.value : withGatewayPrices(table.value, gateway.value));
}

/** UPSTREAM_KEYS, the agent's secret of key id → API key; blank = none. */
export function readUpstreamKeys(env: SettingsEnv<"UPSTREAM_KEYS">): Result<Record<string, string>, string> {
  return readJsonSetting(env, "UPSTREAM_KEYS", UpstreamKeysSchema, { blank: {}, secretFormat: "a JSON object of key id → API key" });
}

function readTenantBudgets(env: SettingsEnv<"TENANT_BUDGETS">): Result<TenantBudgets, string> {
  return readJsonSetting(env, "TENANT_BUDGETS", TenantBudgetsSchema, { blank: {} });
}

/** API_KEY_KIND: "live" (the default) or "local". */
function readApiKeyKind(env: SettingsEnv<"API_KEY_KIND">): Result<ApiKeyKind, string> {
  const raw = (env.API_KEY_KIND ?? "").trim();
  if (raw === "") return ok("live");
  const kind = API_KEY_KINDS.find((k) => k === raw);
  return kind === undefined ? err(`API_KEY_KIND must be "live" or "local", got ${JSON.stringify(raw)}`) : ok(kind);
}

/** Throws once, naming every refused setting (each once: a bad GATEWAY_CONFIG also fails the prices). */
function requireSettings(consumer: string, results: readonly Result<unknown, string>[]): void {
  const problems = [...new Set(results.flatMap((result) => (result.ok ? [] : [result.error])))];
  if (problems.length > 0) throw new Error(`invalid ${consumer} settings: ${problems.join("; ")}`);
}

/** The value of a result that requireSettings has passed. */
function passedValue<T>(result: Result<T, string>): T {
  if (!result.ok) throw new Error(result.error);
  return result.value;
}

// ── Consumers ─────────────────────────────────────────────────────────────────────────────────

export type RoomSettingName =
  | "LANE_SLOTS"
  | "MODEL_PRICES"
  | "GATEWAY_CONFIG"
  | "TENANT_BUDGETS"
  | "LEASE_S"
  | "LEASE_GRACE_S"
  | "TOOL_TURN_LEASE_S"
  | "LEDGER_FLUSH_MS"
  | "BATCH_FLUSH_MS"
  | "TICKET_PULL_DEADLINE_S";

export interface RoomSettings {
  /** Tasks a ticket's lane is assumed to run at once until a lane reports its own (LANE_SLOTS). */
  laneSlots: number;
  prices: PriceTable;
  /** The gateway's models when one is configured; null = every model name is served. */
  gateway: GatewayConfig | null;
  tenantBudgets: TenantBudgets;
  /** A lease's length (LEASE_S): lanes renew it while a task runs, so a dead lane's tasks return this soon. */
  leaseMs: number;
  /** Added to a task's run time for its hard bound (`runUntil`), whatever the heartbeats say. */
  leaseGraceMs: number;
  /** Added to a tool-using sub-agent's lease per turn, for its tool calls. */
  toolTurnLeaseMs: number;
  flushMs: number;
  /** A batch line that ended is in an R2 part of its output or error file this soon (BATCH_FLUSH_MS). */
  batchFlushMs: number;
  /** A ticket nobody pulls within this long is taken as lost and issued again (TICKET_PULL_DEADLINE_S). */
  ticketPullDeadlineMs: number;
}

export function readRoomSettings(env: SettingsEnv<RoomSettingName>): RoomSettings {
  const laneSlots = readIntSetting(env, "LANE_SLOTS", { min: 1, max: MAX_AGENT_CONCURRENCY, fallback: HEADER_SLOTS_PER_INVOCATION });
  const prices = parseEffectivePrices(env.MODEL_PRICES, env.GATEWAY_CONFIG);
  const gateway = readServedModels(env);
  const tenantBudgets = readTenantBudgets(env);
  const leaseS = readIntSetting(env, "LEASE_S", { min: 2, max: 300, fallback: 10 });
  const leaseGraceS = readIntSetting(env, "LEASE_GRACE_S", { min: 0, fallback: 30 });
  const toolTurnLeaseS = readIntSetting(env, "TOOL_TURN_LEASE_S", { min: 0, fallback: 30 });
  const flushMs = readIntSetting(env, "LEDGER_FLUSH_MS", { min: 0, fallback: 1_000 });
  const batchFlushMs = readIntSetting(env, "BATCH_FLUSH_MS", { min: 0, max: 60_000, fallback: 1_000 });
  const ticketPullDeadlineS = readIntSetting(env, "TICKET_PULL_DEADLINE_S", { min: 1, max: 3_600, fallback: 10 });
  requireSettings("SwarmRoom", [laneSlots, prices, gateway, tenantBudgets, leaseS, leaseGraceS, toolTurnLeaseS, flushMs, batchFlushMs, ticketPullDeadlineS]);
  return {
    laneSlots: passedValue(laneSlots),
    prices: passedValue(prices),
    gateway: passedValue(gateway),
    tenantBudgets: passedValue(tenantBudgets),
    leaseMs: passedValue(leaseS) * 1_000,
    leaseGraceMs: passedValue(leaseGraceS) * 1_000,
    toolTurnLeaseMs: passedValue(toolTurnLeaseS) * 1_000,
    flushMs: passedValue(flushMs),
    batchFlushMs: passedValue(batchFlushMs),
    ticketPullDeadlineMs: passedValue(ticketPullDeadlineS) * 1_000,
  };
}

export type OrchestratorSettingName =
  | "MAX_BODY_BYTES"
  | "FILES_MAX_BYTES"
  | "API_TOKENS"
  | "ALLOW_PRIVATE_NETWORK"
  | "WEBHOOK_SECRET"
  | "SECRETS_KEY"
  | "MODEL_PRICES"
  | "GATEWAY_CONFIG"
  | "TENANT_BUDGETS"
  | "API_KEY_KIND";

export interface OrchestratorConfig {
  /** Largest request body accepted on /v1/*, in bytes. */
  maxBodyBytes: number;
  /** Largest file POST /v1/files accepts (streamed into R2; not bound by maxBodyBytes), in bytes. */
  filesMaxBytes: number;
  /** Bearer tokens accepted on /v1/*; empty means the server refuses every request. */
  apiTokens: readonly string[];
  /** Tools may target loopback and private addresses (ALLOW_PRIVATE_NETWORK, local development only). */
  allowPrivateNetwork: boolean;
  /** WEBHOOK_SECRET, from which each tenant's webhook signing key is derived; null when unset. */
  webhookSecret: string | null;
  /** SECRETS_KEY, from which each tenant's secrets key is derived (src/secrets/secret-box.ts); null when unset. */
  secretsKey: string | null;
  /** What new tenant API keys start with: `es_live_` (production) or `es_local_` (API_KEY_KIND). */
  apiKeyKind: ApiKeyKind;
}

export interface OrchestratorSettings {
  config: OrchestratorConfig;
  /** Defaults, MODEL_PRICES over them, the gateway's model prices over both. */
  prices: Result<PriceTable, string>;
  /** The gateway's models; null = no GATEWAY_CONFIG, every model name is served. */
  gateway: Result<GatewayConfig | null, string>;
  tenantBudgets: Result<TenantBudgets, string>;
}

/** FILES_MAX_BYTES when unset: 200 MB, OpenAI's own limit for a batch input file. */
export const DEFAULT_FILES_MAX_BYTES = 200 * 1024 * 1024;

/** API_TOKENS and WEBHOOK_SECRET may be absent (an unset secret is), whatever the generated Env says. */
export function readOrchestratorSettings(env: SettingsEnv<OrchestratorSettingName>): OrchestratorSettings {
  const maxBodyBytes = readIntSetting(env, "MAX_BODY_BYTES", { min: 1 });
  const filesMaxBytes = readIntSetting(env, "FILES_MAX_BYTES", { min: 1, fallback: DEFAULT_FILES_MAX_BYTES });
  const allowPrivateNetwork = readBooleanSetting(env, "ALLOW_PRIVATE_NETWORK", { fallback: false });
  const apiKeyKind = readApiKeyKind(env);
  requireSettings("orchestrator", [maxBodyBytes, filesMaxBytes, allowPrivateNetwork, apiKeyKind]);
  return {
    config: {
      maxBodyBytes: passedValue(maxBodyBytes),
      filesMaxBytes: passedValue(filesMaxBytes),
      apiTokens: readListSetting(env, "API_TOKENS"),
      allowPrivateNetwork: passedValue(allowPrivateNetwork),
      webhookSecret: readSecretSetting(env, "WEBHOOK_SECRET"),
      secretsKey: readSecretSetting(env, "SECRETS_KEY"),
      apiKeyKind: passedValue(apiKeyKind),
    },
    prices: parseEffectivePrices(env.MODEL_PRICES, env.GATEWAY_CONFIG),
    gateway: readServedModels(env),
    tenantBudgets: readTenantBudgets(env),
  };
}

export const MAX_AGENT_CONCURRENCY = 1_000;
/** A lane with nothing running waits at most this long for a retry to come due; longer waits end the lane. */
export const MAX_INLINE_RETRY_S = 30;
/** Lanes stop taking tasks by then, so every call ends inside the consumer's 15-minute wall time. */
export const MAX_PULL_FOR_S = 600;
/** A call waits at most this long for a key's permit; longer waits belong to the queue. */
export const MAX_PERMIT_WAIT_S = 120;

export interface AgentSettings {
  /** Tasks one lane runs at once at most. */
  concurrency: number;
  inlineRetryMaxS: number;
  permitWaitMaxS: number;
  /** Connections waiting for response headers per invocation (production's 6); 0 = no gate. */
  headerSlots: number;
  pullForS: number;
  maxTasksPerInvocation: number;
  /**
   * Where a ticket's lane runs: a lane executor of its own ("executor", a Durable Object: its own
   * invocation's connections, and Queues free to scale) or the queue consumer's invocation
   * ("consumer": the batch's lanes share its limits).
   */
  laneHost: LaneHost;
}

export const LANE_HOSTS = ["executor", "consumer"] as const;
export type LaneHost = (typeof LANE_HOSTS)[number];

/** One of `choices`; unset or blank = `fallback`. */
export function readChoiceSetting<K extends string, C extends string>(env: SettingsEnv<K>, name: K, choices: readonly C[], fallback: C): Result<C, string> {
  const raw = (env[name] ?? "").trim();
  if (raw === "") return ok(fallback);
  const choice = choices.find((c) => c === raw);
  return choice === undefined ? err(`${name} must be one of ${choices.map((c) => JSON.stringify(c)).join(", ")}, got ${JSON.stringify(raw)}`) : ok(choice);
}

export type AgentSettingName =
  | "AGENT_LANE_HOST"
  | "AGENT_CONCURRENCY"
  | "INLINE_RETRY_MAX_S"
  | "PERMIT_WAIT_MAX_S"
  | "UPSTREAM_HEADER_SLOTS"
  | "AGENT_PULL_FOR_S"
  | "AGENT_MAX_TASKS_PER_INVOCATION";

export function readAgentSettings(env: SettingsEnv<AgentSettingName>): AgentSettings {
  const concurrency = readIntSetting(env, "AGENT_CONCURRENCY", { min: 1, max: MAX_AGENT_CONCURRENCY });
  const inlineRetryMaxS = readIntSetting(env, "INLINE_RETRY_MAX_S", { min: 0, max: MAX_INLINE_RETRY_S });
  const permitWaitMaxS = readIntSetting(env, "PERMIT_WAIT_MAX_S", { min: 0, max: MAX_PERMIT_WAIT_S });
  const headerSlots = readIntSetting(env, "UPSTREAM_HEADER_SLOTS", { min: 0, max: 1_000, fallback: 6 });
  const pullForS = readIntSetting(env, "AGENT_PULL_FOR_S", { min: 1, max: MAX_PULL_FOR_S, fallback: 300 });
  const maxTasks = readIntSetting(env, "AGENT_MAX_TASKS_PER_INVOCATION", { min: 1, max: 1_000_000, fallback: 10_000 });
  const laneHost = readChoiceSetting(env, "AGENT_LANE_HOST", LANE_HOSTS, "executor");
  requireSettings("agent", [concurrency, inlineRetryMaxS, permitWaitMaxS, headerSlots, pullForS, maxTasks, laneHost]);
  return {
    concurrency: passedValue(concurrency),
    inlineRetryMaxS: passedValue(inlineRetryMaxS),
    permitWaitMaxS: passedValue(permitWaitMaxS),
    headerSlots: passedValue(headerSlots),
    pullForS: passedValue(pullForS),
    maxTasksPerInvocation: passedValue(maxTasks),
    laneHost: passedValue(laneHost),
  };
}

/** How the agents' tools reach the network. */
export interface ToolSettings {
  httpTimeoutMs: number;
  httpMaxBytes: number;
  webhookTimeoutMs: number;
  webhookSecret: string | null;
  allowPrivate: boolean;
  /** SECRETS_KEY: tenant secrets (an MCP server's `credential`) are decrypted with a key derived from it; null when unset. */
  secretsKey?: string | null;
}

export function readToolSettings(
  env: SettingsEnv<"HTTP_FETCH_TIMEOUT_S" | "HTTP_FETCH_MAX_BYTES" | "WEBHOOK_TIMEOUT_S" | "ALLOW_PRIVATE_NETWORK" | "WEBHOOK_SECRET" | "SECRETS_KEY">,
): ToolSettings {
  const httpTimeoutS = readIntSetting(env, "HTTP_FETCH_TIMEOUT_S", { min: 1, max: 120 });
  const httpMaxBytes = readIntSetting(env, "HTTP_FETCH_MAX_BYTES", { min: 1_024, max: 10_485_760 });
  const webhookTimeoutS = readIntSetting(env, "WEBHOOK_TIMEOUT_S", { min: 1, max: 120 });
  const allowPrivate = readBooleanSetting(env, "ALLOW_PRIVATE_NETWORK", { fallback: false });
  requireSettings("agent tool", [httpTimeoutS, httpMaxBytes, webhookTimeoutS, allowPrivate]);
  return {
    httpTimeoutMs: passedValue(httpTimeoutS) * 1_000,
    httpMaxBytes: passedValue(httpMaxBytes),
    webhookTimeoutMs: passedValue(webhookTimeoutS) * 1_000,
    webhookSecret: readSecretSetting(env, "WEBHOOK_SECRET"),
    allowPrivate: passedValue(allowPrivate),
    secretsKey: readSecretSetting(env, "SECRETS_KEY"),
  };
}
