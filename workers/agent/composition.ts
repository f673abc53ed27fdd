// The agent Worker's composition root: the only reader of `env`. It validates the settings and
// builds the handlers' dependencies, reusing them across invocations of the same isolate.
import { createModelClient } from "../../src/model/model-client.ts";
import type { ModelClient } from "../../src/model/model-client.ts";
import type { ConsumeTasksDeps } from "./consume-tasks.ts";
import { toSwarmRooms } from "./swarm-rooms.ts";
import type { SwarmRooms } from "./swarm-rooms.ts";

export interface AgentSettings {
  modelBaseUrl: string;
  modelApiKey: string;
  concurrency: number;
  inlineRetryMaxS: number;
}

export const MAX_AGENT_CONCURRENCY = 1_000;
/** An invocation sleeps at most this long before an inline retry; longer waits belong to the queue. */
export const MAX_INLINE_RETRY_S = 30;

/** Validates the agent's settings; the errors name the setting and never echo the key. */
export function readAgentSettings(env: Pick<Env, "MODEL_BASE_URL" | "MODEL_API_KEY" | "AGENT_CONCURRENCY" | "INLINE_RETRY_MAX_S">): AgentSettings {
  const baseUrl = (env.MODEL_BASE_URL ?? "").trim();
  let url: URL | null = null;
  try {
    url = new URL(baseUrl);
  } catch {
    url = null;
  }
  if (url === null || (url.protocol !== "http:" && url.protocol !== "https:")) {
    throw new Error(
      `MODEL_BASE_URL must be an http(s) URL of an OpenAI-compatible API (e.g. https://api.openai.com/v1), got ${JSON.stringify(baseUrl)}`,
    );
  }
  const apiKey = (env.MODEL_API_KEY ?? "").trim();
  if (apiKey.length === 0) throw new Error("MODEL_API_KEY is empty: set it with `wrangler secret put MODEL_API_KEY`");
  const concurrency = readIntegerSetting("AGENT_CONCURRENCY", env.AGENT_CONCURRENCY, 1, MAX_AGENT_CONCURRENCY);
  const inlineRetryMaxS = readIntegerSetting("INLINE_RETRY_MAX_S", env.INLINE_RETRY_MAX_S, 0, MAX_INLINE_RETRY_S);
  return { modelBaseUrl: baseUrl, modelApiKey: apiKey, concurrency, inlineRetryMaxS };
}

function readIntegerSetting(name: string, value: string | undefined, min: number, max: number): number {
  const raw = (value ?? "").trim();
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(n) || n < min || n > max) {
    throw new Error(`${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  }
  return n;
}

/** One model client per (base URL, key), kept for the life of the isolate. */
let cachedModel: { baseUrl: string; apiKey: string; client: ModelClient } | null = null;

function modelClientFor(settings: AgentSettings): ModelClient {
  if (cachedModel === null || cachedModel.baseUrl !== settings.modelBaseUrl || cachedModel.apiKey !== settings.modelApiKey) {
    const client = createModelClient({ baseURL: settings.modelBaseUrl, apiKey: settings.modelApiKey });
    cachedModel = { baseUrl: settings.modelBaseUrl, apiKey: settings.modelApiKey, client };
  }
  return cachedModel.client;
}

export function createTaskDeps(env: Env): ConsumeTasksDeps {
  const settings = readAgentSettings(env);
  return {
    rooms: toSwarmRooms(env.SWARM_ROOM),
    model: modelClientFor(settings),
    concurrency: settings.concurrency,
    inlineRetryMaxS: settings.inlineRetryMaxS,
  };
}

export function createDeadLetterRooms(env: Env): SwarmRooms {
  return toSwarmRooms(env.SWARM_ROOM);
}
