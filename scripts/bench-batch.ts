// `npm run bench:batch -- [--lines 10000] [--latency 50] [--upload-mb 100]`: the Batch API against a
// swarm of the same tasks, side by side, on the local stack and the mock model:
//   1. a --upload-mb upload streamed to POST /v1/files, sampling every 50 ms the orchestrator
//      isolate's JavaScript heap in use (Runtime.getHeapUsage over workerd's inspector, garbage
//      included) and its workerd's RSS (/proc VmRSS of its process tree, which holds the local R2
//      simulator too): each one's peak growth over its idle figure before (the heap's after a GC);
//   2. a spec of --lines tasks, from POST /v1/swarms to the swarm's end;
//   3. the same --lines requests as a batch through the openai SDK, from files.create to the last
//      output line downloaded.
// Figures only, no pass/fail; the machine may be shared, so they are noisy.
import { rm } from "node:fs/promises";
import path from "node:path";
import OpenAI, { toFile } from "openai";
import { readIntOption } from "./lib/int-option.ts";
import { ROOT, STACK_ENVIRONMENT, generateToken, startStack, type Stack } from "./lib/local-stack.ts";
import { newProgram, parseOrExit } from "./lib/parse-options.ts";
import { usageOfDescendants } from "./lib/process-tree.ts";
import { scratchStateDir } from "./lib/scratch-state.ts";
import { findWorkerdInspectors, openHeapSampler, type HeapSampler } from "./lib/workerd-inspector.ts";
import { submitSwarm, waitForSwarm } from "./lib/swarm-client.ts";

const program = newProgram("npm run bench:batch --")
  .description(
    `The Batch API against a swarm of the same tasks on the local stack and the mock model: a streamed upload's memory, then both runs' walls (docs/benchmarks.md). Environment: ${STACK_ENVIRONMENT}.`,
  )
  .option("--lines <n>", "tasks of the swarm, and requests of the batch (1-50,000)", "10000")
  .option("--latency <ms>", "the mock model's latency (0-10,000)", "50")
  .option("--upload-mb <mb>", "MiB of the streamed upload to POST /v1/files (0-190; 0: no upload)", "100");
parseOrExit(program);
const values = program.opts<{ lines: string; latency: string; uploadMb: string }>();
const lines = readIntOption("lines", values.lines, 1, 50_000);
const latency = readIntOption("latency", values.latency, 0, 10_000);
const uploadMb = readIntOption("upload-mb", values.uploadMb, 0, 190);
const MAX_TOKENS = 32;
const prompt = (i: number) => `Say hello to request ${i + 1}`;

function orchestratorRssMb(stack: Stack): number {
  const primary = stack.sessions[0];
  return primary === undefined ? 0 : usageOfDescendants([primary.pid], "workerd").reduce((sum, p) => sum + p.rssMb, 0);
}

/** A multipart body streamed chunk by chunk (no Content-Length): `mb` MiB of batch lines. */
function streamedForm(mb: number, boundary: string): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  const line = encoder.encode(
    `${JSON.stringify({ custom_id: "x".repeat(40), method: "POST", url: "/v1/chat/completions", body: { model: "mock-1", messages: [{ role: "user", content: "y".repeat(300) }] } })}\n`,
  );
  const block = new Uint8Array(Math.floor((256 * 1024) / line.length) * line.length);
  for (let i = 0; i < block.length; i += line.length) block.set(line, i);
  let left = mb * 1024 * 1024;
  let stage = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (stage === 0) {
        controller.enqueue(encoder.encode(`--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n`));
        controller.enqueue(encoder.encode(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.jsonl"\r\n\r\n`));
        stage = 1;
      } else if (left > 0) {
        const n = Math.min(left, block.length);
        controller.enqueue(block.subarray(0, n));
        left -= n;
      } else if (stage === 1) {
        controller.enqueue(encoder.encode(`\r\n--${boundary}--\r\n`));
        stage = 2;
      } else {
        controller.close();
      }
    },
  });
}

/** The orchestrator isolate (its Worker and the Durable Objects it hosts) on workerd's inspector. */
const ORCHESTRATOR_TARGET = "core:user:edgeswarm-orchestrator";

async function measureUpload(stack: Stack): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  const heap = await openOrchestratorHeap(stack);
  const wake = () => fetch(`${stack.url}/healthz`).then((response) => response.text());
  const idleHeap = heap === null ? null : await heap.collectedMb(wake);
  const idle = orchestratorRssMb(stack);
  let peak = idle;
  let peakHeap = idleHeap?.usedMb ?? 0;
  let sampling = true;
  // One sample at a time: a read waits for the isolate, which is busy streaming.
  const heapSamples = (async () => {
    while (sampling && heap !== null) {
      peakHeap = Math.max(peakHeap, await heap.usedMb());
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  const sampler = setInterval(() => {
    peak = Math.max(peak, orchestratorRssMb(stack));
  }, 50);
  const boundary = "----bench-batch-boundary";
  const started = performance.now();
  const response = await fetch(`${stack.url}/v1/files`, {
    method: "POST",
    headers: { authorization: `Bearer ${stack.token}`, "content-type": `multipart/form-data; boundary=${boundary}` },
    body: streamedForm(uploadMb, boundary),
    duplex: "half",
  } as RequestInit);
  const body = await response.text();
  clearInterval(sampler);
  sampling = false;
  await heapSamples;
  peak = Math.max(peak, orchestratorRssMb(stack));
  const afterHeap = heap === null ? null : await heap.collectedMb(wake);
  heap?.close();
  if (!response.ok) throw new Error(`upload answered ${response.status}: ${body}`);
  const seconds = (performance.now() - started) / 1_000;
  console.log(`upload: ${uploadMb} MiB streamed (chunked) in ${seconds.toFixed(1)} s`);
  if (idleHeap === null || afterHeap === null) {
    console.log("  orchestrator heap: no inspector found (workerd without --inspector-addr)");
  } else {
    const gc = (read: { collected: boolean }) => (read.collected ? "after GC" : "no GC ran");
    console.log(
      `  orchestrator isolate heap: idle ${idleHeap.usedMb.toFixed(1)} MB (${gc(idleHeap)}), peak during the upload ${peakHeap.toFixed(1)} MB, growth ${(peakHeap - idleHeap.usedMb).toFixed(1)} MB (target ≤ 32 MB); after ${afterHeap.usedMb.toFixed(1)} MB (${gc(afterHeap)})`,
    );
  }
  console.log(`  orchestrator workerd RSS (with local R2): idle ${idle.toFixed(1)} MB, peak ${peak.toFixed(1)} MB, growth ${(peak - idle).toFixed(1)} MB`);
}

async function openOrchestratorHeap(stack: Stack): Promise<HeapSampler | null> {
  const ports = await findWorkerdInspectors(stack.sessionPids);
  return ports.length === 0 ? null : openHeapSampler(ports, ORCHESTRATOR_TARGET);
}

async function runSpec(stack: Stack): Promise<number> {
  const started = performance.now();
  const { id } = await submitSwarm(stack.url, stack.token, {
    name: "bench spec",
    model: "mock-1",
    tasks: Array.from({ length: lines }, (_, i) => ({ prompt: prompt(i) })),
    limits: { max_output_tokens: MAX_TOKENS },
  });
  const status = await waitForSwarm(stack.url, stack.token, id, { timeoutMs: 3_600_000, pollMs: 500 });
  const seconds = (performance.now() - started) / 1_000;
  console.log(`spec:  ${lines} tasks, ${status.state}, wall ${seconds.toFixed(1)} s (POST /v1/swarms → swarm ended)`);
  return seconds;
}

async function runBatch(stack: Stack): Promise<number> {
  const client = new OpenAI({ apiKey: stack.token, baseURL: `${stack.url}/v1`, maxRetries: 0, timeout: 600_000 });
  const text = Array.from({ length: lines }, (_, i) =>
    JSON.stringify({
      custom_id: `r${i + 1}`,
      method: "POST",
      url: "/v1/chat/completions",
      body: { model: "mock-1", messages: [{ role: "user", content: prompt(i) }], max_tokens: MAX_TOKENS },
    }),
  ).join("\n");
  const started = performance.now();
  const file = await client.files.create({ file: await toFile(Buffer.from(`${text}\n`), "bench.jsonl"), purpose: "batch" });
  let batch = await client.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
  while (!["completed", "failed", "cancelled", "expired"].includes(batch.status)) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    batch = await client.batches.retrieve(batch.id);
  }
  const output = batch.output_file_id ? await (await client.files.content(batch.output_file_id)).text() : "";
  const seconds = (performance.now() - started) / 1_000;
  const outputLines = output.split("\n").filter((l) => l !== "").length;
  console.log(
    `batch: ${lines} lines, ${batch.status}, ${outputLines} output lines, counts ${JSON.stringify(batch.request_counts)}, wall ${seconds.toFixed(1)} s (files.create → last output line)`,
  );
  return seconds;
}

const persistTo = scratchStateDir("batch-bench", path.join(ROOT, ".tmp", "batch-bench-state")).dir;
await rm(persistTo, { recursive: true, force: true });
console.log(`bench:batch: ${lines} lines, mock latency ${latency} ms, ${uploadMb} MiB upload (local wrangler dev; mock model)`);
const stack = await startStack({ port: 0, apiToken: generateToken(), persistTo, mock: { latency }, log: "capture" });
try {
  if (uploadMb > 0) await measureUpload(stack);
  const spec = await runSpec(stack);
  const batch = await runBatch(stack);
  console.log(`ratio: batch / spec wall = ${(batch / spec).toFixed(2)}x (target ≤ 1.1x)`);
} finally {
  await stack.stop();
}
