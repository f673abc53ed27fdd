// `npm run soak -- --minutes N`: swarms started back to back on the local stack against an upstream
// with the fault mix, while a schedule fires every minute, checking after each swarm that every
// task is terminal and its ledger rows = its upstream calls, and printing throughput and memory
// over time, so a leak or a slow drift shows. Bounded (1–240 minutes); exits 1 if an invariant failed.
//   Its options: `program` below (`npm run soak -- --help`).
import { rm } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { startMockModel } from "../dev/mock-model/server.ts";
import { readIntOption } from "./lib/int-option.ts";
import { DEFAULT_CRON_EVERY_MS, ROOT, STACK_ENVIRONMENT, generateToken, queryLocalD1, startStack } from "./lib/local-stack.ts";
import { newProgram, parseOrExit } from "./lib/parse-options.ts";
import { usageOfDescendants } from "./lib/process-tree.ts";
import { findWorkerdInspectors, readHeapUsage } from "./lib/workerd-inspector.ts";
import { getAllResults, submitSwarm, waitForSwarm } from "./lib/swarm-client.ts";

const program = newProgram("npm run soak --")
  .description(
    `Swarms back to back on the local stack under the fault mix, a schedule every minute: throughput, memory and the invariants over time; exits 1 if an invariant failed. Environment: ${STACK_ENVIRONMENT}.`,
  )
  .option("--minutes <n>", "how long to run (1-240)", "5")
  .option("--tasks <n>", "tasks of each swarm (1-5,000)", "300")
  .option("--concurrency <w>", "the window W of each swarm (1-1,500)", "50")
  .option("--latency <ms>", "the mock model's latency (0-10,000)", "100");
parseOrExit(program);
const values = program.opts<{ minutes: string; tasks: string; concurrency: string; latency: string }>();
const minutes = readIntOption("minutes", values.minutes, 1, 240);
const tasks = readIntOption("tasks", values.tasks, 1, 5_000);
const concurrency = readIntOption("concurrency", values.concurrency, 1, 1_500);
const latency = readIntOption("latency", values.latency, 0, 10_000);

/** As `npm run faults`' hostile case: 20% 429, 5% 500, 2% malformed bodies, 2% dropped connections. */
const RATES = { "429": 0.2, "500": 0.05, malformed: 0.02, drop: 0.02 };
/** The scheduled swarms call a model of their own, so the upstream counts their calls apart. */
const SCHEDULED_MODEL = "mock-scheduled";
const TERMINAL = new Set(["succeeded", "failed", "cancelled", "skipped_budget", "skipped"]);

const persistTo = path.join(ROOT, ".tmp", "soak-state");
await rm(persistTo, { recursive: true, force: true });
const mock = await startMockModel({ port: 0, latency, seed: 99, rates: RATES, retry_after_s: 1 });
const stack = await startStack({ port: 0, apiToken: generateToken(), mockHandle: mock, persistTo, log: "capture" });
const api = (p: string, init: RequestInit = {}) =>
  fetch(`${stack.url}${p}`, { ...init, headers: { authorization: `Bearer ${stack.token}`, "content-type": "application/json", ...init.headers } });

interface Sample {
  minute: number;
  swarms: number;
  tasksPerS: number;
  callsPerTask: number;
  workerdRssMb: number;
  /** The agent isolate's JavaScript heap in use after a full GC (through workerd's inspector); null if unreadable. */
  agentHeap: Heap | null;
  /** The same of the orchestrator's isolate, which hosts the SwarmRooms and KeyPools. */
  orchestratorHeap: Heap | null;
  nodeHeapMb: number;
}

/** An isolate's heap in use, and whether it was read after a full GC. */
interface Heap {
  mb: number;
  collected: boolean;
}
const mb = (heap: Heap | null): string => (heap === null ? "n/a" : `${heap.mb.toFixed(1)} MB${heap.collected ? "" : "*"}`);
const callsOf = (model: string) => mock.stats().by_model[model]?.calls ?? 0;
const ledgerCount = (where: string) =>
  z.array(z.object({ n: z.number() })).parse(queryLocalD1(persistTo, `SELECT COUNT(*) AS n FROM ledger WHERE ${where}`))[0]?.n ?? 0;

let failures = 0;
const samples: Sample[] = [];
try {
  const schedule = await api("/v1/schedules", {
    method: "POST",
    body: JSON.stringify({
      name: "soak: every minute",
      cron: "* * * * *",
      spec: { name: "soak scheduled", model: SCHEDULED_MODEL, tasks: Array.from({ length: 20 }, (_, i) => ({ prompt: `scheduled ${i}` })) },
    }),
  });
  if (schedule.status !== 201) throw new Error(`could not save the soak schedule: ${schedule.status} ${await schedule.text()}`);
  const scheduleId = z.object({ id: z.string() }).parse(await schedule.json()).id;

  console.log(
    `soak: ${minutes} min, swarms of ${tasks} tasks at W=${concurrency}, ${latency} ms calls, faults ${JSON.stringify(RATES)}, a 20-task schedule every minute`,
  );
  // tasks/s: over the swarms' own wall time (the ledger checks between swarms do not count).
  // The heaps tell a leak in the Workers' JavaScript (the orchestrator's holds the SwarmRooms)
  // apart from workerd's native memory (RSS).
  const inspectorPorts = await findWorkerdInspectors(stack.sessionPids);
  // A heap read without its full GC (the isolate was idle: see readHeapUsage) is marked "*".
  const heapOf = async (worker: string): Promise<Heap | null> =>
    inspectorPorts.length === 0
      ? null
      : readHeapUsage(inspectorPorts, (id) => id === `core:user:${worker}`).then(
          (usage) => (usage[0] === undefined ? null : { mb: usage[0].usedMb, collected: usage[0].collected }),
          () => null,
        );
  console.log("minute  swarms  tasks/s  calls/task  workerd RSS  agent heap  orch. heap  node heap  invariants");
  const started = Date.now();
  const end = started + minutes * 60_000;
  let swarms = 0;
  let windowTasks = 0;
  let windowCalls = 0;
  let windowStart = started;
  /** Seconds the window's swarms ran (their wall time), so the checks between swarms do not count. */
  let windowSwarmS = 0;
  while (Date.now() < end) {
    const callsBefore = callsOf("mock-1");
    const spec = {
      name: `soak ${swarms + 1}`,
      model: "mock-1",
      tasks: Array.from({ length: tasks }, (_, i) => ({ prompt: `soak ${swarms + 1} task ${i}` })),
      limits: { concurrency, max_output_tokens: 32, timeout_s: 10 },
    };
    const { id } = await submitSwarm(stack.url, stack.token, spec);
    const status = await waitForSwarm(stack.url, stack.token, id, { timeoutMs: 600_000, pollMs: 200 });
    const results = await getAllResults(stack.url, stack.token, id);
    const calls = callsOf("mock-1") - callsBefore;
    // The ledger reaches D1 within a flush (1 s): wait for it, as an operator reading the bill would.
    let rows = ledgerCount(`swarm_id = '${id}'`);
    for (let i = 0; rows < calls && i < 20; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      rows = ledgerCount(`swarm_id = '${id}'`);
    }
    const open = results.filter((r) => !TERMINAL.has(String(r.state))).length;
    if (open > 0 || rows !== calls) {
      failures += 1;
      console.log(`  swarm ${id}: ${open} tasks open, ${rows} ledger rows for ${calls} upstream calls`);
    }
    swarms += 1;
    windowTasks += status.tasks;
    windowCalls += calls;
    windowSwarmS += status.wall_s;
    if (Date.now() - windowStart >= 60_000 || Date.now() >= end) {
      const seconds = Math.max(0.001, windowSwarmS);
      const workerd = usageOfDescendants(stack.sessionPids, "workerd").reduce((mb, p) => mb + p.rssMb, 0);
      const agentHeap = await heapOf("edgeswarm-agent");
      const orchestratorHeap = await heapOf("edgeswarm-orchestrator");
      const sample: Sample = {
        minute: Math.round((Date.now() - started) / 60_000),
        swarms,
        tasksPerS: windowTasks / seconds,
        callsPerTask: windowCalls / Math.max(1, windowTasks),
        workerdRssMb: workerd,
        agentHeap,
        orchestratorHeap,
        nodeHeapMb: process.memoryUsage().heapUsed / 2 ** 20,
      };
      samples.push(sample);
      console.log(
        `${String(sample.minute).padStart(6)}  ${String(swarms).padStart(6)}  ${sample.tasksPerS.toFixed(1).padStart(7)}  ${sample.callsPerTask.toFixed(2).padStart(10)}  ${`${sample.workerdRssMb.toFixed(0)} MB`.padStart(11)}  ${mb(sample.agentHeap).padStart(10)}  ${mb(sample.orchestratorHeap).padStart(10)}  ${`${sample.nodeHeapMb.toFixed(0)} MB`.padStart(9)}  ${failures === 0 ? "held" : `${failures} failed`}`,
      );
      windowStart = Date.now();
      windowTasks = 0;
      windowCalls = 0;
      windowSwarmS = 0;
    }
  }
  // The scheduled swarms: every one of their upstream calls on the bill too. Checked once they have
  // ended (a call still in flight has no ledger row yet): the schedule is deleted so no new one
  // starts, then each swarm it started is waited for, and then one ledger flush more.
  const deleted = await api(`/v1/schedules/${scheduleId}`, { method: "DELETE" });
  if (!deleted.ok) throw new Error(`could not delete the soak schedule: ${deleted.status} ${await deleted.text()}`);
  // A cron tick that read the schedule before it went may still start one: wait a tick and a second.
  await new Promise((resolve) => setTimeout(resolve, DEFAULT_CRON_EVERY_MS + 1_000));
  const scheduledIds = z
    .array(z.object({ id: z.string() }))
    .parse(queryLocalD1(persistTo, "SELECT id FROM swarms WHERE origin LIKE 'schedule:%'"))
    .map((row) => row.id);
  for (const id of scheduledIds) await waitForSwarm(stack.url, stack.token, id, { timeoutMs: 120_000 });
  await new Promise((resolve) => setTimeout(resolve, 3_000));
  const scheduledCalls = callsOf(SCHEDULED_MODEL);
  const scheduledRows = ledgerCount(`model = '${SCHEDULED_MODEL}'`);
  const scheduledSwarms =
    z.array(z.object({ n: z.number() })).parse(queryLocalD1(persistTo, "SELECT COUNT(*) AS n FROM swarms WHERE origin LIKE 'schedule:%'"))[0]?.n ?? 0;
  console.log(`scheduled swarms started: ${scheduledSwarms}; their ledger rows ${scheduledRows}, upstream calls ${scheduledCalls}`);
  if (scheduledRows < scheduledCalls) failures += 1;

  const pick = (i: number) => samples[Math.min(samples.length - 1, Math.max(0, i))];
  const [first, middle, last] = [pick(0), pick(Math.floor((samples.length - 1) / 2)), pick(samples.length - 1)];
  if (first && middle && last) {
    console.log("\n            first     middle    last");
    console.log(`tasks/s     ${first.tasksPerS.toFixed(1).padEnd(9)} ${middle.tasksPerS.toFixed(1).padEnd(9)} ${last.tasksPerS.toFixed(1)}`);
    console.log(`workerd MB  ${first.workerdRssMb.toFixed(0).padEnd(9)} ${middle.workerdRssMb.toFixed(0).padEnd(9)} ${last.workerdRssMb.toFixed(0)}`);
    const heap = (value: Heap | null) => mb(value).replace(" MB", "");
    console.log(`agent heap  ${heap(first.agentHeap).padEnd(9)} ${heap(middle.agentHeap).padEnd(9)} ${heap(last.agentHeap)}`);
    console.log(`orch. heap  ${heap(first.orchestratorHeap).padEnd(9)} ${heap(middle.orchestratorHeap).padEnd(9)} ${heap(last.orchestratorHeap)}`);
    console.log(`(minutes    ${String(first.minute).padEnd(9)} ${String(middle.minute).padEnd(9)} ${last.minute})`);
  }
  console.log(failures === 0 ? "every invariant held" : `${failures} invariant check(s) failed`);
} finally {
  await stack.stop();
  await mock.close();
}
process.exit(failures === 0 ? 0 : 1);
