// The agent Worker's composition root: the only reader of `env`. It validates the settings and the
// gateway (upstreams, models, key values), and builds the handlers' dependencies, reusing the
// parsed gateway and its model clients across invocations of the same isolate.
import { parseGatewayConfig, parseUpstreamKeys } from "../../src/core/gateway-config.ts";
import type { GatewayConfig } from "../../src/core/gateway-config.ts";
import { createModelClient } from "../../src/model/model-client.ts";
import type { ModelClient } from "../../src/model/model-client.ts";
import type { ModelGateway } from "./call-with-permit.ts";
import type { ConsumeTasksDeps } from "./consume-tasks.ts";
import { toKeyPools } from "./key-pools.ts";
import { toSwarmRooms } from "./swarm-rooms.ts";
import type { SwarmRooms } from "./swarm-rooms.ts";
import { toToolEnvironment, type ToolSettings } from "./tools/swarm-tools.ts";

export interface AgentSettings {
  concurrency: number;
  inlineRetryMaxS: number;
  permitWaitMaxS: number;
  headerSlots: number;
  pullForS: number;
  maxTasksPerInvocation: number;
}

type ToolEnv = Pick<Env, "HTTP_FETCH_TIMEOUT_S" | "HTTP_FETCH_MAX_BYTES" | "WEBHOOK_TIMEOUT_S" | "ALLOW_PRIVATE_NETWORK" | "WEBHOOK_SECRET">;

export function readToolSettings(env: ToolEnv): ToolSettings {
  const allow = (env.ALLOW_PRIVATE_NETWORK ?? "false").trim().toLowerCase();
  if (allow !== "true" && allow !== "false" && allow !== "") throw new Error(`ALLOW_PRIVATE_NETWORK must be "true" or "false", got "${env.ALLOW_PRIVATE_NETWORK}"`);
  const secret = (env.WEBHOOK_SECRET ?? "").trim();
  return {
    httpTimeoutMs: readIntegerSetting("HTTP_FETCH_TIMEOUT_S", env.HTTP_FETCH_TIMEOUT_S, 1, 120) * 1_000,
    httpMaxBytes: readIntegerSetting("HTTP_FETCH_MAX_BYTES", env.HTTP_FETCH_MAX_BYTES, 1_024, 10_485_760),
    webhookTimeoutMs: readIntegerSetting("WEBHOOK_TIMEOUT_S", env.WEBHOOK_TIMEOUT_S, 1, 120) * 1_000,
    webhookSecret: secret === "" ? null : secret,
    allowPrivate: allow === "true",
  };
}

export const MAX_AGENT_CONCURRENCY = 1_000;
/** An invocation sleeps at most this long before an inline retry; longer waits belong to the queue. */
export const MAX_INLINE_RETRY_S = 30;
/** A call waits at most this long for a key's permit; longer waits belong to the queue. */
export const MAX_PERMIT_WAIT_S = 120;
/** The key id whose value is MODEL_API_KEY (the blank GATEWAY_CONFIG's only key). */
export const DEFAULT_KEY_ID = "default";

/** A lane stops taking tasks by then; its calls must end within CALLS_WITHIN_MS (the 15-min wall time, with margin). */
export const MAX_PULL_FOR_S = 600;
export const CALLS_WITHIN_MS = 14 * 60_000;

type AgentSettingsEnv = Pick<Env, "AGENT_CONCURRENCY" | "INLINE_RETRY_MAX_S" | "PERMIT_WAIT_MAX_S"> &
  Partial<Pick<Env, "UPSTREAM_HEADER_SLOTS" | "AGENT_PULL_FOR_S" | "AGENT_MAX_TASKS_PER_INVOCATION">>;

export function readAgentSettings(env: AgentSettingsEnv): AgentSettings {
  return {
    concurrency: readIntegerSetting("AGENT_CONCURRENCY", env.AGENT_CONCURRENCY, 1, MAX_AGENT_CONCURRENCY),
    inlineRetryMaxS: readIntegerSetting("INLINE_RETRY_MAX_S", env.INLINE_RETRY_MAX_S, 0, MAX_INLINE_RETRY_S),
    permitWaitMaxS: readIntegerSetting("PERMIT_WAIT_MAX_S", env.PERMIT_WAIT_MAX_S, 0, MAX_PERMIT_WAIT_S),
    headerSlots: readIntegerSetting("UPSTREAM_HEADER_SLOTS", env.UPSTREAM_HEADER_SLOTS ?? "6", 0, 1_000),
    pullForS: readIntegerSetting("AGENT_PULL_FOR_S", env.AGENT_PULL_FOR_S ?? "300", 1, MAX_PULL_FOR_S),
    maxTasksPerInvocation: readIntegerSetting("AGENT_MAX_TASKS_PER_INVOCATION", env.AGENT_MAX_TASKS_PER_INVOCATION ?? "5000", 1, 1_000_000),
  };
}

type GatewayEnv = Pick<Env, "GATEWAY_CONFIG" | "MODEL_BASE_URL" | "MODEL_API_KEY" | "UPSTREAM_KEYS">;

/** Where each key of the gateway sends its calls, and with which API key. */
export interface UpstreamCredential {
  baseUrl: string;
  apiKey: string;
}

export interface GatewaySetup {
  config: GatewayConfig;
  /** Key id → credential, for every key the config names. */
  credentials: Map<string, UpstreamCredential>;
}

/**
 * Validates the gateway: GATEWAY_CONFIG (blank: MODEL_BASE_URL serves every model with the one key
 * `default`), and a value for every key it names. Key `default` takes its value from UPSTREAM_KEYS
 * when that has one, else MODEL_API_KEY; every other key must be in UPSTREAM_KEYS. Errors name
 * settings and key ids, never a key's value.
 */
export function readGateway(env: GatewayEnv): GatewaySetup {
  const configText = env.GATEWAY_CONFIG ?? "";
  const defaultBaseUrl = (env.MODEL_BASE_URL ?? "").trim();
  // Only the blank config uses MODEL_BASE_URL; say so in its own words rather than as a config path.
  if (configText.trim() === "" && !isHttpUrl(defaultBaseUrl)) {
    throw new Error(
      `MODEL_BASE_URL must be an http(s) URL of an OpenAI-compatible API (e.g. https://api.openai.com/v1), got ${JSON.stringify(defaultBaseUrl)}`,
    );
  }
  const config = parseGatewayConfig(configText, defaultBaseUrl);
  if (!config.ok) throw new Error(config.error);
  const values = parseUpstreamKeys(env.UPSTREAM_KEYS);
  if (!values.ok) throw new Error(values.error);

  const credentials = new Map<string, UpstreamCredential>();
  const missing: string[] = [];
  for (const [upstreamName, upstream] of Object.entries(config.value.upstreams)) {
    for (const key of upstream.keys) {
      const fromSecret = (values.value[key.id] ?? "").trim();
      const apiKey = fromSecret === "" && key.id === DEFAULT_KEY_ID ? (env.MODEL_API_KEY ?? "").trim() : fromSecret;
      if (apiKey !== "") {
        credentials.set(key.id, { baseUrl: upstream.base_url, apiKey });
      } else if (key.id === DEFAULT_KEY_ID) {
        missing.push(`"${key.id}" of upstream "${upstreamName}" (MODEL_API_KEY is empty: set it with \`wrangler secret put MODEL_API_KEY\`)`);
      } else {
        missing.push(`"${key.id}" of upstream "${upstreamName}"`);
      }
    }
  }
  if (missing.length > 0) {
    throw new Error(`UPSTREAM_KEYS has no value for key ${missing.join(", ")}: add each key id with its API key to the UPSTREAM_KEYS secret`);
  }
  return { config: config.value, credentials };
}

function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return url.protocol === "http:" || url.protocol === "https:";
  } catch {
    return false;
  }
}

function readIntegerSetting(name: string, value: string | undefined, min: number, max: number): number {
  const raw = (value ?? "").trim();
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(n) || n < min || n > max) {
    throw new Error(`${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  }
  return n;
}

interface GatewayCache {
  /** The env text it was built from: a change (a new deploy, a rotated secret) rebuilds it. */
  source: readonly string[];
  config: GatewayConfig;
  clients: Map<string, ModelClient>;
}

/** The parsed gateway and one model client per (base URL, key), kept for the life of the isolate. */
let cachedGateway: GatewayCache | null = null;

function gatewayFor(env: GatewayEnv): GatewayCache {
  const source = [env.GATEWAY_CONFIG ?? "", env.MODEL_BASE_URL ?? "", env.MODEL_API_KEY ?? "", env.UPSTREAM_KEYS ?? ""];
  if (cachedGateway !== null && cachedGateway.source.every((text, i) => text === source[i])) return cachedGateway;
  const setup = readGateway(env);
  const byCredential = new Map<string, ModelClient>();
  const clients = new Map<string, ModelClient>();
  for (const [keyId, { baseUrl, apiKey }] of setup.credentials) {
    // Two key ids with the same value on the same upstream share a client (and its connections).
    const credential = `${baseUrl}\n${apiKey}`;
    let client = byCredential.get(credential);
    if (client === undefined) {
      client = createModelClient({ baseURL: baseUrl, apiKey });
      byCredential.set(credential, client);
    }
    clients.set(keyId, client);
  }
  cachedGateway = { source, config: setup.config, clients };
  return cachedGateway;
}

export function createTaskDeps(env: Env): ConsumeTasksDeps {
  const settings = readAgentSettings(env);
  const tools = readToolSettings(env);
  const { config, clients } = gatewayFor(env);
  const gateway: ModelGateway = {
    config,
    clientFor(keyId) {
      const client = clients.get(keyId);
      // readGateway made a client for every key the config names, so this is a bug, not a setting.
      if (client === undefined) throw new Error(`no model client for key "${keyId}"`);
      return client;
    },
    keyPools: toKeyPools(env.KEY_POOL),
    permitWaitMaxMs: settings.permitWaitMaxS * 1_000,
  };
  return {
    rooms: toSwarmRooms(env.SWARM_ROOM),
    gateway,
    concurrency: settings.concurrency,
    headerSlots: settings.headerSlots,
    pullForMs: settings.pullForS * 1_000,
    callsWithinMs: CALLS_WITHIN_MS,
    maxTasks: settings.maxTasksPerInvocation,
    idleWaitMaxMs: settings.inlineRetryMaxS * 1_000,
    tools: toToolEnvironment(tools, fetch),
  };
}


export function createDeadLetterRooms(env: Env): SwarmRooms {
  return toSwarmRooms(env.SWARM_ROOM);
}
