// `npm run bench:model-call -- [--calls 3000] [--concurrency 50] [--latency 20] [--ttfb 0] [--rounds 3]`: what
// one streamed model call costs in workerd, by path, against the mock model: edgeswarm's model
// client (the openai SDK sends the request, src/model/chat-stream.ts reads the stream), a bare
// fetch read by the same stream reader, and a bare fetch whose body is read whole. A driver Worker
// (scripts/model-call-bench/) makes the calls; workerd's CPU is read from /proc around each run,
// and the paths take turns, round after round, so the machine's drift falls on all of them.
// Figures only, no pass/fail. Under `wrangler dev` as miniflare runs it, every upstream fetch of a
// Worker also passes through miniflare's outbound interceptor; the local stack leaves it out unless
// EDGESWARM_OUTBOUND_INTERCEPTOR=true (scripts/lib/outbound-interceptor.ts). A fourth path takes one
// such hop, and the difference is printed: what the interceptor adds to a call.
import { rm } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { readIntOption } from "./lib/int-option.ts";
import { LATENCY_FORMS, readLatencyOption } from "./lib/latency-option.ts";
import { ROOT, STACK_ENVIRONMENT, generateToken, startStack } from "./lib/local-stack.ts";
import { KEEP_INTERCEPTOR_ENV } from "./lib/outbound-interceptor.ts";
import { newProgram, parseOrExit } from "./lib/parse-options.ts";
import { usageOfDescendants } from "./lib/process-tree.ts";

const program = newProgram("npm run bench:model-call --")
  .description(
    `What one streamed model call costs in workerd, by path (the model client, a bare fetch read by the same stream reader, a bare fetch read whole, and the same through one more hop like miniflare's outbound interceptor), against the mock model (docs/benchmarks.md). Environment: ${STACK_ENVIRONMENT}.`,
  )
  .option("--calls <n>", "calls of each path in each round (1-100,000)", "3000")
  .option("--concurrency <n>", "calls at a time (1-1,000)", "50")
  .option("--latency <spec>", `the mock model's latency: ${LATENCY_FORMS}`, "20")
  .option("--ttfb <ms>", "the mock's time to first byte (0-600,000): equal to the latency, the headers come with the answer", "0")
  .option("--rounds <n>", "rounds, each path once in each (1-20)", "3");
parseOrExit(program);
const values = program.opts<{ calls: string; concurrency: string; latency: string; ttfb: string; rounds: string }>();
const calls = readIntOption("calls", values.calls, 1, 100_000);
const concurrency = readIntOption("concurrency", values.concurrency, 1, 1_000);
const latency = readLatencyOption(values.latency);
const ttfb = readIntOption("ttfb", values.ttfb, 0, 600_000);
const rounds = readIntOption("rounds", values.rounds, 1, 20);
const PATHS = ["client", "fetch-stream", "fetch-text", "fetch-text-hop"] as const;

const persistTo = path.join(ROOT, ".tmp", "model-call-bench-state");
await rm(persistTo, { recursive: true, force: true });
console.log(
  `bench:model-call: ${calls} calls per run, ${concurrency} at a time, mock latency ${values.latency}${/^\d+$/.test(values.latency) ? " ms" : ""} ttfb ${ttfb} ms, ${rounds} rounds (local wrangler dev)`,
);
const stack = await startStack({
  port: 0,
  apiToken: generateToken(),
  mock: { latency, ttfb_ms: ttfb },
  persistTo,
  configs: ["scripts/model-call-bench/wrangler.toml"],
  log: "capture",
});
try {
  const cpu = () => usageOfDescendants(stack.sessionPids, "workerd").reduce((sum, p) => sum + p.cpuMs, 0);
  const perCall = new Map<string, number[]>(PATHS.map((p) => [p, []]));
  // A first short run of each path, not counted: the isolate compiles and connects.
  for (const callPath of PATHS) await runCalls(callPath, Math.min(calls, 200));
  for (let round = 1; round <= rounds; round += 1) {
    for (const callPath of PATHS) {
      const before = cpu();
      const started = performance.now();
      const ok = await runCalls(callPath, calls);
      const cpuMs = cpu() - before;
      perCall.get(callPath)?.push(cpuMs / calls);
      console.log(
        `round=${round} path=${callPath.padEnd(12)} ok=${ok}/${calls} wall=${((performance.now() - started) / 1_000).toFixed(2)} s workerd_cpu=${cpuMs.toFixed(0)} ms cpu/call=${(cpuMs / calls).toFixed(3)} ms`,
      );
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)] ?? Number.NaN;
  const base = median(perCall.get("fetch-text") ?? []);
  console.log(
    `cpu/call (median of rounds): ${PATHS.map((p) => `${p}=${median(perCall.get(p) ?? []).toFixed(3)} ms (${(median(perCall.get(p) ?? []) / base).toFixed(2)}x fetch-text)`).join(" ")}`,
  );
  // Round by round, so the machine's drift between rounds does not enter the difference.
  const hops = (perCall.get("fetch-text-hop") ?? []).map((ms, i) => ms - (perCall.get("fetch-text")?.[i] ?? Number.NaN));
  console.log(
    `one interceptor-like hop (fetch-text-hop − fetch-text, median of rounds): ${median(hops).toFixed(3)} ms a call (${Math.min(...hops).toFixed(3)}–${Math.max(...hops).toFixed(3)}); miniflare's outbound interceptor is one, which the local stack leaves out (${KEEP_INTERCEPTOR_ENV}=true keeps it), production has none`,
  );
} finally {
  await stack.stop();
}

async function runCalls(callPath: (typeof PATHS)[number], count: number): Promise<number> {
  const response = await fetch(`${stack.url}/run`, {
    method: "POST",
    body: JSON.stringify({ path: callPath, baseURL: stack.modelBaseUrl, calls: count, concurrency }),
  });
  if (!response.ok) throw new Error(`driver answered ${response.status}: ${await response.text()}\n${stack.output()}`);
  return z.object({ ok: z.number() }).parse(await response.json()).ok;
}
