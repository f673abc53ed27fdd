// `npm run bench:mcp`: the cost of an MCP tool against a built-in one of the same latency. Two swarms
// on the local stack (mock model, dev/mock-mcp), each task one tool call then its answer: one calls
// `mcp__code__search_code` (an MCP server of the 2026-07-28 era, or --era legacy), the other
// `http_fetch` of a page the same mock answers after the same delay. Prints both walls, their ratio
// (target ≤ 1.1) and the tool-list reads the MCP server saw (target: one per server per swarm), and
// the HTTP requests it got by kind (one POST per tools/call; a session's handshake once per lane).
// `--rounds N` runs the pair N times, alternating, and prints the median ratio too (a shared
// machine's load moves between one swarm and the next). `--cpu` prints, for each swarm, the CPU per
// task of each process that runs it (read from /proc around the swarm): the agent's workerd, the
// orchestrator's, the wrangler/miniflare Node processes of both sessions, and this process (the mock
// model and dev/mock-mcp), and the MCP swarm's extra CPU per call over the built-in one, by process.
// `--workerd-cpu-prof` profiles the agent's isolate during each measured swarm (workerd's inspector)
// and prints its top functions; the profiles are kept under .tmp/bench-mcp-cpu-prof/.
import { rm } from "node:fs/promises";
import path from "node:path";
import { startMockMcp } from "../dev/mock-mcp/server.ts";
import { readIntOption } from "./lib/int-option.ts";
import { LATENCY_FORMS, readLatencyOption } from "./lib/latency-option.ts";
import { ROOT, generateToken, startStack } from "./lib/local-stack.ts";
import { newProgram, parseOrExit } from "./lib/parse-options.ts";
import { usageOfDescendants } from "./lib/process-tree.ts";
import { formatSelfTimeRows, selfTimeByFunction } from "./lib/cpu-profile-summary.ts";
import { findWorkerdInspectors, startWorkerdProfiles, writeProfiles } from "./lib/workerd-inspector.ts";
import { mkdirSync } from "node:fs";
import { scratchStateDir } from "./lib/scratch-state.ts";
import { formatSummary, submitSwarm, waitForSwarm } from "./lib/swarm-client.ts";

const program = newProgram("npm run bench:mcp --")
  .description(
    "An MCP tool against a built-in one of the same latency: two swarms on the local stack (mock model, dev/mock-mcp), their walls, ratio and the MCP server's requests (docs/benchmarks.md).",
  )
  .option("--tasks <n>", "tasks of each swarm (1-10,000)", "1000")
  .option("--concurrency <w>", "the window W (1-1,500)", "100")
  .option("--tool-ms <ms>", "latency of the tool, MCP and built-in alike", "50")
  .option("--latency <spec>", `the mock model's latency: ${LATENCY_FORMS}`, "200")
  .option("--era <era>", "the MCP server's protocol era: modern (2026-07-28) or legacy (session-based)", "modern")
  .option("--rounds <n>", "pairs of swarms (built-in, then MCP) to run (1-10)", "1")
  .option("--cpu", "CPU per task of each process of the stack, per swarm (Linux /proc)")
  .option("--workerd-cpu-prof", "profile the agent's isolate (workerd's inspector) during each measured swarm: its top functions");
parseOrExit(program);
const values = program.opts<{
  tasks: string;
  concurrency: string;
  toolMs: string;
  latency: string;
  era: string;
  rounds: string;
  cpu?: boolean;
  workerdCpuProf?: boolean;
}>();
if (values.era !== "modern" && values.era !== "legacy") {
  console.error(`--era must be modern or legacy, got "${values.era}"`);
  process.exit(2);
}
const tasks = readIntOption("tasks", values.tasks, 1, 10_000);
const concurrency = readIntOption("concurrency", values.concurrency, 1, 1_500);
const toolMs = readIntOption("tool-ms", values.toolMs, 0, 60_000);
const rounds = readIntOption("rounds", values.rounds, 1, 10);
const latency = readLatencyOption(values.latency);

const mcp = await startMockMcp({ port: 0, latencyMs: toolMs });
const mcpPath = values.era === "modern" ? "/mcp" : "/session/mcp";
const state = scratchStateDir("bench-mcp", path.join(ROOT, ".tmp", "bench-mcp-state"));
const stack = await startStack({
  port: 0,
  apiToken: generateToken(),
  mock: { latency, seed: 1 },
  persistTo: state.dir,
  // The tools reach the mock on 127.0.0.1 (local development only).
  allowPrivateNetwork: true,
  log: "capture",
});
const host = new URL(mcp.url).host;
const limits = { concurrency, max_output_tokens: 32, max_turns: 2, max_tool_calls: 1 };
const mcpSpec = (n: number, label: string) => ({
  name: `bench:mcp ${label}`,
  model: "mock-1",
  tasks: Array.from({ length: n }, (_, i) => ({ prompt: `[mock:tool_turns=1] ${label} task ${i + 1}: use mcp__code__search_code, then answer` })),
  mcp_servers: [{ name: "code", url: `${mcp.url}${mcpPath}?swarm=${encodeURIComponent(label)}`, tools: ["search_code"] }],
  limits,
});
const builtinSpec = (n: number, label: string) => ({
  name: `bench:mcp ${label}`,
  model: "mock-1",
  tasks: Array.from({ length: n }, (_, i) => ({
    prompt: `[mock:tool_turns=1] ${label} task ${i + 1}: use http_fetch on ${mcp.url}/slow?ms=${toolMs}, then answer`,
  })),
  tools: ["http_fetch"],
  http_allowlist: [host],
  limits,
});

/** The agent's `mcp_call` log lines that carry an error, counted by error type (the captured output's tail). */
function countMcpErrors(output: string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const line of output.split("\n")) {
    const at = line.indexOf('{"event":"mcp_call"');
    if (at < 0) continue;
    try {
      const note = JSON.parse(line.slice(at)) as { errorType?: string | null };
      if (note.errorType) counts[note.errorType] = (counts[note.errorType] ?? 0) + 1;
    } catch {
      // A line cut by the capture's bound.
    }
  }
  return counts;
}

/** CPU ms so far of each part of the stack: each session's workerd and Node processes (wrangler, miniflare, the guard), and this process. */
function readCpu(): Record<string, number> {
  const sum = (pid: number, name: string) => usageOfDescendants([pid], name).reduce((total, p) => total + p.cpuMs, 0);
  const parts: Record<string, number> = {};
  for (const session of stack.sessions) {
    parts[`workerd ${session.name}`] = sum(session.pid, "workerd");
    // wrangler and miniflare run in Node, whose main thread names the process.
    parts[`wrangler+miniflare ${session.name}`] = sum(session.pid, "MainThread");
  }
  const own = process.cpuUsage();
  parts["bench process (mock model, mock MCP)"] = (own.user + own.system) / 1_000;
  return parts;
}

/** CPU ms per task by part between two readings. */
function perTask(before: Record<string, number>, after: Record<string, number>, n: number): Record<string, number> {
  return Object.fromEntries(Object.keys(after).map((part) => [part, ((after[part] ?? 0) - (before[part] ?? 0)) / n]));
}

function formatCpu(cpu: Record<string, number>): string {
  return Object.entries(cpu)
    .map(([part, ms]) => `${part} ${ms.toFixed(2)}`)
    .join(", ");
}

async function run(spec: { name: string; tasks: unknown[] }, profile = false): Promise<{ wall: number; cpu: Record<string, number> }> {
  const before = values.cpu ? readCpu() : {};
  const profiles = profile ? await startWorkerdProfiles(await findWorkerdInspectors(stack.sessionPids), (id) => id === "core:user:edgeswarm-agent") : null;
  const { id } = await submitSwarm(stack.url, stack.token, spec);
  const status = await waitForSwarm(stack.url, stack.token, id, { timeoutMs: 1_800_000, pollMs: 250 });
  console.log(`${spec.name}: ${formatSummary(status)}`);
  const cpu = values.cpu ? perTask(before, readCpu(), spec.tasks.length) : {};
  if (values.cpu) console.log(`  CPU ms/task (/proc, whole processes: other swarms' leftovers and the status polls included): ${formatCpu(cpu)}`);
  const taken = (await profiles?.stop()) ?? [];
  const dir = path.join(ROOT, ".tmp", "bench-mcp-cpu-prof", spec.name.replace(/[^\w.-]+/g, "_"));
  if (taken.length > 0) mkdirSync(dir, { recursive: true });
  const files = writeProfiles(dir, taken);
  for (const [i, { target, profile: sampled }] of taken.entries()) {
    console.log(`  ${target}'s top functions (sampled self time per task; ${files[i]}):`);
    for (const line of formatSelfTimeRows(selfTimeByFunction(sampled), spec.tasks.length, 25)) console.log(`  ${line}`);
  }
  return { wall: status.wall_s, cpu };
}

try {
  console.log(
    `bench:mcp: tasks=${tasks} W=${concurrency} tool=${toolMs} ms model latency=${values.latency} era=${values.era} (mock model and mock MCP server, local wrangler dev; a shared machine: figures are noisy)`,
  );
  // Warm both paths first (isolates, the SDK's dynamic import, the local queue and D1).
  await run(builtinSpec(20, "warm-up builtin"));
  await run(mcpSpec(20, "warm-up mcp"));
  const ratios: number[] = [];
  for (let round = 1; round <= rounds; round += 1) {
    const label = rounds === 1 ? "" : ` r${round}`;
    const { wall: builtin, cpu: builtinCpu } = await run(builtinSpec(tasks, `builtin${label}`), values.workerdCpuProf);
    const mcpLabel = `mcp${label}`;
    const { wall: withMcp, cpu: mcpCpu } = await run(mcpSpec(tasks, mcpLabel), values.workerdCpuProf);
    if (values.cpu) {
      const extra = Object.fromEntries(Object.keys(mcpCpu).map((part) => [part, (mcpCpu[part] ?? 0) - (builtinCpu[part] ?? 0)]));
      const total = Object.values(extra).reduce((sum, ms) => sum + ms, 0);
      console.log(`  the MCP swarm's extra CPU per call (ms): ${formatCpu(extra)}; in all ${total.toFixed(2)}`);
    }
    const key = `${mcpPath}?swarm=${encodeURIComponent(mcpLabel)}`;
    const stats = mcp.stats();
    ratios.push(withMcp / builtin);
    console.log(
      `mcp/builtin wall: ${(withMcp / builtin).toFixed(3)}x (target <= 1.1x); tool-list reads of the MCP swarm's server: ${stats.listReads[key] ?? 0} (target: 1); its requests by kind: ${JSON.stringify(stats.requests[key] ?? {})}`,
    );
  }
  if (rounds > 1) {
    const sorted = [...ratios].sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)] ?? 0;
    console.log(
      `mcp/builtin wall over ${rounds} rounds: median ${median.toFixed(3)}x, min ${sorted[0]?.toFixed(3)}x, max ${sorted.at(-1)?.toFixed(3)}x (target <= 1.1x)`,
    );
  }
  console.log(`failed MCP calls (the agent's mcp_call lines, by error type): ${JSON.stringify(countMcpErrors(stack.output()))}`);
} finally {
  await stack.stop();
  await mcp.close();
  await rm(state.dir, { recursive: true, force: true });
}
