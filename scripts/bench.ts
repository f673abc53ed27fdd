// `npm run bench -- --tasks N --latency MS --concurrency W [--tool-turns T]`: runs one swarm against
// the mock model on the local stack and prints figures (no pass/fail): n/ok/err/wall/req/s/p50/p95,
// the mock's peak concurrency, and efficiency = ideal/wall with ideal = N·(T+1)·latency/W
// (ARCHITECTURE.md §4). With --tool-turns T every task is an agent that makes T scratchpad tool
// turns (each checkpointed) before its answer: T+1 model calls and T tool calls per task.
import { rm } from "node:fs/promises";
import path from "node:path";
import { parseArgs } from "node:util";
import { readIntOption } from "./lib/int-option.ts";
import { ROOT, generateToken, startStack } from "./lib/local-stack.ts";
import { formatSummary, submitSwarm, waitForSwarm } from "./lib/swarm-client.ts";

const { values } = parseArgs({
  options: {
    tasks: { type: "string", default: "1000" },
    latency: { type: "string", default: "200" },
    concurrency: { type: "string", default: "100" },
    "max-output-tokens": { type: "string", default: "32" },
    "packet-size": { type: "string", default: "auto" },
    "tool-turns": { type: "string", default: "0" },
  },
});

const tasks = readIntOption("tasks", values.tasks, 1, 10_000);
const latency = readIntOption("latency", values.latency, 1, 600_000);
const concurrency = readIntOption("concurrency", values.concurrency, 1, 1_500);
const maxOutputTokens = readIntOption("max-output-tokens", values["max-output-tokens"], 1, 128_000);
const toolTurns = readIntOption("tool-turns", values["tool-turns"], 0, 49);
const callsPerTask = toolTurns + 1;

const persistTo = path.join(ROOT, ".tmp", "bench-state");
await rm(persistTo, { recursive: true, force: true });
console.log(
  `bench: tasks=${tasks} latency=${latency} ms concurrency=${concurrency} packet-size=${values["packet-size"]}${toolTurns > 0 ? ` tool-turns=${toolTurns}` : ""} (mock model, local wrangler dev)`,
);
const stack = await startStack({
  port: 0,
  apiToken: generateToken(),
  mock: { latency },
  persistTo,
  vars: { DISPATCH_PACKET_SIZE: values["packet-size"] ?? "auto" },
  log: "capture",
});
try {
  const spec = {
    name: `bench ${tasks}x${latency}ms W=${concurrency}`,
    model: "mock-1",
    tasks: Array.from({ length: tasks }, (_, i) => ({
      prompt: toolTurns > 0 ? `[mock:tool_turns=${toolTurns}] bench task ${i + 1}: use scratchpad_put, then summarize item ${i + 1}` : `bench task ${i + 1}: summarize item ${i + 1}`,
    })),
    ...(toolTurns > 0 ? { tools: ["scratchpad"] } : {}),
    limits: {
      concurrency,
      max_output_tokens: maxOutputTokens,
      timeout_s: Math.max(30, Math.ceil((latency * 3) / 1000)),
      max_attempts: 3,
      ...(toolTurns > 0 ? { max_turns: callsPerTask, max_tool_calls: toolTurns } : {}),
    },
  };
  const { id } = await submitSwarm(stack.url, stack.token, spec);
  const status = await waitForSwarm(stack.url, stack.token, id, { timeoutMs: 1_800_000, pollMs: 200 });
  const mockStats = stack.mock?.stats();
  // The turns of one task run one after another: each task holds its window slot for T+1 calls.
  const ideal = (tasks * callsPerTask * latency) / concurrency / 1_000;
  console.log(formatSummary(status));
  console.log(
    [
      `ideal=${ideal.toFixed(2)} s`,
      `efficiency=${(ideal / status.wall_s).toFixed(3)} (ideal/wall)`,
      `upstream_calls=${mockStats?.calls ?? "n/a"}`,
      ...(toolTurns > 0 ? [`model_calls/s=${((mockStats?.calls ?? 0) / status.wall_s).toFixed(1)}`, `tool_calls=${status.tool_calls ?? "n/a"}`] : []),
      `upstream_max_in_flight=${mockStats?.max_in_flight ?? "n/a"}`,
      `state=${status.state}`,
    ].join(" "),
  );
} finally {
  await stack.stop();
}
