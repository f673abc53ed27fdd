// `npm run bench -- --tasks N --latency MS --concurrency W`: runs one swarm against the mock model
// on the local stack and prints figures (no pass/fail): n/ok/err/wall/req/s/p50/p95, the mock's
// peak concurrency, and efficiency = ideal/wall with ideal = N·latency/W (ARCHITECTURE.md §4).
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
  },
});

const tasks = readIntOption("tasks", values.tasks, 1, 10_000);
const latency = readIntOption("latency", values.latency, 1, 600_000);
const concurrency = readIntOption("concurrency", values.concurrency, 1, 1_500);
const maxOutputTokens = readIntOption("max-output-tokens", values["max-output-tokens"], 1, 128_000);

const persistTo = path.join(ROOT, ".tmp", "bench-state");
await rm(persistTo, { recursive: true, force: true });
console.log(`bench: tasks=${tasks} latency=${latency} ms concurrency=${concurrency} packet-size=${values["packet-size"]} (mock model, local wrangler dev)`);
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
    tasks: Array.from({ length: tasks }, (_, i) => ({ prompt: `bench task ${i + 1}: summarize item ${i + 1}` })),
    limits: { concurrency, max_output_tokens: maxOutputTokens, timeout_s: Math.max(30, Math.ceil((latency * 3) / 1000)), max_attempts: 3 },
  };
  const { id } = await submitSwarm(stack.url, stack.token, spec);
  const status = await waitForSwarm(stack.url, stack.token, id, { timeoutMs: 1_800_000, pollMs: 200 });
  const mockStats = stack.mock?.stats();
  const ideal = (tasks * latency) / concurrency / 1_000;
  console.log(formatSummary(status));
  console.log(
    [
      `ideal=${ideal.toFixed(2)} s`,
      `efficiency=${(ideal / status.wall_s).toFixed(3)} (ideal/wall)`,
      `upstream_calls=${mockStats?.calls ?? "n/a"}`,
      `upstream_max_in_flight=${mockStats?.max_in_flight ?? "n/a"}`,
      `state=${status.state}`,
    ].join(" "),
  );
} finally {
  await stack.stop();
}
