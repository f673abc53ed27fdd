// `npm run bench`: one workload, two runners, one mock model instance (same latency, ttfb, faults,
// prompts and max_tokens). First the baseline — a promise pool over the openai SDK in one Node
// process, what a user writes by hand (lib/promise-pool-baseline.ts) — then edgeswarm on the local
// stack. Prints both side by side with their ratios and the ideal wall N·(T+1)·L̄/W
// (docs/architecture.md §4). Figures only, no pass/fail. docs/benchmarks.md explains every figure.
//   Its options: `program` below (`npm run bench -- --help`).
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from "node:fs";
import { availableParallelism } from "node:os";
import { rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { newProgram, parseOrExit } from "./lib/parse-options.ts";
import { formatHedges } from "./lib/bench-hedges.ts";
import { HedgeSpecSchema, type HedgeSpec } from "../src/core/hedge-policy.ts";
import { z } from "zod";
import { meanLatencyMs, p95LatencyMs } from "../dev/mock-model/latency.ts";
import type { FaultKind, MockModelHandle, Scenario, StatsSnapshot } from "../dev/mock-model/server.ts";
import { readIntOption } from "./lib/int-option.ts";
import { LATENCY_FORMS, readLatencyOption } from "./lib/latency-option.ts";
import { costOfUsage, DEFAULT_PRICES } from "../src/core/pricing.ts";
import { priceOperations } from "../src/core/capacity-model.ts";
import { formatUsd } from "./lib/format-usd.ts";
import { DEFAULT_AGENT_PROCESSES, ROOT, generateToken, startStack } from "./lib/local-stack.ts";
import { KEEP_INTERCEPTOR_ENV, keepsInterceptor } from "./lib/outbound-interceptor.ts";
import { MAX_AGENT_PROCESSES } from "./lib/agent-configs.ts";
import { usageOfDescendants, type ProcessUsage } from "./lib/process-tree.ts";
import { formatSelfTimeRows, samplesByModule, selfTimeByFunction, summarizeCpuProfile, type CpuProfile } from "./lib/cpu-profile-summary.ts";
import { runPoolChild } from "./lib/promise-pool-baseline.ts";
import { runBareClientChild } from "./lib/bare-client.ts";
import type { RunnerWorkload } from "./lib/runner-workload.ts";
import { findWorkerdInspectors, SAMPLING_INTERVAL_US, startWorkerdProfiles, writeProfiles, type WorkerdProfiles } from "./lib/workerd-inspector.ts";
import { breakdownPerfScript, comparePerfSides, formatPerfBreakdown, formatPerfSides, splitPerfScriptByPid, type PerfKindCost } from "./lib/perf-breakdown.ts";
import { startPerfRecord } from "./lib/perf-record.ts";
import { formatPerfTimeline, perfTimeline } from "./lib/perf-timeline.ts";
import { startOtlpReceiver, type OtlpReceiver } from "./lib/otlp-receiver.ts";
import { compareTracedRounds, formatTraceComparison, formatTracedSwarm, type TracedRound } from "./lib/trace-comparison.ts";
import { measureTracePathCpu } from "./lib/trace-path-cost.ts";
import { sumChatSpans } from "./lib/span-tree.ts";
import { scratchStateDir } from "./lib/scratch-state.ts";
import { machineCeiling } from "./lib/machine-ceiling.ts";
import { formatInFlightBySteps, formatRamp, inFlightBySteps, rampOf } from "./lib/ramp-trace.ts";
import { formatSlotRefill, slotRefill } from "./lib/slot-refill.ts";
import { formatSummary, getSwarm, getSwarmIfChanged, submitSwarm, waitForSwarm, type SwarmStatusBody } from "./lib/swarm-client.ts";

// The options, their defaults and `--help` are commander's (as the CLI's): one declaration each.
const program = newProgram("npm run bench --")
  .description(
    "The baseline (a promise pool over the openai SDK) and edgeswarm, side by side, against one mock model. docs/benchmarks.md explains every option and figure.",
  )
  .option("--tasks <n>", "tasks (1-10,000)", "1000")
  .option("--concurrency <w>", "the window, of both runners (1-1,500)", "100")
  .option("--latency <spec>", LATENCY_FORMS, "200")
  .option(
    "--ttfb <ms>",
    "the mock's time to first byte: MS, or both (the workload with early headers, --ttfb 0, then header-bound, --ttfb = the mean call latency)",
    "both",
  )
  .option("--faults <profile>", "the mock's fault profile: none or mixed", "none")
  .option("--no-gate", "without the simulated 6 connections waiting for headers per invocation")
  .option("--no-baseline", "edgeswarm only")
  .option(
    "--floor",
    "also run the floor after the pool: W workers over node:http, each body read whole, no SDK and no retries — what this machine and the mock allow any runner (prints its wall over the ideal)",
  )
  .option("--no-warmup", "a cold stack: no 20-task swarm first")
  .option("--tool-turns <t>", "every task an agent of T scratchpad turns (no baseline)", "0")
  .option("--max-output-tokens <n>", "max_tokens of every call", "32")
  .option("--shared-prefix <chars>", "a system prompt of CHARS characters every task sends first (both runners); prints the prompt cache's figures", "0")
  .option(
    "--prefill-ms-per-1k <ms>",
    "the mock's prefill inside its ttfb, ms per 1,000 prompt tokens: a cached prefix skips its share, so its call's headers and end come sooner (0: cached calls are as slow as cold ones)",
    "50",
  )
  .option("--timeout-s <s>", "one call's deadline (default: max(30, 3 x max(p95, ttfb)); 3 s with faults)")
  .option("--hedge <after>", "the swarm's limits.hedge.after: p50, p75, p90, p95, p99 or MS (the pool cannot hedge; default: off)")
  .option("--hedge-max-extra <share>", "limits.hedge.max_extra: backups per task at most (0-0.5)", "0.05")
  .option("--seed <n>", "the mock's PRNG seed", "1")
  .option("--rounds <n>", "the pair N times, then medians and ranges (1-20)", "1")
  .option("--state-dir <dir>", "where the stack keeps its wiped state (default: a tmpfs)")
  .option("--one-process", "both Workers in one wrangler dev session, to compare")
  .option("--agent-processes <n>", `workerd processes that run the agent's lane executors (1-${MAX_AGENT_PROCESSES})`, String(DEFAULT_AGENT_PROCESSES))
  .option("--stack-log <file>", "write both Workers' log lines (wrangler dev's output) to FILE at the end")
  .option(
    "--ramp",
    "sample in flight every 10 ms and print each run's ramp to its peak, its mean in flight every 500 ms to its end, and how long its freed slots waited for their next call, round by round",
  )
  .option("--pool-cpu-prof", "profile the baseline (Node --cpu-prof)")
  .option("--workerd-cpu-prof", "profile each isolate through workerd's inspector")
  .option("--workerd-cpu-prof-interval <us>", "with --workerd-cpu-prof: µs between samples (50-10,000)", String(SAMPLING_INTERVAL_US))
  .option("--workerd-perf", "Linux perf over workerd's native stacks")
  .option(
    "--trace",
    "tracing on and off in one stack: both Workers export OpenTelemetry traces (protobuf) to a receiver in this process, the room traces half the swarms (OTEL_TRACES_SAMPLER_ARG=0.5), and swarms run until --rounds of each side have (default 8); prints each one's cpu/task, each side's median, their ratio and its interval (edgeswarm only)",
  );
parseOrExit(program);
const values = program.opts<{
  tasks: string;
  concurrency: string;
  latency: string;
  ttfb: string;
  faults: string;
  gate: boolean;
  baseline: boolean;
  floor?: boolean;
  warmup: boolean;
  toolTurns: string;
  maxOutputTokens: string;
  sharedPrefix: string;
  prefillMsPer1k: string;
  timeoutS?: string;
  hedge?: string;
  hedgeMaxExtra: string;
  seed: string;
  rounds: string;
  stateDir?: string;
  stackLog?: string;
  oneProcess?: boolean;
  agentProcesses: string;
  ramp?: boolean;
  poolCpuProf?: boolean;
  workerdCpuProf?: boolean;
  workerdCpuProfInterval: string;
  workerdPerf?: boolean;
  trace?: boolean;
}>();

// The mixed profile of the brief: "hang/drop" is split between a hang (no answer until the
// deadline) and a truncated stream (the socket drops halfway).
const FAULT_PROFILES: Readonly<Record<string, Partial<Record<FaultKind, number>>>> = {
  none: {},
  mixed: { "429": 0.2, "500": 0.05, malformed: 0.02, hang: 0.01, truncated: 0.01 },
};
// The swarm status's `billable` operations (queue messages, Durable Object requests, rows written),
// in all and per task; absent from a status of an earlier version.
const BillableOps = z.object({
  queue_messages_sent: z.number(),
  queue_messages_received: z.number(),
  do_requests: z.number(),
  do_rows_written: z.number(),
  d1_rows_written: z.number(),
});
const BillableStatusSchema = z.looseObject({ billable: BillableOps.extend({ per_task: BillableOps.nullable() }).optional() });

/** Production's limit of connections waiting for response headers per invocation, which wrangler dev does not enforce. */
const HEADER_SLOTS_PER_INVOCATION = 6;
const MAX_ATTEMPTS = 3;
/** How often the mock's in_flight is sampled: every 10 ms with --ramp, to show the ramp. */
const IN_FLIGHT_SAMPLE_MS = values.ramp ? 10 : 50;
/** --ramp: the step of its in-flight means over the whole run. */
const IN_FLIGHT_STEP_MS = 500;
/** Status reads whose CPU is measured after a swarm: workerd's CPU is read in 10 ms ticks, so many. */
const STATUS_READ_SAMPLES = 60;
/** --ramp: the most request spans the mock keeps a run (a 10,000-task run with retries fits; each is two numbers). */
const REQUEST_SPANS_KEPT = 200_000;
/** The machine's cores: the CPU both runners and the mock share. */
const CORES = availableParallelism();
/** How often the bench reads the measured swarm's status while it runs. */
const STATUS_POLL_MS = 1_000;
/** --workerd-perf: the swarm's start, by workerd, over its first 400 ms in steps of 20. */
const PERF_START_MS = 400;
const PERF_START_BUCKET_MS = 20;
/** Tasks of the warm-up swarm that runs before the measured one (--no-warmup: none). */
const WARMUP_TASKS = 20;
/** --trace: swarms of each side by default, and the target of issue "Traces where teams already look". */
const TRACE_ROUNDS = 8;
const TRACE_CPU_TARGET = 1.05;
const TRACE_PATH_ROUNDS = 15;
/** --trace: full-size warm-up swarms at most, until one of each side has run (warmUpBothSides). */
const TRACE_WARMUP_MAX = 4;
/**
 * --trace: the room's trace-id ratio sampler (src/core/trace-context.ts, isSampled) decides per swarm,
 * so which swarms are traced is a coin flip the bench does not steer, and no engine code knows it is
 * benched. OTEL_TRACES_SAMPLER_ARG in the environment overrides it (1: every swarm traced, to profile).
 */
const TRACE_SAMPLE_RATIO = process.env.OTEL_TRACES_SAMPLER_ARG ?? "0.5";

/** The agent Worker's `wrangler dev` session (its name in workers/agent/wrangler.toml). */
const AGENT_SESSION = "edgeswarm-agent";
/** --trace: how often, and how little, workerd's CPU is read for waitForQuietWorkerd: one clock tick (10 ms) or less in 250 ms. */
const QUIET_SAMPLE_MS = 250;
const QUIET_CPU_MS = 10;
const QUIET_MAX_MS = 10_000;
// The swarm status's calls less those the room estimated: the chat spans a traced swarm must have.
const LedgerCallsSchema = z.looseObject({ usage: z.looseObject({ calls: z.number(), estimated_calls: z.number().optional() }) });

const tasks = readIntOption("tasks", values.tasks, 1, 10_000);
const profileIntervalUs = readIntOption("workerd-cpu-prof-interval", values.workerdCpuProfInterval, 50, 10_000);
const concurrency = readIntOption("concurrency", values.concurrency, 1, 1_500);
// --ttfb both: every other option is checked here, before the first of the two runs prints a line.
const ttfbBoth = values.ttfb === "both";
const ttfb = ttfbBoth ? 0 : readIntOption("ttfb", values.ttfb, 0, 600_000);
const maxOutputTokens = readIntOption("max-output-tokens", values.maxOutputTokens, 1, 128_000);
const toolTurns = readIntOption("tool-turns", values.toolTurns, 0, 49);
const sharedPrefixChars = readIntOption("shared-prefix", values.sharedPrefix, 0, 200_000);
const prefillMsPer1k = readIntOption("prefill-ms-per-1k", values.prefillMsPer1k, 0, 10_000);
/** --shared-prefix: the system prompt both runners send with every task (null: none). */
const sharedSystem = sharedPrefixChars === 0 ? null : toSharedSystem(sharedPrefixChars);
const seed = readIntOption("seed", values.seed, 0, 2 ** 31);
const agentProcesses = readIntOption("agent-processes", values.agentProcesses, 1, MAX_AGENT_PROCESSES);
// --trace: a side's rounds are 8 unless --rounds says otherwise (a 5% difference needs several).
const rounds = values.trace && program.getOptionValueSource("rounds") === "default" ? TRACE_ROUNDS : readIntOption("rounds", values.rounds, 1, 20);
const latency = readLatencyOption(values.latency);
const hedge = toHedgeSpec(values.hedge, values.hedgeMaxExtra);
const rates = FAULT_PROFILES[values.faults];
if (rates === undefined) {
  console.error(`--faults must be one of ${Object.keys(FAULT_PROFILES).join(", ")}, got "${values.faults}"`);
  process.exit(2);
}
const faulty = Object.keys(rates).length > 0;
// A deadline well above the slowest normal call (3 × p95, or the ttfb); with faults, short enough
// that hung calls come back soon, as in `npm run chaos`.
const timeoutS =
  values.timeoutS === undefined
    ? Math.min(600, Math.max(faulty ? 3 : 30, Math.ceil((3 * Math.max(p95LatencyMs(latency), ttfb)) / 1000)))
    : readIntOption("timeout-s", values.timeoutS, 1, 600);

// Every workload twice by default: the same swarm costs very different connection budgets when the
// upstream sends its headers at once (streaming, a short first token) and when they come with the
// answer (non-streaming proxies, short answers, slow reasoning): each half is a bench of its own.
if (ttfbBoth) {
  const headerBound = Math.round(meanLatencyMs(latency, 0));
  const rest = process.argv.slice(2).filter((arg, i, all) => arg !== "--ttfb" && all[i - 1] !== "--ttfb" && !arg.startsWith("--ttfb="));
  for (const [label, ms] of [
    ["early headers", 0],
    ["header-bound: headers with the answer", headerBound],
  ] as const) {
    console.log(`\n=== ${label} (--ttfb ${ms}) ===`);
    const run = spawnSync(process.execPath, [process.argv[1] ?? "scripts/bench.ts", ...rest, "--ttfb", String(ms)], { stdio: "inherit" });
    if (run.status !== 0) process.exit(run.status ?? 1);
  }
  process.exit(0);
}

const callsPerTask = toolTurns + 1;
// A streamed call lasts max(latency, ttfb): the mock ends it right after the headers when the latency is shorter.
const meanMs = meanLatencyMs(latency, ttfb);
// The throughput bound: each task holds its window slot for its T+1 calls, one after another.
const idealS = (tasks * callsPerTask * meanMs) / concurrency / 1_000;
const runBaseline = values.baseline && toolTurns === 0 && !values.trace;
// --floor: the bare client makes one call a task (no agent turns), and --trace compares edgeswarm with itself.
const runFloor = values.floor === true && toolTurns === 0 && !values.trace;
// --pool-cpu-prof: the baseline runs under Node's --cpu-prof, and the bench prints where its CPU went.
const poolProfileDir = values.poolCpuProf ? path.join(ROOT, ".tmp", "pool-cpu-prof") : undefined;

const scenario: Scenario = {
  latency,
  ttfb_ms: ttfb,
  prefill_ms_per_1k_tokens: prefillMsPer1k,
  seed,
  retry_after_s: 1,
  ...(faulty ? { rates } : {}),
};
const prompts = Array.from({ length: tasks }, (_, i) =>
  toolTurns > 0
    ? `[mock:tool_turns=${toolTurns}] bench task ${i + 1}: use scratchpad_put, then summarize item ${i + 1}`
    : `bench task ${i + 1}: summarize item ${i + 1}`,
);

// The stack's state is thrown away: on a tmpfs unless --state-dir says where (lib/scratch-state.ts says why).
const state =
  values.stateDir === undefined ? scratchStateDir("bench", path.join(ROOT, ".tmp", "bench-state")) : { dir: path.resolve(values.stateDir), tmpfs: false };
const persistTo = state.dir;
await rm(persistTo, { recursive: true, force: true });
const gateText = values.gate ? `${HEADER_SLOTS_PER_INVOCATION} header slots/invocation` : "off";
console.log(
  `bench: tasks=${tasks} latency=${values.latency} ttfb=${ttfb} ms (mean call ${meanMs.toFixed(0)} ms)${sharedSystem === null ? "" : ` prefill=${prefillMsPer1k} ms/1k prompt tokens`} concurrency=${concurrency} faults=${values.faults}${faulty ? ` ${JSON.stringify(rates)}` : ""} gate=${gateText} timeout=${timeoutS} s max_attempts=${MAX_ATTEMPTS}${toolTurns > 0 ? ` tool-turns=${toolTurns}` : ""} state=${persistTo}${state.tmpfs ? " (tmpfs)" : ""} (mock model, local wrangler dev: ${values.oneProcess ? "both Workers in one workerd" : `a workerd per Worker, the agent's executors in ${agentProcesses}`}; miniflare's outbound interceptor ${keepsInterceptor(process.env) ? `kept (${KEEP_INTERCEPTOR_ENV}=true)` : "left out"})`,
);
// --trace: an OTLP receiver in this process (its CPU is Node's, not the Workers'), which both Workers export to.
const traceReceiver = values.trace ? await startOtlpReceiver({ port: 0 }) : null;
const stack = await startStack({
  port: 0,
  apiToken: generateToken(),
  // --ramp: the mock keeps each request's span, for the refill of freed slots (slot-refill.ts).
  mock: { ...scenario, keepRequestSpans: values.ramp ? REQUEST_SPANS_KEPT : 0 },
  persistTo,
  ...(traceReceiver === null ? {} : { otel: { OTEL_EXPORTER_OTLP_ENDPOINT: traceReceiver.url, OTEL_TRACES_SAMPLER_ARG: TRACE_SAMPLE_RATIO } }),
  agentVars: { UPSTREAM_HEADER_SLOTS: values.gate ? String(HEADER_SLOTS_PER_INVOCATION) : "0" },
  // --one-process: both Workers in one wrangler dev, so on one workerd thread (the stack before
  // each Worker had a process of its own), to compare.
  ...(values.oneProcess ? { configs: ["wrangler.toml", "workers/agent/wrangler.toml"] } : { agentProcesses }),
  log: "capture",
});
for (const name of stack.droppedAgentVars) {
  console.log(
    `note: ${name} is not declared in workers/agent/wrangler.toml [vars], so wrangler dev does not pass it to the agent (it runs with its own default)`,
  );
}
try {
  const mock = stack.mock;
  if (mock === null) throw new Error("bench needs the mock model (unset MODEL_BASE_URL)");
  // A deployed edgeswarm is warm, as the pool's figures start once its process has loaded and built
  // its client: a small swarm first starts the isolates (the first batch builds the gateway and its
  // SDK clients), the local Queue and D1. Each swarm still gets a SwarmRoom of its own, as ever.
  let warmed = !values.warmup;
  const warmUp = async (): Promise<void> => {
    const { id } = await submitSwarm(stack.url, stack.token, { ...swarmSpec(WARMUP_TASKS, "warm-up"), name: "bench warm-up" });
    const warm = await waitForSwarm(stack.url, stack.token, id, { timeoutMs: 600_000, pollMs: 100 });
    console.log(`warm-up (not in the figures; --no-warmup measures a cold stack): ${formatSummary(warm)}`);
    warmed = true;
  };
  if (traceReceiver !== null) {
    if (values.warmup) await warmUpBothSides(traceReceiver);
    await runTraceComparison(mock, traceReceiver);
  }
  const results: Array<{ base: RunFigures | null; floor: FloorFigures | null; edgeswarm: RunFigures }> = [];
  for (let round = 1; round <= (traceReceiver === null ? rounds : 0); round += 1) {
    if (rounds > 1) console.log(`round ${round} of ${rounds}:`);
    // The profiles are of the first round only.
    const profile = round === 1;
    const base = runBaseline ? await runBaselineOnce(mock, profile) : null;
    const floor = runFloor ? await runFloorOnce(mock) : null;
    if (!warmed) await warmUp();
    const edgeswarm = await runEdgeswarmOnce(mock, round, profile);
    printRun(base, floor, edgeswarm);
    results.push({ base, floor, edgeswarm });
  }
  if (results.length > 1) printMedians(results);
  if (traceReceiver !== null) printTraces(traceReceiver.spans());
} finally {
  if (values.stackLog !== undefined) await writeFile(values.stackLog, stack.output());
  await stack.stop();
  await traceReceiver?.close();
  await rm(persistTo, { recursive: true, force: true });
}

/** --trace: what the receiver got, for all swarms (warm-up included): traces, spans, and the chat spans' sums. */
function printTraces(spans: ReadonlyArray<{ traceId: string; parentSpanId: string | null }> & Parameters<typeof sumChatSpans>[0]): void {
  const chat = sumChatSpans(spans);
  const roots = spans.filter((span) => span.parentSpanId === null).length;
  console.log(
    `traces: ${new Set(spans.map((span) => span.traceId)).size} (${roots} roots) spans=${spans.length} chat=${chat.calls} tokens_in=${chat.inputTokens} tokens_out=${chat.outputTokens} cost=$${chat.costUsd.toFixed(6)} (OTLP protobuf to a receiver in the bench process)`,
  );
}

/** The workload as the runners beside edgeswarm get it (lib/runner-workload.ts), under an API key of their own. */
function runnerWorkload(apiKey: string): RunnerWorkload {
  return {
    baseURL: stack.modelBaseUrl,
    apiKey,
    model: "mock-1",
    prompts,
    ...(sharedSystem === null ? {} : { system: sharedSystem }),
    concurrency,
    maxTokens: maxOutputTokens,
    timeoutMs: timeoutS * 1000,
  };
}

/** One run of the baseline: the promise pool in a child process, against the mock. */
async function runBaselineOnce(mock: MockModelHandle, profile: boolean): Promise<RunFigures> {
  const sampler = startRun(mock);
  const profileDir = profile ? poolProfileDir : undefined;
  const b = await runPoolChild({ ...runnerWorkload("mock-key-baseline"), maxAttempts: MAX_ATTEMPTS }, profileDir);
  const upstream = mock.stats();
  const figures: RunFigures = {
    wallS: b.wall_ms / 1000,
    p50: b.p50_ms,
    p95: b.p95_ms,
    cpuPerTask: b.cpu_ms / b.tasks,
    statusReadCpuPerTask: null,
    cpuMs: b.cpu_ms,
    mockCpuMs: sampler.mockCpuMs(upstream),
    ok: b.ok,
    err: b.failed,
    upstream,
    meanInFlight: sampler.stop(b.started_at, b.ended_at),
    memory: `rss_mb=${b.max_rss_mb.toFixed(0)}`,
    extra: `${b.max_ms === null ? "" : ` slowest_call=${(b.max_ms / 1000).toFixed(2)} s`}${b.retries > 0 ? ` retries=${b.retries} errors=${JSON.stringify(b.errors)}` : ""}`,
  };
  if (values.ramp) {
    console.log(`ramp of the baseline (in flight every ${IN_FLIGHT_SAMPLE_MS} ms): ${sampler.ramp(upstream)}`);
    console.log(`slots of the baseline: ${formatSlotRefill(slotRefill(mock.requestSpans(), concurrency))}`);
  }
  if (profileDir !== undefined) printPoolProfile(profileDir, tasks);
  return figures;
}

/** What --floor measured: the bare client's wall, its CPU a call and its outcomes. */
interface FloorFigures {
  wallS: number;
  cpuPerCall: number;
  ok: number;
  failed: number;
}

/** One run of the floor: the bare client (lib/bare-client.ts) in a child process, against the mock. */
async function runFloorOnce(mock: MockModelHandle): Promise<FloorFigures> {
  // The run's scenario and fresh stats, as the other runners get; its figures are its own process's.
  const sampler = startRun(mock);
  const f = await runBareClientChild(runnerWorkload("mock-key-floor"));
  sampler.stop(f.started_at, f.ended_at);
  return { wallS: f.wall_ms / 1000, cpuPerCall: f.cpu_ms / f.tasks, ok: f.ok, failed: f.failed };
}

/** The floor's line (--floor). */
function formatFloor(floor: FloorFigures): string {
  return `${label("floor (bare node:http client):")}wall=${floor.wallS.toFixed(2)} s wall/ideal=${wallOverIdeal(floor.wallS)} cpu/call=${floor.cpuPerCall.toFixed(2)} ms ok=${floor.ok} err=${floor.failed}`;
}

/**
 * One swarm of the workload on the running stack (a SwarmRoom of its own), with its summary lines.
 * `settle`: the CPU is read once workerd is quiet after the end (waitForQuietWorkerd), not when the
 * status first says it ended, so what a swarm does after its end (a lane's last span export, the
 * room's root span) is its own and not the next swarm's.
 */
async function runEdgeswarmOnce(
  mock: MockModelHandle,
  round: number,
  profile: boolean,
  options: { settle?: boolean; label?: string; perf?: boolean } = {},
): Promise<RunFigures & { swarmId: string; status: SwarmStatusBody; statusReads: number; settledS: number | null; agentPerf: PerfKindCost[] | null }> {
  const sampler = startRun(mock);
  // --workerd-cpu-prof: each Worker's isolate is profiled through the inspector during the swarm.
  const workerdProfiles = profile && values.workerdCpuProf ? await startAllProfiles(stack.sessionPids, stack.inspectorPort, stack.outboundInterceptor) : null;
  // --workerd-perf: Linux perf samples workerd's native stacks (every isolate, exactly attributed),
  // from before the submit on (startPerfRecord resolves once perf samples).
  const perf =
    (options.perf ?? profile) && values.workerdPerf
      ? await startPerfRecord(
          stack.sessions.flatMap((session) => usageOfDescendants([session.pid], "workerd").map((p) => p.pid)),
          path.join(ROOT, ".tmp", "workerd-perf"),
        )
      : null;
  if (perf !== null && !perf.ok) console.log(`note: --workerd-perf: ${perf.why}`);
  // Each session's workerd processes; the whole stack's are all of them.
  const sessionsBefore = stack.sessions.map((session) => usageOfDescendants([session.pid], "workerd"));
  const cpuBefore = sessionsBefore.flat();
  const submittedAt = Date.now();
  const { id } = await submitSwarm(stack.url, stack.token, swarmSpec(tasks, options.label ?? (rounds > 1 ? `bench round ${round}` : "bench")));
  // The swarm's own figures (wall_s, latencies) come from its SwarmRoom, not from when a poll sees
  // the end; a status poll costs workerd about 6 ms of CPU locally (half of it wrangler's dev proxy
  // and the request's way in), so the bench looks once a second rather than five times.
  // Each read is a SwarmRoom request the swarm's billable count includes: counted, to print apart.
  let statusReads = 0;
  const status = await waitForSwarm(stack.url, stack.token, id, {
    timeoutMs: 1_800_000,
    pollMs: STATUS_POLL_MS,
    onProgress: () => {
      statusReads += 1;
    },
  });
  const settledS = options.settle ? await waitForQuietWorkerd() : null;
  const sessionsAfter = stack.sessions.map((session) => usageOfDescendants([session.pid], "workerd"));
  const cpuAfter = sessionsAfter.flat();
  const perfScript = perf?.ok === true ? await perf.recording.stop() : null;
  const profiles = workerdProfiles === null ? null : await workerdProfiles.stop();
  const upstream = mock.stats();
  // Over the swarm's own wall, not up to when the poll saw its end.
  const meanInFlight = sampler.stop(submittedAt, submittedAt + status.wall_s * 1_000);
  const mockCpuMs = sampler.mockCpuMs(upstream);
  if (values.ramp) {
    console.log(`ramp of edgeswarm (in flight every ${IN_FLIGHT_SAMPLE_MS} ms): ${sampler.ramp(upstream)}`);
    console.log(`slots of edgeswarm: ${formatSlotRefill(slotRefill(mock.requestSpans(), concurrency))}`);
    console.log(`edgeswarm's ends (ms): ${formatEnds(submittedAt, status.wall_s, upstream)}`);
  }

  console.log(formatSummary(status));
  console.log(
    [
      `ideal=${idealS.toFixed(2)} s`,
      `efficiency=${(idealS / status.wall_s).toFixed(3)} (ideal/wall)`,
      `upstream_calls=${upstream.calls}`,
      ...(toolTurns > 0 ? [`model_calls/s=${(upstream.calls / status.wall_s).toFixed(1)}`, `tool_calls=${status.tool_calls ?? "n/a"}`] : []),
      `upstream_max_in_flight=${upstream.max_in_flight}`,
      `state=${status.state}`,
    ].join(" "),
  );
  // The calls came as the stack says they would: through miniflare's interceptor (it sets CF-Worker) or not.
  const intercepted = upstream.cf_worker_requests;
  if (intercepted !== (stack.outboundInterceptor ? upstream.calls : 0)) {
    console.log(
      `warning: ${intercepted} of ${upstream.calls} upstream calls came through miniflare's outbound interceptor (it was ${stack.outboundInterceptor ? "kept" : "left out"}): the CPU figures are not what they say`,
    );
  }
  const billable = formatBillable(status, tasks, statusReads);
  if (billable !== null) console.log(billable);
  const hedgeLine = formatHedges(status, tasks, upstream.calls);
  if (hedgeLine !== null) console.log(hedgeLine);
  const workerd = workerdUsage(cpuBefore, cpuAfter);
  if (workerd?.note) console.log(`note: ${workerd.note}`);
  // Each session's workerd on its own (the local stack runs one per Worker).
  const sessionCpuMs = stack.sessions.map((_, i) => workerdUsage(sessionsBefore[i] ?? [], sessionsAfter[i] ?? [])?.cpuMs ?? null);
  if (workerd !== null && stack.sessions.length > 1) {
    const bySession = stack.sessions.map((session, i) => `${session.name}=${formatCpuPerTask(sessionCpuMs[i] ?? null, tasks)}`);
    console.log(`workerd cpu/task by process: ${bySession.join(" ")}`);
  }
  if (profiles !== null) printWorkerdProfiles(profiles, tasks, workerd?.cpuMs ?? null);
  // The bench's reads of the status are workerd's CPU too, but not the swarm's: each is counted at
  // what a read costs once the swarm is over (the same path: the key check, the SwarmRoom's status,
  // which then carries the output, made once; a read during the run refreshes the latencies' percentiles instead).
  const reads = workerd !== null && statusReads > 0 ? await statusReadCpuMs(id) : null;
  const readMs = reads?.fullMs ?? null;
  const statusReadCpuPerTask = readMs === null ? null : (readMs * statusReads) / tasks;
  if (reads !== null && readMs !== null && statusReadCpuPerTask !== null && workerd !== null) {
    const conditional = reads.notModifiedMs === null ? "" : `; with its ETag in If-None-Match (304, no body) ${reads.notModifiedMs.toFixed(1)} ms`;
    console.log(
      `the bench's status reads: ${statusReads} during the swarm, ${readMs.toFixed(1)} ms of workerd CPU each (${STATUS_READ_SAMPLES} read after it${conditional}), ${statusReadCpuPerTask.toFixed(2)} ms a task; the swarm's own cpu/task=${(workerd.cpuMs / tasks - statusReadCpuPerTask).toFixed(2)} ms`,
    );
  }
  let agentPerf: PerfKindCost[] | null = null;
  if (perfScript !== null) {
    const breakdown = breakdownPerfScript(perfScript);
    console.log(`workerd CPU by what it ran (perf, ${breakdown.samples} samples at 999 Hz; raw data in .tmp/workerd-perf/perf.data):`);
    for (const line of formatPerfBreakdown(breakdown, workerd === null ? null : workerd.cpuMs / tasks)) console.log(line);
    // The swarm's start: which workerd ran when, from the submit on.
    const timeline = perfTimeline(perfScript, {
      fromMs: submittedAt,
      untilMs: submittedAt + PERF_START_MS,
      bucketMs: PERF_START_BUCKET_MS,
      groups: stack.sessions.map((session, i) => ({ name: session.name, pids: (sessionsBefore[i] ?? []).map((p) => p.pid) })),
    });
    console.log(
      `the start by workerd (perf: samples, about 1 ms of CPU each, in each ${PERF_START_BUCKET_MS} ms from the submit, where one thread busy throughout gives ${PERF_START_BUCKET_MS}):`,
    );
    for (const line of formatPerfTimeline(timeline)) console.log(line);
    if (stack.sessions.length > 1) {
      const byPid = splitPerfScriptByPid(perfScript);
      for (const [i, session] of stack.sessions.entries()) {
        const text = (sessionsBefore[i] ?? []).map((p) => byPid.get(p.pid) ?? "").join("\n\n");
        const own = breakdownPerfScript(text);
        const cpuMs = sessionCpuMs[i] ?? null;
        console.log(`  the workerd of ${session.name} alone (${own.samples} samples, ${formatCpuPerTask(cpuMs, tasks)}/task):`);
        for (const line of formatPerfBreakdown(own, cpuMs === null ? null : cpuMs / tasks)) console.log(`  ${line}`);
        if (session.name === AGENT_SESSION && cpuMs !== null)
          agentPerf = [
            ...own.byKind.map(({ kind, share }) => ({ kind, msPerTask: (share * cpuMs) / tasks })),
            { kind: "(garbage collection on the main thread, in whichever event)", msPerTask: (own.gc * cpuMs) / tasks },
          ];
      }
    }
  }
  return {
    wallS: status.wall_s,
    p50: status.latency_ms.p50,
    p95: status.latency_ms.p95,
    cpuPerTask: workerd === null ? null : workerd.cpuMs / tasks,
    statusReadCpuPerTask,
    cpuMs: workerd === null ? null : workerd.cpuMs,
    mockCpuMs,
    ok: status.counts.succeeded,
    err: status.counts.failed + status.counts.cancelled + status.counts.skipped_budget + status.counts.skipped,
    upstream,
    meanInFlight,
    memory: workerd === null ? "workerd_rss_mb=n/a" : `workerd_rss_mb=${workerd.peakRssMb.toFixed(0)}`,
    extra: "",
    swarmId: id,
    status,
    statusReads,
    settledS,
    agentPerf,
  };
}

/**
 * Waits until every workerd of the stack spent at most QUIET_CPU_MS in each of two QUIET_SAMPLE_MS
 * in a row (or QUIET_MAX_MS passed); returns the seconds it waited. The quiet intervals' own CPU (a
 * tick at most each) falls in the figure of both sides alike.
 */
async function waitForQuietWorkerd(): Promise<number> {
  const started = Date.now();
  const total = (): number => stack.sessions.flatMap((session) => usageOfDescendants([session.pid], "workerd")).reduce((sum, p) => sum + p.cpuMs, 0);
  let last = total();
  let quiet = 0;
  while (quiet < 2 && Date.now() - started < QUIET_MAX_MS) {
    await new Promise((resolve) => setTimeout(resolve, QUIET_SAMPLE_MS));
    const now = total();
    quiet = now - last <= QUIET_CPU_MS ? quiet + 1 : 0;
    last = now;
  }
  return (Date.now() - started) / 1_000;
}

/**
 * --trace: full-size swarms before the measured ones, not in the figures, until one of each side has
 * run (at most TRACE_WARMUP_MAX). With only the 20-task warm-up, the first measured swarm was unlike
 * the rest: its first tickets were sized from a 20-task swarm's lane (the room's prior,
 * architecture.md "A swarm starts from what the last one measured") and its side's code was not
 * compiled yet, so it cost 1.2–1.4x the next swarms, on whichever side the coin put it.
 */
async function warmUpBothSides(receiver: OtlpReceiver): Promise<void> {
  const seen = { traced: false, untraced: false };
  const ratio = Number(TRACE_SAMPLE_RATIO);
  for (let swarm = 1; swarm <= TRACE_WARMUP_MAX && (!seen.traced || (ratio < 1 && !seen.untraced)); swarm += 1) {
    const { id } = await submitSwarm(stack.url, stack.token, { ...swarmSpec(tasks, "warm-up"), name: `bench warm-up ${swarm}` });
    const warm = await waitForSwarm(stack.url, stack.token, id, { timeoutMs: 1_800_000, pollMs: STATUS_POLL_MS });
    await waitForQuietWorkerd();
    const traced = receiver.spans().some((span) => span.attributes["edgeswarm.swarm_id"] === id);
    seen[traced ? "traced" : "untraced"] = true;
    console.log(`warm-up swarm ${swarm} ${traced ? "TRACED" : "untraced"} (not in the figures): ${formatSummary(warm)}`);
    if (ratio <= 0) break;
  }
}

/**
 * --trace: swarms on one stack, each traced or not as the room's sampler decides, until `rounds` of
 * each side have run (at most 3 × rounds swarms); each one's CPU is read once workerd is quiet, and
 * the receiver's spans say which side it was on. Then both sides' medians, their ratio and its
 * interval (lib/trace-comparison.ts).
 */
async function runTraceComparison(mock: MockModelHandle, receiver: OtlpReceiver): Promise<void> {
  const ratio = Number(TRACE_SAMPLE_RATIO);
  const bothSides = ratio > 0 && ratio < 1;
  const maxSwarms = bothSides ? 3 * rounds : rounds;
  console.log(
    `tracing on and off: the room traces a swarm with probability ${TRACE_SAMPLE_RATIO} (OTEL_TRACES_SAMPLER_ARG); swarms run until ${rounds} of each side have (at most ${maxSwarms})`,
  );
  const measured: TracedRound[] = [];
  const count = (traced: boolean) => measured.filter((r) => r.traced === traced).length;
  // --workerd-perf with --trace: every swarm is sampled, and the agent's CPU by kind is compared side by side.
  const perfSides: { traced: PerfKindCost[][]; untraced: PerfKindCost[][] } = { traced: [], untraced: [] };
  for (let swarm = 1; swarm <= maxSwarms && (count(true) < rounds || (bothSides && count(false) < rounds)); swarm += 1) {
    console.log(`swarm ${swarm}:`);
    const postsBefore = receiver.requests().length;
    const run = await runEdgeswarmOnce(mock, swarm, swarm === 1, { settle: true, label: `bench swarm ${swarm}`, perf: values.workerdPerf === true });
    printRun(null, null, run);
    const spans = receiver.spans().filter((span) => span.attributes["edgeswarm.swarm_id"] === run.swarmId);
    const chat = sumChatSpans(spans);
    const usage = LedgerCallsSchema.parse(run.status).usage;
    const ledgerCalls = usage.calls - (usage.estimated_calls ?? 0);
    const traced = spans.length > 0;
    // The export POSTs that reached the receiver while this swarm ran and settled (both Workers').
    const posts = receiver.requests().slice(postsBefore);
    const postBytes = posts.reduce((sum, post) => sum + post.body.length, 0);
    // What the swarm's dispatch happened to be (its CPU moves with it, on either side): tickets (a
    // lane each) and the room's requests, the bench's status reads left out.
    const billable = BillableStatusSchema.parse(run.status).billable;
    const dispatch =
      billable === undefined
        ? ""
        : ` tickets=${billable.queue_messages_sent} room_requests/task=${((billable.do_requests - run.statusReads) / tasks).toFixed(3)} status_reads=${run.statusReads}`;
    console.log(
      `${formatTracedSwarm(swarm, traced, run.cpuPerTask)} spans=${spans.length} chat=${chat.calls} (ledger ${ledgerCalls}${traced && chat.calls !== ledgerCalls ? ": SPANS MISSING" : ""}) roots=${spans.filter((span) => span.parentSpanId === null).length} posts=${posts.length}${posts.length === 0 ? "" : ` (${(postBytes / posts.length / 1_024).toFixed(1)} KB a post)`}${dispatch} settled ${run.settledS?.toFixed(2) ?? "n/a"} s after the end`,
    );
    if (run.cpuPerTask !== null) measured.push({ traced, cpuPerTask: run.cpuPerTask });
    if (run.agentPerf !== null) (traced ? perfSides.traced : perfSides.untraced).push(run.agentPerf);
  }
  if (perfSides.traced.length > 0 && perfSides.untraced.length > 0) {
    console.log(
      `the agent's workerd by what it ran (perf), mean ms a task of ${perfSides.traced.length} traced and ${perfSides.untraced.length} untraced swarms, and traced − untraced:`,
    );
    for (const line of formatPerfSides(comparePerfSides(perfSides.traced, perfSides.untraced))) console.log(line);
  }
  const comparison = compareTracedRounds(measured, { target: TRACE_CPU_TARGET });
  console.log(`tracing on/off, ${count(true)} traced and ${count(false)} untraced swarms of ${tasks} tasks (workerd CPU, both processes):`);
  if (comparison === null) console.log("  no comparison: a side has no swarm (or no CPU figure)");
  else for (const line of formatTraceComparison(comparison, TRACE_CPU_TARGET)) console.log(line);
  // The traced path's JavaScript alone, steadier than the swarms' figures (lib/trace-path-cost.ts).
  const path = measureTracePathCpu(tasks, TRACE_PATH_ROUNDS);
  const share =
    comparison === null ? "" : ` = ${((100 * (path.buildUs + path.encodeUs)) / 1_000 / comparison.untracedMedian).toFixed(2)}% of the untraced median`;
  console.log(
    `  the traced path alone (its spans built and encoded in this process, Node's V8, median of ${TRACE_PATH_ROUNDS} rounds of ${tasks} tasks): build ${path.buildUs.toFixed(1)} µs + encode ${path.encodeUs.toFixed(1)} µs a task${share}, the first round (not yet compiled) ${path.firstRoundUs.toFixed(1)} µs; ${path.bytesPerTask.toFixed(0)} protobuf bytes a task (the post itself is in the swarms' figures only)`,
  );
}

function label(s: string): string {
  return s.padEnd(37);
}

/** A call's CPU in all the processes it passes through here: the runner's and the mock's. */
function cpuPerCall(r: RunFigures): number | null {
  return r.cpuMs === null || r.mockCpuMs === null || r.upstream.calls === 0 ? null : (r.cpuMs + r.mockCpuMs) / r.upstream.calls;
}

function mockCpuPerCall(r: RunFigures): number | null {
  return r.mockCpuMs === null || r.upstream.calls === 0 ? null : r.mockCpuMs / r.upstream.calls;
}

function ceilingOf(r: RunFigures) {
  return machineCeiling({ cores: CORES, cpuMsPerCall: cpuPerCall(r), meanLatencyMs: meanMs });
}

/**
 * The line that says what the machine allows at each run's CPU per call (lib/machine-ceiling.ts),
 * next to the mean in flight measured: a runner at its ceiling is held back by this machine's
 * cores, not by its window.
 */
function formatCeiling(runs: ReadonlyArray<[string, RunFigures]>): string {
  const each = (pick: (r: RunFigures) => string) => runs.map(([name, r]) => `${name} ${pick(r)}`).join(", ");
  const ms = (v: number | null) => (v === null ? "n/a" : `${v.toFixed(2)} ms`);
  return [
    `machine ceiling (${CORES} cores, calls of ${meanMs.toFixed(0)} ms):`,
    `cpu/call with the mock's: ${each((r) => ms(cpuPerCall(r)))};`,
    `at most ${each((r) => `${ceilingOf(r)?.callsPerMs.toFixed(2) ?? "n/a"}`)} calls/ms,`,
    `so mean_in_flight ≤ ${each((r) => `${ceilingOf(r)?.inFlight.toFixed(0) ?? "n/a"}`)}`,
    `(measured ${each((r) => r.meanInFlight.toFixed(0))})`,
  ].join(" ");
}

/**
 * The --shared-prefix system prompt: CHARS characters of numbered rules (the same for every task and
 * both runners; the task's own text comes after it, in its user message).
 */
function toSharedSystem(chars: number): string {
  let text = "You are a careful analyst. Follow the house rules below for every item.";
  for (let rule = 1; text.length < chars; rule += 1) text += ` Rule ${rule}: state the evidence for each claim and keep the answer short.`;
  return text.slice(0, chars);
}

/** What the mock's prompt cache did for a run: the cached share of prompt tokens, and the bill at mock-1's prices. */
function cacheFigures(r: RunFigures): { share: number; costUsd: number } {
  const counts = r.upstream.by_model["mock-1"];
  const usage = {
    prompt_tokens: counts?.prompt_tokens ?? 0,
    cached_tokens: counts?.cached_tokens ?? 0,
    completion_tokens: counts?.completion_tokens ?? 0,
    reasoning_tokens: counts?.reasoning_tokens ?? 0,
    total_tokens: counts?.total_tokens ?? 0,
  };
  const price = DEFAULT_PRICES["mock-1"];
  return { share: usage.prompt_tokens === 0 ? 0 : usage.cached_tokens / usage.prompt_tokens, costUsd: price === undefined ? 0 : costOfUsage(usage, price) };
}

/** --shared-prefix: both runners' prompt-cache figures, side by side. */
function printCacheLine(base: RunFigures | null, edgeswarm: RunFigures): void {
  const each = (name: string, r: RunFigures) => {
    const c = cacheFigures(r);
    return `${name} cached_share=${(c.share * 100).toFixed(1)}% cost=$${c.costUsd.toFixed(6)} wall=${r.wallS.toFixed(2)} s`;
  };
  const line = [`prompt cache (--shared-prefix ${sharedPrefixChars} chars, mock-1 prices, cached input at its cached rate):`, each("edgeswarm", edgeswarm)];
  if (base !== null) {
    line.push(`| ${each("baseline", base)}`);
    line.push(
      `| ratio edgeswarm/baseline: cost=${ratio(cacheFigures(edgeswarm).costUsd, cacheFigures(base).costUsd)} wall=${ratio(edgeswarm.wallS, base.wallS)}`,
    );
  }
  console.log(line.join(" "));
}

/** A round's side-by-side lines: both runners' figures and their ratios, and the floor's (--floor). */
function printRun(base: RunFigures | null, floor: FloorFigures | null, edgeswarm: RunFigures): void {
  if (sharedSystem !== null) printCacheLine(base, edgeswarm);
  const floorIdeal = floor === null ? "" : `, floor ${wallOverIdeal(floor.wallS)}`;
  if (floor !== null) console.log(formatFloor(floor));
  if (base !== null) {
    console.log(`${label("baseline (promise pool, openai SDK):")}${formatRun(base)}${base.extra}`);
    console.log(`${label("edgeswarm:")}${formatRun(edgeswarm)}`);
    console.log(
      `ratio edgeswarm/baseline: wall=${ratio(edgeswarm.wallS, base.wallS)} upstream_wall=${ratio(upstreamWallS(edgeswarm.upstream), upstreamWallS(base.upstream))} p50=${ratio(edgeswarm.p50, base.p50)} p95=${ratio(edgeswarm.p95, base.p95)} cpu/task=${ratio(edgeswarm.cpuPerTask, base.cpuPerTask)}${swarmCpuRatio(edgeswarm, base)}` +
        `    ideal=${idealS.toFixed(2)} s  wall/ideal=${wallOverIdeal(edgeswarm.wallS)} (baseline ${wallOverIdeal(base.wallS)}${floorIdeal})`,
    );
    console.log(
      formatCeiling([
        ["baseline", base],
        ["edgeswarm", edgeswarm],
      ]),
    );
  } else {
    const why =
      toolTurns > 0 ? "--tool-turns: the hand-written pool runs no agent turns" : values.trace ? "--trace compares edgeswarm with itself" : "--no-baseline";
    console.log(`baseline: skipped (${why})`);
    console.log(`${label("edgeswarm:")}${formatRun(edgeswarm)}`);
    console.log(`ideal=${idealS.toFixed(2)} s  wall/ideal=${wallOverIdeal(edgeswarm.wallS)}${floor === null ? "" : ` (floor ${wallOverIdeal(floor.wallS)})`}`);
    console.log(formatCeiling([["edgeswarm", edgeswarm]]));
  }
}

/**
 * With --rounds N: each figure's median over the rounds, and the median, lowest and highest of each
 * round's ratio (a round's two runs are next to each other in time, so their ratio holds up better
 * on a shared machine than either figure alone).
 */
function printMedians(results: Array<{ base: RunFigures | null; floor: FloorFigures | null; edgeswarm: RunFigures }>): void {
  const spread = (values: Array<number | null>, digits: number, unit = ""): string => {
    const known = values.filter((v): v is number => v !== null).sort((a, b) => a - b);
    if (known.length === 0) return "n/a";
    const [low, high] = [known[0] ?? 0, known[known.length - 1] ?? 0];
    return `${medianOf(known).toFixed(digits)}${unit} (${low.toFixed(digits)}–${high.toFixed(digits)})`;
  };
  const figures = (pick: (r: { base: RunFigures | null; edgeswarm: RunFigures }) => RunFigures | null): string => {
    const runs = results.map(pick).filter((r): r is RunFigures => r !== null);
    return [
      `wall=${spread(
        runs.map((r) => r.wallS),
        2,
        " s",
      )}`,
      `p50=${spread(
        runs.map((r) => r.p50),
        0,
        " ms",
      )}`,
      `cpu/task=${spread(
        runs.map((r) => r.cpuPerTask),
        2,
        " ms",
      )}`,
      `max_in_flight=${spread(
        runs.map((r) => r.upstream.max_in_flight),
        0,
      )}`,
      `mean_in_flight=${spread(
        runs.map((r) => r.meanInFlight),
        1,
      )}`,
      `mock_cpu/call=${spread(runs.map(mockCpuPerCall), 2, " ms")}`,
      `ceiling_in_flight=${spread(
        runs.map((r) => ceilingOf(r)?.inFlight ?? null),
        0,
      )}`,
    ].join(" ");
  };
  console.log(`median of ${results.length} rounds (lowest–highest):`);
  if (results.some((r) => r.base !== null)) console.log(`  ${label("baseline (promise pool, openai SDK):")}${figures((r) => r.base)}`);
  console.log(`  ${label("edgeswarm:")}${figures((r) => r.edgeswarm)}`);
  const floors = results.flatMap((r) => (r.floor === null ? [] : [r.floor]));
  if (floors.length > 0)
    console.log(
      `  ${label("floor (bare node:http client):")}wall/ideal=${spread(
        floors.map((f) => f.wallS / idealS),
        2,
      )} cpu/call=${spread(
        floors.map((f) => f.cpuPerCall),
        2,
        " ms",
      )}`,
    );
  const paired = results.flatMap(({ base, edgeswarm }) => (base === null ? [] : [{ base, edgeswarm }]));
  if (paired.length === 0) return;
  const ratios = (pick: (r: RunFigures) => number | null) =>
    spread(
      paired.map(({ base, edgeswarm }) => {
        const [a, b] = [pick(edgeswarm), pick(base)];
        return a === null || b === null || b === 0 ? null : a / b;
      }),
      2,
      "x",
    );
  console.log(
    `  ratio edgeswarm/baseline, per round: wall=${ratios((r) => r.wallS)} upstream_wall=${ratios((r) => upstreamWallS(r.upstream))} p50=${ratios((r) => r.p50)} cpu/task=${ratios((r) => r.cpuPerTask)}`,
  );
}

function medianOf(sorted: readonly number[]): number {
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

/** The swarm of the first `count` prompts, with the bench's limits; its prompts are named `label … task i`. */
function swarmSpec(count: number, label: string) {
  return {
    name: `bench ${tasks}x${values.latency} W=${concurrency}`,
    model: "mock-1",
    ...(sharedSystem === null ? {} : { system: sharedSystem }),
    tasks: prompts.slice(0, count).map((prompt) => ({ prompt: label === "bench" ? prompt : `${label}: ${prompt}` })),
    ...(toolTurns > 0 ? { tools: ["scratchpad"] } : {}),
    limits: {
      concurrency,
      max_output_tokens: maxOutputTokens,
      timeout_s: timeoutS,
      max_attempts: MAX_ATTEMPTS,
      ...(toolTurns > 0 ? { max_turns: callsPerTask, max_tool_calls: toolTurns } : {}),
      ...(hedge === null ? {} : { hedge }),
    },
  };
}

/** --hedge and --hedge-max-extra as the spec's limits.hedge (null: off); exits 2 on a bad value. */
function toHedgeSpec(after: string | undefined, maxExtra: string): HedgeSpec | null {
  if (after === undefined) return null;
  const parsed = HedgeSpecSchema.safeParse({ after: /^\d+$/.test(after) ? Number(after) : after, max_extra: Number(maxExtra) });
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    console.error(
      `--hedge${issue?.path[0] === "max_extra" ? "-max-extra" : ""}: ${issue?.message ?? "invalid"} (want p50, p75, p90, p95, p99 or MS ≥ 10; a share 0-0.5)`,
    );
    process.exit(2);
  }
  return parsed.data;
}

interface RunFigures {
  wallS: number;
  p50: number | null;
  p95: number | null;
  cpuPerTask: number | null;
  /**
   * Of cpuPerTask, what the bench's own status reads cost workerd during the run (edgeswarm; null
   * for the pool, which nothing reads): the reads times their cost, measured after the run.
   */
  statusReadCpuPerTask: number | null;
  /** The runner's CPU over the run in all: the pool's process, or every workerd process. */
  cpuMs: number | null;
  /** The bench process's CPU over the mock's view of the run, which is the mock model's (see startRun); null when unknown. */
  mockCpuMs: number | null;
  ok: number;
  err: number;
  upstream: StatsSnapshot;
  /** The mock's in_flight, sampled every IN_FLIGHT_SAMPLE_MS over the run: how much of the window W was used. */
  meanInFlight: number;
  memory: string;
  /** The baseline's slowest call and retries; empty for edgeswarm. */
  extra: string;
}

/**
 * Each run sees the scenario from its start (the PRNG re-seeded: the same latencies and faults in
 * request order) and its own upstream counts. The mock's in_flight is sampled until `stop(from, to)`,
 * which averages the samples of the runner's own wall (epoch ms): the pool's starts after its
 * process has loaded, the swarm's at the submit. Each sample also reads this process's CPU (every
 * thread, GC included), and `mockCpuMs(upstream)` is what it spent from the last sample before the
 * mock's first request to the first after its last end: the mock serves the run here, while the
 * pool runs in a child process and edgeswarm in workerd, and the bench's own work around a run (the
 * pool's spawn, the swarm's submit, reading /proc) falls outside those samples. The sampling and a
 * status poll a second are all else it holds.
 */
function startRun(mock: MockModelHandle): {
  stop(from: number, to: number): number;
  mockCpuMs(upstream: StatsSnapshot): number | null;
  /** The lines --ramp prints: in flight from the mock's first request to the run's peak, then each 500 ms's mean to the end. */
  ramp(upstream: StatsSnapshot): string;
} {
  mock.setScenario(scenario);
  mock.resetStats();
  const cpuMs = (): number => {
    const used = process.cpuUsage();
    return (used.user + used.system) / 1_000;
  };
  const samples: Array<{ at: number; inFlight: number; cpuMs: number }> = [{ at: Date.now(), inFlight: 0, cpuMs: cpuMs() }];
  const timer = setInterval(() => samples.push({ at: Date.now(), inFlight: mock.stats().in_flight, cpuMs: cpuMs() }), IN_FLIGHT_SAMPLE_MS);
  let stopped = false;
  const stop = (): void => {
    if (stopped) return;
    stopped = true;
    clearInterval(timer);
    samples.push({ at: Date.now(), inFlight: mock.stats().in_flight, cpuMs: cpuMs() });
  };
  return {
    stop: (from, to) => {
      stop();
      const inWall = samples.filter((s) => s.at >= from && s.at <= to);
      return inWall.length === 0 ? 0 : inWall.reduce((sum, s) => sum + s.inFlight, 0) / inWall.length;
    },
    mockCpuMs: (upstream) => {
      stop();
      const { first_request_at: first, last_end_at: last } = upstream;
      if (first === null || last === null) return null;
      const before = samples.findLast((s) => s.at <= first);
      const after = samples.find((s) => s.at >= last);
      return before === undefined || after === undefined ? null : after.cpuMs - before.cpuMs;
    },
    ramp: (upstream) => {
      stop();
      const steps = formatInFlightBySteps(inFlightBySteps(samples, upstream.first_request_at, IN_FLIGHT_STEP_MS));
      return `${formatRamp(rampOf(samples, upstream.first_request_at, upstream.max_in_flight))}\n  in flight, mean of each ${IN_FLIGHT_STEP_MS} ms: ${steps}`;
    },
  };
}

/**
 * Where edgeswarm's wall goes outside the upstream's: from the submit to the mock's first request
 * (the start: the ticket, the executor, the first grant), and from the mock's last end to the
 * swarm's end as the room recorded it (submit + wall_s; the room's clock starts a little after the
 * submit, so this end is an upper bound).
 */
function formatEnds(submittedAt: number, wallS: number, upstream: StatsSnapshot): string {
  const { first_request_at: first, last_end_at: last } = upstream;
  if (first === null || last === null) return "n/a";
  return `submit → first upstream request ${first - submittedAt}, last upstream end → swarm end ≤ ${Math.round(submittedAt + wallS * 1_000 - last)}`;
}

/**
 * The upstream's view of a run's wall: from the first request the mock received to the end of the
 * last, the same measure for both runners (the pool's own wall is nearly this; edgeswarm's wall
 * also holds its start — the room's ticket through the queue to the first lane's first grant).
 */
function upstreamWallS(upstream: StatsSnapshot): number | null {
  return upstream.first_request_at === null || upstream.last_end_at === null ? null : (upstream.last_end_at - upstream.first_request_at) / 1_000;
}

/** ` (the swarm's own: 1.09x)`: the CPU ratio without the bench's status reads, when they were measured. */
function swarmCpuRatio(edgeswarm: RunFigures, base: RunFigures): string {
  if (edgeswarm.statusReadCpuPerTask === null || edgeswarm.cpuPerTask === null) return "";
  return ` (the swarm's own: ${ratio(edgeswarm.cpuPerTask - edgeswarm.statusReadCpuPerTask, base.cpuPerTask)})`;
}

function formatRun(r: RunFigures): string {
  const ms = (v: number | null) => (v === null ? "n/a" : `${Math.round(v)}`);
  const upstreamWall = upstreamWallS(r.upstream);
  return [
    `wall=${r.wallS.toFixed(2)} s`,
    `upstream_wall=${upstreamWall === null ? "n/a" : upstreamWall.toFixed(2)} s`,
    `p50=${ms(r.p50)} ms`,
    `p95=${ms(r.p95)} ms`,
    `cpu/task=${r.cpuPerTask === null ? "n/a" : r.cpuPerTask.toFixed(2)} ms`,
    `mock_cpu/call=${mockCpuPerCall(r)?.toFixed(2) ?? "n/a"} ms`,
    `max_in_flight=${r.upstream.max_in_flight}`,
    `mean_in_flight=${r.meanInFlight.toFixed(1)}`,
    `max_waiting_for_headers=${r.upstream.max_waiting_for_headers}`,
    `ok=${r.ok} err=${r.err}`,
    `upstream_calls=${r.upstream.calls}`,
    r.memory,
  ].join(" ");
}

function ratio(a: number | null, b: number | null): string {
  return a === null || b === null || b === 0 ? "n/a" : `${(a / b).toFixed(2)}x`;
}

function wallOverIdeal(wallS: number): string {
  return idealS > 0 ? (wallS / idealS).toFixed(2) : "n/a";
}

/** CPU the workerd processes spent between the two samples, and their peak RSS; null without /proc or workerd. */
function workerdUsage(before: ProcessUsage[], after: ProcessUsage[]): { cpuMs: number; peakRssMb: number; note: string | null } | null {
  if (before.length === 0 || after.length === 0) return null;
  const start = new Map(before.map((p) => [p.pid, p.cpuMs]));
  const gone = before.filter((p) => !after.some((a) => a.pid === p.pid)).map((p) => p.pid);
  return {
    cpuMs: after.reduce((sum, p) => sum + p.cpuMs - (start.get(p.pid) ?? 0), 0),
    peakRssMb: after.reduce((sum, p) => sum + p.peakRssMb, 0),
    note: gone.length > 0 ? `workerd ${gone.join(", ")} exited during the swarm: its CPU is not counted` : null,
  };
}

/**
 * The workerd CPU one read of swarm `id`'s status costs, in ms: STATUS_READ_SAMPLES reads, one after
 * the other, once workerd is quiet (what a swarm does after its end would count as the reads' cost);
 * then as many reads that send the ended swarm's ETag back and are answered 304 (null: no tag came).
 */
async function statusReadCpuMs(id: string): Promise<{ fullMs: number; notModifiedMs: number | null } | null> {
  await waitForQuietWorkerd();
  const pids = stack.sessions.map((session) => session.pid);
  const before = usageOfDescendants(pids, "workerd");
  for (let i = 0; i < STATUS_READ_SAMPLES; i += 1) await getSwarm(stack.url, stack.token, id);
  const full = workerdUsage(before, usageOfDescendants(pids, "workerd"));
  if (full === null) return null;
  const { etag } = await getSwarmIfChanged(stack.url, stack.token, id, null);
  if (etag === null) return { fullMs: full.cpuMs / STATUS_READ_SAMPLES, notModifiedMs: null };
  const middle = usageOfDescendants(pids, "workerd");
  let changed = 0;
  for (let i = 0, tag = etag; i < STATUS_READ_SAMPLES; i += 1) {
    const read = await getSwarmIfChanged(stack.url, stack.token, id, tag);
    if (read.changed) changed += 1;
    tag = read.etag ?? tag;
  }
  const conditional = workerdUsage(middle, usageOfDescendants(pids, "workerd"));
  // An ended swarm's status should not move under its tag; if it did, those reads carried bodies.
  if (changed > 0) console.log(`note: ${changed} of ${STATUS_READ_SAMPLES} reads with the ended swarm's ETag came back changed (200, with a body)`);
  return { fullMs: full.cpuMs / STATUS_READ_SAMPLES, notModifiedMs: conditional === null ? null : conditional.cpuMs / STATUS_READ_SAMPLES };
}

function formatCpuPerTask(cpuMs: number | null, taskCount: number): string {
  return cpuMs === null ? "n/a" : `${(cpuMs / taskCount).toFixed(2)} ms`;
}

/** The billable line; `statusReads`: the bench's own reads of the swarm's status, among do_requests. */
function formatBillable(status: SwarmStatusBody, taskCount: number, statusReads: number): string | null {
  const billable = BillableStatusSchema.parse(status).billable;
  if (billable === undefined) return null;
  const per = (n: number) => Number((n / taskCount).toPrecision(3));
  return [
    "billable per task:",
    `queue_msgs_sent=${per(billable.queue_messages_sent)}`,
    `queue_msgs_received=${per(billable.queue_messages_received)}`,
    `do_requests=${per(billable.do_requests)} (the swarm's ${per(billable.do_requests - statusReads)}, the bench's status reads ${per(statusReads)})`,
    `do_rows_written=${per(billable.do_rows_written)}`,
    `d1_rows_written=${per(billable.d1_rows_written)}`,
    `(in all: ${billable.queue_messages_sent} + ${billable.queue_messages_received} queue msgs, ${billable.do_requests} DO requests, ${billable.do_rows_written} DO rows, ${billable.d1_rows_written} D1 rows);`,
    formatPlatformCost(billable, taskCount, statusReads),
  ].join(" ");
}

/**
 * What the swarm's counted operations would cost on Workers Paid beyond the monthly allowances
 * (src/core/capacity-model.ts PRICES), per 1,000 tasks, the bench's status reads left out. The lane
 * executors' duration is not counted here: locally they are not billed objects (the capacity
 * model prices it for production).
 */
function formatPlatformCost(
  billable: { do_requests: number; do_rows_written: number; d1_rows_written: number; queue_messages_sent: number },
  taskCount: number,
  statusReads: number,
): string {
  const per1k = 1_000 / taskCount;
  const { doRequestsUsd, rowsUsd, queueUsd } = priceOperations({
    doRequests: (billable.do_requests - statusReads) * per1k,
    rowsWritten: (billable.do_rows_written + billable.d1_rows_written) * per1k,
    queueMessages: billable.queue_messages_sent * per1k,
  });
  return `platform ${formatUsd(doRequestsUsd + rowsUsd + queueUsd)} per 1,000 tasks (rows ${formatUsd(rowsUsd)}, DO requests ${formatUsd(doRequestsUsd)}, queue ${formatUsd(queueUsd)}; executor duration not counted)`;
}

/**
 * A profile of each isolate that runs edgeswarm's code for a swarm, through workerd's own
 * inspector: both Workers (the orchestrator's hosts the SwarmRooms and KeyPools) and, when the
 * stack keeps them (EDGESWARM_OUTBOUND_INTERCEPTOR=true), miniflare's outbound interceptors, which
 * every upstream fetch then passes through. Without it (no /proc),
 * wrangler's inspector, which lists the orchestrator's isolate only.
 */
async function startAllProfiles(sessionPids: readonly number[], wranglerInspectorPort: number, interceptor: boolean): Promise<WorkerdProfiles> {
  const ports = await findWorkerdInspectors(sessionPids);
  if (ports.length === 0) {
    console.log("note: workerd's own inspector was not found; profiling the orchestrator's isolate only (wrangler's inspector)");
    return startWorkerdProfiles([wranglerInspectorPort], () => true, profileIntervalUs);
  }
  return startWorkerdProfiles(ports, (id) => id.startsWith("core:user:edgeswarm-") || (interceptor && id.startsWith("outbound:")), profileIntervalUs);
}

/** The script `wrangler dev` bundled for a Worker's isolate (the newest under its session's config's `.wrangler/tmp`), or null. */
function readDevBundle(target: string): string | null {
  // A session of one Worker names the directory; with --one-process, each config's own directory.
  const configDir =
    stack.sessions.find((session) => target === `core:user:${session.name}`)?.configDir ??
    (target === `core:user:${AGENT_SESSION}` ? path.join(ROOT, "workers", "agent") : target === "core:user:edgeswarm-orchestrator" ? ROOT : null);
  if (configDir === null) return null;
  const tmp = path.join(configDir, ".wrangler", "tmp");
  if (!existsSync(tmp)) return null;
  const bundles = readdirSync(tmp)
    .map((dir) => path.join(tmp, dir, "index.js"))
    .filter((file) => existsSync(file))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
  return bundles[0] === undefined ? null : readFileSync(bundles[0], "utf8");
}

/** Where workerd's CPU went: each isolate's sampled self time per task and its top functions. */
function printWorkerdProfiles(profiles: Array<{ target: string; profile: CpuProfile }>, taskCount: number, workerdCpuMs: number | null): void {
  const dir = path.join(ROOT, ".tmp", "workerd-cpu-prof");
  mkdirSync(dir, { recursive: true });
  const files = writeProfiles(dir, profiles);
  for (const [i, { target, profile }] of profiles.entries()) {
    const functions = selfTimeByFunction(profile);
    const total = functions.reduce((sum, f) => sum + f.ms, 0);
    if (total === 0) continue;
    console.log(`workerd CPU profile of ${target} (${files[i]}): ${(total / taskCount).toFixed(3)} ms/task sampled, top functions (self time per task):`);
    for (const line of formatSelfTimeRows(functions, taskCount, 15)) console.log(line);
    const bundle = readDevBundle(target);
    if (bundle === null) continue;
    const modules = samplesByModule(profile, bundle);
    const samples = modules.reduce((sum, m) => sum + m.samples, 0);
    console.log(`  its ${samples} samples (idle left out) by source module (the bundle's \`// path\` lines):`);
    for (const { name, samples: n } of modules.slice(0, 20))
      console.log(`  ${String(n).padStart(7)}  ${((100 * n) / samples).toFixed(1).padStart(5)}%  ${name}`);
  }
  // Observed: every busy isolate's profile adds up to about the whole swarm, far over workerd's CPU.
  console.log(
    `note: the isolates of a workerd take turns on its one thread, and V8 charges a sample taken while another isolate runs to where this one last stopped (often a native call, or "(program)"): compare functions within a profile, not a profile's total with workerd's CPU (${workerdCpuMs === null ? "n/a" : (workerdCpuMs / taskCount).toFixed(3)} ms/task in all)`,
  );
}

/** Where the baseline's CPU went, by package or Node internal module (self time, per task). */
function printPoolProfile(dir: string, taskCount: number): void {
  const files = readdirSync(dir)
    .filter((f) => f.endsWith(".cpuprofile"))
    .map((f) => path.join(dir, f));
  const newest = files.sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0];
  if (newest === undefined) return;
  const owners = summarizeCpuProfile(newest);
  const total = owners.reduce((sum, o) => sum + o.ms, 0);
  console.log(`baseline CPU profile (${newest}): ${(total / taskCount).toFixed(3)} ms/task sampled, by owner (self time per task):`);
  for (const line of formatSelfTimeRows(owners, taskCount, 12)) console.log(line);
}
