// The agent's settings: what an operator gets for a bad MODEL_BASE_URL, MODEL_API_KEY,
// AGENT_CONCURRENCY or INLINE_RETRY_MAX_S, and that a misconfigured Worker leaves the batch unacknowledged.
import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { readAgentSettings } from "../composition.ts";
import worker from "../index.ts";

const good = {
  MODEL_BASE_URL: "https://api.example.com/v1",
  MODEL_API_KEY: "sk-live-abcdef123456",
  AGENT_CONCURRENCY: "128",
  INLINE_RETRY_MAX_S: "2",
};

describe("readAgentSettings", () => {
  it("accepts an http(s) base URL, a key, a concurrency from 1 to 1000 and an inline retry threshold from 0 to 30 s", () => {
    expect(readAgentSettings(good)).toEqual({
      modelBaseUrl: "https://api.example.com/v1",
      modelApiKey: "sk-live-abcdef123456",
      concurrency: 128,
      inlineRetryMaxS: 2,
    });
    expect(readAgentSettings({ ...good, INLINE_RETRY_MAX_S: "0" }).inlineRetryMaxS).toBe(0);
    expect(readAgentSettings({ ...good, INLINE_RETRY_MAX_S: " 30 " }).inlineRetryMaxS).toBe(30);
    expect(readAgentSettings({ ...good, MODEL_BASE_URL: "http://127.0.0.1:8788/v1", AGENT_CONCURRENCY: "1" }).concurrency).toBe(1);
    expect(readAgentSettings({ ...good, AGENT_CONCURRENCY: "1000" }).concurrency).toBe(1000);
  });

  it.each(["", "api.example.com/v1", "ftp://api.example.com/v1", "not a url"])("refuses MODEL_BASE_URL %j", (url) => {
    expect(() => readAgentSettings({ ...good, MODEL_BASE_URL: url })).toThrow(/MODEL_BASE_URL must be an http\(s\) URL/);
  });

  it("refuses an empty MODEL_API_KEY", () => {
    expect(() => readAgentSettings({ ...good, MODEL_API_KEY: "  " })).toThrow(/MODEL_API_KEY is empty/);
  });

  it.each(["0", "1001", "-3", "1.5", "12abc", "", "lots"])("refuses AGENT_CONCURRENCY %j", (value) => {
    expect(() => readAgentSettings({ ...good, AGENT_CONCURRENCY: value })).toThrow(/AGENT_CONCURRENCY must be an integer from 1 to 1000/);
  });

  it.each(["31", "-1", "1.5", "", "two"])("refuses INLINE_RETRY_MAX_S %j", (value) => {
    expect(() => readAgentSettings({ ...good, INLINE_RETRY_MAX_S: value })).toThrow(/INLINE_RETRY_MAX_S must be an integer from 0 to 30/);
  });

  it("reads the agent's wrangler.toml defaults as valid settings", () => {
    expect(readAgentSettings(env)).toMatchObject({ concurrency: 128, inlineRetryMaxS: 2 });
  });

  it("never echoes the API key in an error", () => {
    const bad = [{ AGENT_CONCURRENCY: "0" }, { MODEL_BASE_URL: "ftp://x" }, { MODEL_API_KEY: "" }, { INLINE_RETRY_MAX_S: "x" }];
    for (const override of bad) {
      let message = "";
      try {
        readAgentSettings({ ...good, ...override });
      } catch (error) {
        message = error instanceof Error ? error.message : String(error);
      }
      expect(message.length).toBeGreaterThan(0);
      expect(message).not.toContain(good.MODEL_API_KEY);
    }
  });
});

describe("a misconfigured agent Worker", () => {
  it("throws from queue() so the platform redelivers the batch instead of it being acked", async () => {
    const batch = createMessageBatch("edgeswarm-tasks", [
      { id: "m1", timestamp: new Date(), attempts: 1, body: { v: 1, swarm_id: "sw_whatever", task_ids: ["t1"] } },
    ]);
    const ctx = createExecutionContext();
    await expect(worker.queue(batch, { ...env, MODEL_BASE_URL: "" }, ctx)).rejects.toThrow(/MODEL_BASE_URL/);
    const result = await getQueueResult(batch, ctx);
    expect(result.explicitAcks).toEqual([]);
    expect(result.ackAll).toBe(false);
  });
});
