// The bench's floor (bare-client.ts) against a real mock model: W calls in flight, one request a
// task with nothing retried, each call done only when its stream ends, and plain HTTP only.
import { afterEach, describe, expect, it } from "vitest";
import { type MockModelHandle, startMockModel } from "../../dev/mock-model/server.ts";
import { runBareClient, runBareClientChild } from "./bare-client.ts";

let mock: MockModelHandle | null = null;
afterEach(async () => {
  await mock?.close();
  mock = null;
});

const options = (url: string, tasks: number, concurrency: number) => ({
  baseURL: `${url}/v1`,
  apiKey: "mock-key-floor",
  model: "mock-1",
  prompts: Array.from({ length: tasks }, (_, i) => `floor task ${i + 1}`),
  concurrency,
  maxTokens: 16,
  timeoutMs: 5_000,
});

describe("the bare client", () => {
  it("keeps W calls in flight and reads each answer to its end", async () => {
    mock = await startMockModel({ latency: 30, ttfbMs: 30 });
    const result = await runBareClient(options(mock.url, 20, 5));
    expect(result).toMatchObject({ tasks: 20, ok: 20, failed: 0 });
    const stats = mock.stats();
    expect(stats.calls).toBe(20);
    expect(stats.completed).toBe(20);
    expect(stats.max_in_flight).toBe(5);
    // Four rounds of 30 ms calls, W = 5.
    expect(result.wall_ms).toBeGreaterThanOrEqual(4 * 30);
  });

  it("counts an error status, a cut stream and a stream without its end as failed, and retries none", async () => {
    mock = await startMockModel({ latency: 5, script: ["500", "truncated", "drop", "ok", "ok", "ok"] });
    const result = await runBareClient(options(mock.url, 6, 1));
    expect(result).toMatchObject({ tasks: 6, ok: 3, failed: 3 });
    expect(mock.stats().calls).toBe(6);
  });

  it("fails a call whose socket stays silent past the timeout", async () => {
    mock = await startMockModel({ latency: 5, script: ["hang", "ok"] });
    const result = await runBareClient({ ...options(mock.url, 2, 1), timeoutMs: 200 });
    expect(result).toMatchObject({ ok: 1, failed: 1 });
  });

  it("speaks plain HTTP to a local mock only", async () => {
    await expect(runBareClient(options("https://api.openai.com", 1, 1))).rejects.toThrow(/protocol|URL/i);
    await expect(runBareClient(options("not a url", 1, 1))).rejects.toThrow();
  });

  it("runs as a child process, its result parsed from its output", async () => {
    mock = await startMockModel({ latency: 5 });
    const result = await runBareClientChild(options(mock.url, 4, 2));
    expect(result).toMatchObject({ tasks: 4, ok: 4, failed: 0 });
    expect(result.cpu_ms).toBeGreaterThan(0);
  });
});
