// `npm run canary` against the real local stack (as `npm start` runs it, with the mock model): its
// command line end to end, --json parsed, and the figures sane for a 60-task swarm of W 20.
import { rm } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCanaryCli } from "../../scripts/lib/canary-cli.ts";
import type { CanaryFigures } from "../../scripts/lib/canary-figures.ts";
import { ROOT, generateToken, startStack, type Stack } from "../../scripts/lib/local-stack.ts";

const persistTo = path.join(ROOT, ".tmp", "e2e-canary-state");
let stack: Stack;

beforeAll(async () => {
  await rm(persistTo, { recursive: true, force: true });
  // Calls of about a second, so the status reads see the window fill and drain.
  stack = await startStack({ port: 0, apiToken: generateToken(), mock: { latency: 1_000, ttfbMs: 100 }, persistTo, log: "capture" });
});

afterAll(async () => {
  await stack?.stop();
});

async function canary(argv: string[]): Promise<{ code: number; out: string[]; err: string[] }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCanaryCli(argv, { out: (line) => out.push(line), err: (line) => err.push(line), env: {} });
  return { code, out, err };
}

describe("npm run canary, against the local stack", () => {
  it("measures a 60-task swarm of W 20: every task succeeded, and sane figures", async () => {
    const { code, out, err } = await canary(["--url", stack.url, "--token", stack.token, "--tasks", "60", "--concurrency", "20", "--poll-ms", "200", "--json"]);
    expect(err.at(-1), err.join("\n")).not.toMatch(/^canary: .*(refused|cannot|failed|ended)/);
    expect(code).toBe(0);
    expect(out).toHaveLength(1);
    const report = JSON.parse(out[0] ?? "") as { state: string; figures: CanaryFigures; estimate_usd: { max: number } };
    const f = report.figures;
    // In the test log: what the local stack measured.
    console.log(`canary on the local stack: ${JSON.stringify({ ...f, seconds: f.seconds.length })}`);

    expect(report.state).toBe("completed");
    expect(report.estimate_usd.max).toBeLessThanOrEqual(0.05);
    expect({ tasks: f.tasks, succeeded: f.succeeded, failed: f.failed, window: f.window }).toEqual({ tasks: 60, succeeded: 60, failed: 0, window: 20 });
    expect(f.inFlight.peak).toBeGreaterThanOrEqual(1);
    expect(f.inFlight.peak).toBeLessThanOrEqual(20);
    expect(f.inFlight.mean).toBeGreaterThan(0);
    expect(f.lanes?.peak).toBeGreaterThanOrEqual(1);

    const { firstInFlightMs, halfWindowMs, ninetyWindowMs } = f.ramp;
    expect(firstInFlightMs).not.toBeNull();
    const reached = [firstInFlightMs, halfWindowMs, ninetyWindowMs].filter((ms): ms is number => ms !== null);
    expect(reached).toEqual([...reached].sort((a, b) => a - b));
    expect(f.ramp.callsPerS).toBeGreaterThan(0);

    // The mock's calls take a second; the lanes time them.
    expect(f.timing.latencyMs).toBeGreaterThanOrEqual(900);
    expect(f.timing.ttfbMs).toBeGreaterThan(0);
    expect(f.timing.ttfbMs).toBeLessThanOrEqual(f.timing.latencyMs ?? 0);
    expect(f.tasksPerS).toBeGreaterThan(0);

    expect(f.per1kTasks?.doRequests).toBeGreaterThan(0);
    expect(f.per1kTasks?.queueMessages).toBeGreaterThan(0);
    expect(f.roomRequestsPerS?.peak).toBeGreaterThan(0);
    expect(f.costPer1kTasks?.totalUsd).toBeGreaterThan(0);
    expect(f.model?.input).toMatchObject({ window: 20, tasks: 60 });
    expect(f.model?.capacity.usdPer1kTasks).toBeGreaterThan(0);
    // The sampled seconds cover the run, and the last saw every task done.
    expect(f.seconds.at(-1)?.done).toBe(60);
  });

  it("prints the text report: the sparkline, the ramp and the model next to the measured figures", async () => {
    const { code, out } = await canary(["--url", stack.url, "--token", stack.token, "--tasks", "20", "--concurrency", "10", "--poll-ms", "200"]);
    expect(code).toBe(0);
    const text = out.join("\n");
    expect(text).toMatch(/completed in [\d.]+ s: 20 succeeded, 0 failed/);
    expect(text).toMatch(/calls in flight, one column a second \(peak \d+ of W 10\)/);
    expect(text).toMatch(/ramp \(from submit/);
    expect(text).toMatch(/figure\s+capacity model\s+measured/);
    expect(text).toMatch(/platform USD \/ 1,000 tasks\s+\$\S+\s+\$\S+ = requests/);
  });

  it("refuses a wrong token in one line, exit 1", async () => {
    const { code, out, err } = await canary(["--url", stack.url, "--token", "es_local_wrong"]);
    expect(code).toBe(1);
    expect(err).toEqual([`canary: ${stack.url} refused the token (401 unauthorized): pass the API key of the stack with --token`]);
    expect(out).toHaveLength(1);
  });
});
