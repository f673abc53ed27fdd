// The agent Worker's composition root: the only reader of `env`. It reads the settings
// (src/core/env-settings.ts) and the gateway (upstreams, models, key values), and builds the
// handlers' dependencies, reusing the parsed gateway and its model clients across invocations of
// the same isolate.
import { createBlockLineReader } from "./batch-line-blocks.ts";
import type { BatchLineReader } from "./run-batch-line.ts";
import { createFileObjects } from "../../src/files/file-objects.ts";
import {
  parseEffectivePrices,
  parseGatewayConfig,
  readAgentSettings,
  readSecretSetting,
  readToolSettings,
  readUpstreamKeys,
} from "../../src/core/env-settings.ts";
import { readTraceSettings, type OtelSettingName } from "../../src/core/otel-settings.ts";
import type { GatewayConfig } from "../../src/core/gateway-config.ts";
import { createModelClient } from "../../src/model/model-client.ts";
import type { ModelClient } from "../../src/model/model-client.ts";
import type { ModelGateway } from "./call-with-permit.ts";
import type { ConsumeTasksDeps } from "./consume-tasks.ts";
import { toKeyPools } from "./key-pools.ts";
import type { LaneHostDeps, TracingSetup } from "./lane-invocation.ts";
import { toLaneExecutors } from "./lane-executors.ts";
import type { LaneExecutor } from "./lane-executor.ts";
import { MAX_EXECUTOR_HOSTS } from "../../src/core/executor-hosts.ts";
import { toSwarmRooms } from "./swarm-rooms.ts";
import type { SwarmRooms } from "./swarm-rooms.ts";
import { toToolEnvironment } from "./tools/swarm-tools.ts";

export { readAgentSettings, readToolSettings };

/** The key id whose value is MODEL_API_KEY (the blank GATEWAY_CONFIG's only key). */
export const DEFAULT_KEY_ID = "default";

/** Every call of an invocation must end by then: the consumer's 15-minute wall time, with a margin. */
export const CALLS_WITHIN_MS = 14 * 60_000;

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
  const defaultBaseUrl = readSecretSetting(env, "MODEL_BASE_URL") ?? "";
  // Only the blank config uses MODEL_BASE_URL; say so in its own words rather than as a config path.
  // It is a secret (a URL may carry credentials), so its value is never shown.
  if (configText.trim() === "" && !isHttpUrl(defaultBaseUrl)) {
    throw new Error(
      `MODEL_BASE_URL must be an http(s) URL of an OpenAI-compatible API (e.g. https://api.openai.com/v1), ${defaultBaseUrl === "" ? "but it is empty" : "and it is not one (its value is not shown)"}`,
    );
  }
  const config = parseGatewayConfig(configText, defaultBaseUrl);
  if (!config.ok) throw new Error(config.error);
  const values = readUpstreamKeys(env);
  if (!values.ok) throw new Error(values.error);

  const modelApiKey = readSecretSetting(env, "MODEL_API_KEY") ?? "";
  const credentials = new Map<string, UpstreamCredential>();
  const missing: string[] = [];
  for (const [upstreamName, upstream] of Object.entries(config.value.upstreams)) {
    for (const key of upstream.keys) {
      const fromSecret = (values.value[key.id] ?? "").trim();
      const apiKey = fromSecret === "" && key.id === DEFAULT_KEY_ID ? modelApiKey : fromSecret;
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
  if (cachedGateway?.source.every((text, i) => text === source[i])) return cachedGateway;
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

/** The agent's spans go out under this service.name unless OTEL_SERVICE_NAME says otherwise. */
export const AGENT_SERVICE_NAME = "edgeswarm-agent";

type TracingEnv = Partial<Record<OtelSettingName, string>> & Pick<Env, "MODEL_PRICES" | "GATEWAY_CONFIG">;

/** The last OTEL_* problem logged, so a bad setting is said once per isolate, not per batch. */
let loggedTraceError: string | null = null;

/**
 * OTEL_* (src/core/otel-settings.ts) and the prices the ledger uses. Tracing never stops a swarm:
 * a bad OTEL_* setting (or price table) is logged, naming the setting, and nothing is traced.
 */
export function readTracing(env: TracingEnv, fetcher: typeof fetch = fetch): TracingSetup | null {
  const settings = readTraceSettings(env, AGENT_SERVICE_NAME);
  const prices = settings.ok && settings.value !== null ? parseEffectivePrices(env.MODEL_PRICES, env.GATEWAY_CONFIG) : null;
  const error = !settings.ok ? settings.error : prices !== null && !prices.ok ? prices.error : null;
  if (error !== null) {
    if (error !== loggedTraceError) console.error(JSON.stringify({ event: "tracing_off", error }));
    loggedTraceError = error;
    return null;
  }
  if (!settings.ok || settings.value === null || prices === null || !prices.ok) return null;
  return { settings: settings.value, prices: prices.value, fetch: fetcher };
}

/** What a lane executor's alarm runs its lane with: the consumer's settings, without the hand-off. */
export function createLaneHostDeps(env: Env): LaneHostDeps {
  const { host: _host, executors: _executors, ...deps } = createTaskDeps(env);
  return deps;
}

/**
 * The lane executors of the local stack's other agent processes: LANE_EXECUTOR_2, _3, … (the agent
 * config the stack writes for its consuming session binds them; workers/agent/wrangler.toml does
 * not, so they are not in the generated Env). Production binds none: there every Durable Object
 * has a CPU of its own, while locally every executor of a workerd process shares its one thread.
 */
export function toSpreadExecutors(env: object): DurableObjectNamespace<LaneExecutor>[] {
  const bindings = env as Partial<Record<string, DurableObjectNamespace<LaneExecutor>>>;
  const spread: DurableObjectNamespace<LaneExecutor>[] = [];
  for (let host = 2; host <= MAX_EXECUTOR_HOSTS; host += 1) {
    const namespace = bindings[`LANE_EXECUTOR_${host}`];
    if (namespace === undefined) break;
    spread.push(namespace);
  }
  return spread;
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
    host: settings.laneHost,
    executors: toLaneExecutors(env.LANE_EXECUTOR, toSpreadExecutors(env)),
    rooms: toSwarmRooms(env.SWARM_ROOM),
    gateway,
    concurrency: settings.concurrency,
    headerSlots: settings.headerSlots,
    pullForMs: settings.pullForS * 1_000,
    callsWithinMs: CALLS_WITHIN_MS,
    maxTasks: settings.maxTasksPerInvocation,
    idleWaitMaxMs: settings.inlineRetryMaxS * 1_000,
    tools: toToolEnvironment(tools, fetch),
    batchLines: batchLinesFor(env.FILES_BUCKET),
    tracing: readTracing(env),
  };
}

let cachedLines: { bucket: R2Bucket; reader: BatchLineReader } | null = null;

/** One line reader (and its block cache) per isolate: the lanes of every invocation share it. */
function batchLinesFor(bucket: R2Bucket): BatchLineReader {
  if (cachedLines?.bucket !== bucket) {
    const objects = createFileObjects(bucket);
    cachedLines = { bucket, reader: createBlockLineReader((key, range) => objects.readBytes(key, range)) };
  }
  return cachedLines.reader;
}

export function createDeadLetterRooms(env: Env): SwarmRooms {
  return toSwarmRooms(env.SWARM_ROOM);
}
