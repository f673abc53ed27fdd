// `npm run bench:trace-path -- [--tasks 20000] [--rounds 5]`: what the agent's per-task tracing costs
// in workerd, alone: a driver Worker (scripts/trace-path-bench/) runs `tasks` one-call tasks' worth
// of a lane's work with tracing off (`plain`), traced into the recorder with a post that does no I/O
// (`spans`), and traced and POSTed to a receiver in this process (`export`); workerd's CPU is read
// from /proc around each run, and the modes take turns, round after round, so the machine's drift
// falls on all of them. First, 1,000 tasks `spans` in the isolate's first traced run: the traced
// code not yet compiled (a bench swarm's lane runs about that many). Figures only, no pass/fail.
// With EDGESWARM_OUTBOUND_INTERCEPTOR=true every fetch of a local Worker passes through miniflare's
// outbound interceptor, and `export` holds that hop too: an isolate of its own in the same workerd
// that re-sends the request with its body as a stream (`fetch(request, { headers })`, workers-sdk
// packages/miniflare/src/workers/core/outbound.worker.ts), a cost a request and not a byte;
// production has no such hop, and the local stack leaves it out by default (lib/outbound-interceptor.ts).
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { rm } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { readIntOption } from "./lib/int-option.ts";
import { newProgram, parseOrExit } from "./lib/parse-options.ts";
import { ROOT, generateToken, startStack } from "./lib/local-stack.ts";
import { usageOfDescendants } from "./lib/process-tree.ts";

const program = newProgram("npm run bench:trace-path --")
  .description(
    "The agent's per-task tracing alone in workerd: plain, spans (no I/O) and export (POSTed to a receiver), taking turns; workerd's CPU a task of each",
  )
  .option("--tasks <n>", "one-call tasks per run (100-100,000)", "20000")
  .option("--rounds <n>", "rounds of the three modes (1-20)", "5");
parseOrExit(program);
const values = program.opts<{ tasks: string; rounds: string }>();
const tasks = readIntOption("tasks", values.tasks, 100, 100_000);
const rounds = readIntOption("rounds", values.rounds, 1, 20);
const MODES = ["plain", "spans", "export"] as const;
const COLD_TASKS = 1_000;

// The collector: reads each body whole and answers 200, as an OTLP/HTTP receiver does.
let posts = 0;
let postedBytes = 0;
const receiver = createServer((request, response) => {
  request.on("data", (chunk: Buffer) => {
    postedBytes += chunk.length;
  });
  request.on("end", () => {
    posts += 1;
    response.writeHead(200, { "content-type": "application/x-protobuf" }).end();
  });
});
await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
const collectorUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/v1/traces`;

const persistTo = path.join(ROOT, ".tmp", "trace-path-bench-state");
await rm(persistTo, { recursive: true, force: true });
console.log(`bench:trace-path: ${tasks} one-call tasks per run, ${rounds} rounds of ${MODES.join(", ")} (local wrangler dev)`);
const stack = await startStack({
  port: 0,
  apiToken: generateToken(),
  mock: { latency: 0 },
  persistTo,
  configs: ["scripts/trace-path-bench/wrangler.toml"],
  log: "capture",
});
try {
  const cpu = () => usageOfDescendants(stack.sessionPids, "workerd").reduce((sum, p) => sum + p.cpuMs, 0);
  // The isolate's first traced run, its code not yet compiled (a lane in a new isolate).
  await runTasks("plain", 100);
  const coldBefore = cpu();
  await runTasks("spans", COLD_TASKS);
  console.log(
    `first spans run (cold), ${COLD_TASKS} tasks: ${(((cpu() - coldBefore) * 1_000) / COLD_TASKS).toFixed(0)} µs a task (±10 µs: /proc's ticks are 10 ms)`,
  );
  // Then a short run of each mode, not counted.
  for (const mode of MODES) await runTasks(mode, Math.min(tasks, 500));
  const perTask = new Map<string, number[]>(MODES.map((m) => [m, []]));
  for (let round = 1; round <= rounds; round += 1) {
    for (const mode of MODES) {
      const postsBefore = posts;
      const bytesBefore = postedBytes;
      const before = cpu();
      const answer = await runTasks(mode, tasks);
      const us = ((cpu() - before) * 1_000) / tasks;
      perTask.get(mode)?.push(us);
      const sent = posts - postsBefore;
      console.log(
        `round=${round} mode=${mode.padEnd(6)} spans=${answer.recorded} exported=${answer.exported} dropped=${answer.dropped} posts=${sent}${sent > 0 ? ` (${((postedBytes - bytesBefore) / sent / 1_024).toFixed(1)} KB a post)` : ""} workerd_cpu/task=${us.toFixed(1)} µs`,
      );
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)] ?? Number.NaN;
  const plain = median(perTask.get("plain") ?? []);
  const spans = median(perTask.get("spans") ?? []);
  const exported = median(perTask.get("export") ?? []);
  console.log(
    `workerd cpu/task (median of rounds; /proc ticks are 10 ms, ${(10_000 / tasks).toFixed(1)} µs a task at ${tasks} tasks): plain=${plain.toFixed(1)} µs spans=${spans.toFixed(1)} µs export=${exported.toFixed(1)} µs; the spans' JavaScript ${(spans - plain).toFixed(1)} µs a task, the post ${(exported - spans).toFixed(1)} µs a task`,
  );
} finally {
  await stack.stop();
  receiver.close();
}

async function runTasks(mode: (typeof MODES)[number], count: number): Promise<{ recorded: number; exported: number; dropped: number }> {
  const response = await fetch(`${stack.url}/run`, { method: "POST", body: JSON.stringify({ mode, tasks: count, collectorUrl }) });
  if (!response.ok) throw new Error(`driver answered ${response.status}: ${await response.text()}\n${stack.output()}`);
  return z.object({ recorded: z.number(), exported: z.number(), dropped: z.number() }).parse(await response.json());
}
