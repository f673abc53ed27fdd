// Fail fast on the local stack (`limits.stop_after_failures`): a 1,000-task swarm whose every answer
// breaks its response_format stops after the configured run of failures, having called fewer than
// 5% of its tasks. Its own stack: the mock answers every json_schema request with broken JSON.
import { rm } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT, generateToken, startStack, type Stack } from "../../scripts/lib/local-stack.ts";
import { getAllResults, submitSwarm, waitForSwarm } from "../../scripts/lib/swarm-client.ts";

const persistTo = path.join(ROOT, ".tmp", "e2e-fail-fast-state");
let stack: Stack;

beforeAll(async () => {
  await rm(persistTo, { recursive: true, force: true });
  stack = await startStack({ port: 0, apiToken: generateToken(), mock: { latency: 30, invalid_json: 1_000_000 }, persistTo, log: "capture" });
});

afterAll(async () => {
  await stack?.stop();
});

describe("fail fast, on the local stack", () => {
  // W = 8 and the default W = 32: several lanes, each holding standby tasks. A lane starts none in the
  // place of a task that failed the run's way until the room has answered the pull reporting it, so
  // what runs past the trip is what was in flight, not what the lanes held.
  it.each<[string, { concurrency?: number }]>([
    ["W = 8", { concurrency: 8 }],
    ["the default W = 32", {}],
  ])(
    "%s: a 1,000-task swarm whose every answer fails response_format stops after 20 failures in a row, with fewer than 5% of its tasks called",
    async (label, window) => {
      const TASKS = 1_000;
      const { id } = await submitSwarm(stack.url, stack.token, {
        name: "fail fast",
        model: "mock-1",
        tasks: Array.from({ length: TASKS }, (_, i) => ({ prompt: `Extract invoice ${i + 1}` })),
        response_format: {
          type: "json_schema",
          json_schema: { name: "invoice", schema: { type: "object", properties: { total: { type: "number" } }, required: ["total"] } },
        },
        limits: { ...window, max_output_tokens: 64, stop_after_failures: 20 },
      });
      const status = await waitForSwarm(stack.url, stack.token, id, { timeoutMs: 120_000 });
      expect(status.state).toBe("completed_with_failures");
      expect(status.counts.succeeded).toBe(0);
      expect(status.counts.failed).toBeGreaterThanOrEqual(20);
      expect(status.counts.failed + status.counts.skipped).toBe(TASKS);
      expect(String(status.reason)).toMatch(/^stopped early: 20 tasks in a row failed with invalid_output/);

      const results = await getAllResults(stack.url, stack.token, id);
      const called = results.filter((r) => r.state === "failed").length;
      const skipped = results.filter((r) => r.state === "skipped").length;
      console.log(`fail fast (${label}): ${called} of ${TASKS} tasks called, ${status.usage.calls} model calls, ${skipped} skipped`);
      expect(called).toBeLessThan(TASKS * 0.05);
      expect(skipped).toBe(status.counts.skipped);
      // Each called task made its answer and one repair turn: no skipped task made a call.
      expect(status.usage.calls).toBeLessThanOrEqual(called * 2);
    },
  );
});
