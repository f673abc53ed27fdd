// The agent's settings and gateway: what an operator gets for a bad AGENT_CONCURRENCY,
// INLINE_RETRY_MAX_S, PERMIT_WAIT_MAX_S, MODEL_BASE_URL, MODEL_API_KEY, GATEWAY_CONFIG or
// UPSTREAM_KEYS, and that a misconfigured Worker leaves the batch unacknowledged.
import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { CALLS_WITHIN_MS, createTaskDeps, readAgentSettings, readGateway, toSpreadExecutors } from "../composition.ts";
import worker from "../index.ts";

const settings = { AGENT_CONCURRENCY: "128", INLINE_RETRY_MAX_S: "2", PERMIT_WAIT_MAX_S: "20" };
const MODEL_API_KEY = "sk-live-abcdef123456";
const blank = { GATEWAY_CONFIG: "", MODEL_BASE_URL: "https://api.example.com/v1", MODEL_API_KEY, UPSTREAM_KEYS: "{}" };

const multiVendor = JSON.stringify({
  upstreams: {
    deepseek: {
      base_url: "https://api.deepseek.com/v1",
      keys: [
        { id: "ds-a", rpm: 300 },
        { id: "ds-b", rpm: 300 },
      ],
    },
    moonshot: { base_url: "https://api.moonshot.ai/v1", keys: [{ id: "kimi-a", tpm: 100_000 }] },
  },
  models: { "deepseek-v3.2": { upstream: "deepseek", id: "deepseek-chat" }, "kimi-k2.5": { upstream: "moonshot" } },
});
const upstreamKeys = { "ds-a": "sk-ds-aaaa1111", "ds-b": "sk-ds-bbbb2222", "kimi-a": "sk-kimi-cccc3333" };
const gateway = { ...blank, GATEWAY_CONFIG: multiVendor, UPSTREAM_KEYS: JSON.stringify(upstreamKeys) };

function errorOf(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
  throw new Error("expected an error");
}

describe("readAgentSettings", () => {
  it("accepts a concurrency from 1 to 1000, an inline retry threshold from 0 to 30 s and a permit wait from 0 to 120 s", () => {
    // The lane's settings default to production's header slots (6), 300 s of pulling and 10,000 tasks an invocation.
    expect(readAgentSettings(settings)).toEqual({
      concurrency: 128,
      inlineRetryMaxS: 2,
      permitWaitMaxS: 20,
      headerSlots: 6,
      pullForS: 300,
      maxTasksPerInvocation: 10_000,
      laneHost: "executor",
    });
    expect(readAgentSettings({ ...settings, INLINE_RETRY_MAX_S: "0" }).inlineRetryMaxS).toBe(0);
    expect(readAgentSettings({ ...settings, INLINE_RETRY_MAX_S: " 30 " }).inlineRetryMaxS).toBe(30);
    expect(readAgentSettings({ ...settings, AGENT_CONCURRENCY: "1" }).concurrency).toBe(1);
    expect(readAgentSettings({ ...settings, AGENT_CONCURRENCY: "1000" }).concurrency).toBe(1000);
    expect(readAgentSettings({ ...settings, PERMIT_WAIT_MAX_S: "0" }).permitWaitMaxS).toBe(0);
    expect(readAgentSettings({ ...settings, PERMIT_WAIT_MAX_S: "120" }).permitWaitMaxS).toBe(120);
  });

  it.each(["0", "1001", "-3", "1.5", "12abc", "", "lots"])("refuses AGENT_CONCURRENCY %j", (value) => {
    expect(() => readAgentSettings({ ...settings, AGENT_CONCURRENCY: value })).toThrow(/AGENT_CONCURRENCY must be an integer from 1 to 1000/);
  });

  it.each(["31", "-1", "1.5", "", "two"])("refuses INLINE_RETRY_MAX_S %j", (value) => {
    expect(() => readAgentSettings({ ...settings, INLINE_RETRY_MAX_S: value })).toThrow(/INLINE_RETRY_MAX_S must be an integer from 0 to 30/);
  });

  it.each(["121", "-1", "2.5", "", "soon"])("refuses PERMIT_WAIT_MAX_S %j", (value) => {
    expect(() => readAgentSettings({ ...settings, PERMIT_WAIT_MAX_S: value })).toThrow(/PERMIT_WAIT_MAX_S must be an integer from 0 to 120/);
  });

  it("reads the agent's wrangler.toml defaults as valid settings and gateway", () => {
    expect(readAgentSettings(env)).toEqual({
      concurrency: 128,
      inlineRetryMaxS: 2,
      permitWaitMaxS: 20,
      headerSlots: 6,
      pullForS: 300,
      maxTasksPerInvocation: 10_000,
      // The test project runs lanes in the consumer (vitest.config.ts); wrangler.toml says "executor".
      laneHost: "consumer",
    });
    expect([...readGateway(env).credentials.keys()]).toEqual(["default"]);
  });

  it("hands the lanes their settings: header slots, pull-for time, the invocation's allowance, the idle wait and the calls' deadline", () => {
    const deps = createTaskDeps({
      ...env,
      UPSTREAM_HEADER_SLOTS: "0",
      AGENT_PULL_FOR_S: "60",
      AGENT_MAX_TASKS_PER_INVOCATION: "700",
      INLINE_RETRY_MAX_S: "5",
      AGENT_CONCURRENCY: "32",
    });
    expect(deps).toMatchObject({ concurrency: 32, headerSlots: 0, pullForMs: 60_000, maxTasks: 700, idleWaitMaxMs: 5_000, callsWithinMs: CALLS_WITHIN_MS });
    expect(CALLS_WITHIN_MS).toBeLessThan(15 * 60_000);
  });
});

describe("readGateway", () => {
  it("serves every model from MODEL_BASE_URL with MODEL_API_KEY as key `default` when GATEWAY_CONFIG is blank", () => {
    const setup = readGateway(blank);
    expect(setup.config.default_upstream).toBe("default");
    expect(setup.credentials).toEqual(new Map([["default", { baseUrl: "https://api.example.com/v1", apiKey: MODEL_API_KEY }]]));
  });

  it.each(["", "api.example.com/v1", "ftp://api.example.com/v1", "not a url"])("refuses MODEL_BASE_URL %j with a blank GATEWAY_CONFIG", (url) => {
    expect(() => readGateway({ ...blank, MODEL_BASE_URL: url })).toThrow(/MODEL_BASE_URL must be an http\(s\) URL/);
  });

  it("refuses an empty MODEL_API_KEY with a blank GATEWAY_CONFIG", () => {
    expect(() => readGateway({ ...blank, MODEL_API_KEY: "  " })).toThrow(/no value for key "default" of upstream "default" \(MODEL_API_KEY is empty/);
  });

  it("takes every key's value from UPSTREAM_KEYS and its base URL from its upstream", () => {
    const setup = readGateway(gateway);
    expect(setup.credentials).toEqual(
      new Map([
        ["ds-a", { baseUrl: "https://api.deepseek.com/v1", apiKey: "sk-ds-aaaa1111" }],
        ["ds-b", { baseUrl: "https://api.deepseek.com/v1", apiKey: "sk-ds-bbbb2222" }],
        ["kimi-a", { baseUrl: "https://api.moonshot.ai/v1", apiKey: "sk-kimi-cccc3333" }],
      ]),
    );
  });

  it("needs no MODEL_BASE_URL or MODEL_API_KEY when the gateway config names no key `default`", () => {
    expect(readGateway({ ...gateway, MODEL_BASE_URL: "", MODEL_API_KEY: "" }).credentials.size).toBe(3);
  });

  it("lets a configured key `default` use MODEL_API_KEY unless UPSTREAM_KEYS has a value for it", () => {
    const config = JSON.stringify({ upstreams: { main: { base_url: "https://llm.internal/v1", keys: [{ id: "default", rpm: 60 }, { id: "spare" }] } } });
    const setup = readGateway({ ...blank, GATEWAY_CONFIG: config, UPSTREAM_KEYS: JSON.stringify({ spare: "sk-spare-9999" }) });
    expect(setup.credentials.get("default")).toEqual({ baseUrl: "https://llm.internal/v1", apiKey: MODEL_API_KEY });
    const overridden = readGateway({ ...blank, GATEWAY_CONFIG: config, UPSTREAM_KEYS: JSON.stringify({ spare: "sk-spare-9999", default: "sk-own-0000" }) });
    expect(overridden.credentials.get("default")?.apiKey).toBe("sk-own-0000");
  });

  it("names every key id UPSTREAM_KEYS lacks (and its upstream), never a key's value", () => {
    const message = errorOf(() => readGateway({ ...gateway, UPSTREAM_KEYS: JSON.stringify({ "ds-a": upstreamKeys["ds-a"], "kimi-a": "   " }) }));
    expect(message).toContain('UPSTREAM_KEYS has no value for key "ds-b" of upstream "deepseek", "kimi-a" of upstream "moonshot"');
    for (const value of Object.values(upstreamKeys)) expect(message).not.toContain(value);
    expect(message).not.toContain(MODEL_API_KEY);
  });

  it.each([
    ["GATEWAY_CONFIG that is not JSON", { GATEWAY_CONFIG: "{ upstreams:" }, "GATEWAY_CONFIG is not valid JSON"],
    [
      "GATEWAY_CONFIG with a model on an unknown upstream",
      { GATEWAY_CONFIG: JSON.stringify({ upstreams: { a: { base_url: "https://x", keys: [{ id: "k" }] } }, models: { m: { upstream: "b" } } }) },
      'GATEWAY_CONFIG: models.m.upstream: unknown upstream "b"',
    ],
    ["UPSTREAM_KEYS that is not JSON", { UPSTREAM_KEYS: `{"ds-a": "${upstreamKeys["ds-a"]}"` }, "UPSTREAM_KEYS must be a JSON object of key id → API key"],
    ["UPSTREAM_KEYS with a non-string value", { UPSTREAM_KEYS: `{"ds-a": 7, "ds-b": "${upstreamKeys["ds-b"]}"}` }, "UPSTREAM_KEYS must be a JSON object"],
  ])("refuses %s, without echoing a key", (_label, override, fragment) => {
    const message = errorOf(() => readGateway({ ...gateway, ...override }));
    expect(message).toContain(fragment);
    for (const value of [...Object.values(upstreamKeys), MODEL_API_KEY]) expect(message).not.toContain(value);
  });
});

describe("a misconfigured agent Worker", () => {
  it.each([
    ["a bad MODEL_BASE_URL", { MODEL_BASE_URL: "" }, /MODEL_BASE_URL/],
    ["GATEWAY_CONFIG that is not JSON", { GATEWAY_CONFIG: "{" }, /GATEWAY_CONFIG is not valid JSON/],
    ["a key without a value", { GATEWAY_CONFIG: multiVendor }, /UPSTREAM_KEYS has no value for key "ds-a"/],
    ["a bad PERMIT_WAIT_MAX_S", { PERMIT_WAIT_MAX_S: "600" }, /PERMIT_WAIT_MAX_S/],
  ])("throws from queue() on %s so the platform redelivers the batch instead of it being acked", async (_label, override, error) => {
    const batch = createMessageBatch("edgeswarm-tasks", [
      { id: "m1", timestamp: new Date(), attempts: 1, body: { v: 1, swarm_id: "sw_whatever", task_ids: ["t1"] } },
    ]);
    const ctx = createExecutionContext();
    await expect(worker.queue(batch, { ...env, ...override }, ctx)).rejects.toThrow(error);
    const result = await getQueueResult(batch, ctx);
    expect(result.explicitAcks).toEqual([]);
    expect(result.ackAll).toBe(false);
  });
});

describe("the lane executors of the local stack's other agent processes", () => {
  const other = env.LANE_EXECUTOR;
  it.each([
    ["production binds none", {}, 0],
    ["one other process", { LANE_EXECUTOR_2: other }, 1],
    ["three others, in order", { LANE_EXECUTOR_2: other, LANE_EXECUTOR_3: other, LANE_EXECUTOR_4: other }, 3],
    ["a gap ends the list (LANE_EXECUTOR_3 without _2)", { LANE_EXECUTOR_3: other }, 0],
    ["a fifth past the most the stack runs is not read", { LANE_EXECUTOR_2: other, LANE_EXECUTOR_3: other, LANE_EXECUTOR_4: other, LANE_EXECUTOR_5: other }, 3],
  ])("%s", (_label, bindings, expected) => {
    expect(toSpreadExecutors({ ...env, ...bindings })).toHaveLength(expected);
  });
});
