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
}

export const MAX_AGENT_CONCURRENCY = 1_000;

/** Validates the agent's settings; the errors name the setting and never echo the key. */
export function readAgentSettings(env: Pick<Env, "MODEL_BASE_URL" | "MODEL_API_KEY" | "AGENT_CONCURRENCY">): AgentSettings {
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
  const rawConcurrency = (env.AGENT_CONCURRENCY ?? "").trim();
  const concurrency = Number(rawConcurrency);
  if (!/^\d+$/.test(rawConcurrency) || !Number.isSafeInteger(concurrency) || concurrency < 1 || concurrency > MAX_AGENT_CONCURRENCY) {
    throw new Error(`AGENT_CONCURRENCY must be an integer from 1 to ${MAX_AGENT_CONCURRENCY}, got ${JSON.stringify(rawConcurrency)}`);
  }
  return { modelBaseUrl: baseUrl, modelApiKey: apiKey, concurrency };
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
  return { rooms: toSwarmRooms(env.SWARM_ROOM), model: modelClientFor(settings), concurrency: settings.concurrency };
}

export function createDeadLetterRooms(env: Env): SwarmRooms {
  return toSwarmRooms(env.SWARM_ROOM);
}
