// `npm run bench:room -- [--tasks 1000,10000] [--window 100] [--lanes 1]`: what the SwarmRoom alone
// costs per task, without a model or an agent loop. A driver Worker (scripts/room-bench/) plays the
// lanes — pull, report each granted task succeeded with one call at once, pull again — against the
// real SwarmRoom in `wrangler dev`, and workerd's CPU time is read from /proc around each swarm. If
// an RPC cost O(swarm) instead of O(tasks it touches), CPU per task would grow with the swarm.
// Figures only, no pass/fail.
import { rm } from "node:fs/promises";
import { Option } from "commander";
import path from "node:path";
import { z } from "zod";
import { LimitsSchema } from "../src/core/spec-schema.ts";
import { readIntOption } from "./lib/int-option.ts";
import { ROOT, STACK_ENVIRONMENT, generateToken, startStack } from "./lib/local-stack.ts";
import { newProgram, parseOrExit } from "./lib/parse-options.ts";
import { usageOfDescendants } from "./lib/process-tree.ts";
import { scratchStateDir } from "./lib/scratch-state.ts";

const program = newProgram("npm run bench:room --")
  .description(
    `What the SwarmRoom alone costs per task (workerd CPU), without a model or an agent loop: a driver Worker plays the lanes (docs/benchmarks.md). Environment: ${STACK_ENVIRONMENT}.`,
  )
  .option("--tasks <sizes>", "the swarms' sizes, comma-separated, one swarm each (each 1-10,000)", "1000,10000")
  .option("--window <w>", "the window W (1-1,500)", "100")
  .option("--lanes <n>", "lanes the driver plays, each with W/lanes slots (1-100)", "1")
  .addOption(
    new Option(
      "--lane-shape <shape>",
      "plain: anonymous lanes that report what they got in the next pull; executor: lanes as the agent's executors pull (named, so grants note their calls; standby tasks promoted in ended ones' places; started calls listed)",
    )
      .choices(["plain", "executor"])
      .default("plain"),
  );
parseOrExit(program);
const values = program.opts<{ tasks: string; window: string; lanes: string; laneShape: "plain" | "executor" }>();
const sizes = values.tasks.split(",").map((text) => readIntOption("tasks", text.trim(), 1, 10_000));
const window = readIntOption("window", values.window, 1, 1_500);
const lanes = readIntOption("lanes", values.lanes, 1, 100);
const slots = Math.ceil(window / lanes);

const StatusSchema = z.looseObject({
  counts: z.looseObject({ succeeded: z.number() }),
  billable: z.looseObject({ do_requests: z.number(), do_rows_written: z.number(), d1_rows_written: z.number() }),
});

// On a tmpfs when there is one, as `npm run bench` (lib/scratch-state.ts says why).
const persistTo = scratchStateDir("room-bench", path.join(ROOT, ".tmp", "room-bench-state")).dir;
await rm(persistTo, { recursive: true, force: true });
console.log(
  `bench:room: window=${window} lanes=${lanes} (slots ${slots} each, ${values.laneShape}); the SwarmRoom alone: no model, no agent loop (local wrangler dev)`,
);
const stack = await startStack({
  port: 0,
  apiToken: generateToken(),
  persistTo,
  configs: ["scripts/room-bench/wrangler.toml", "wrangler.toml"],
  log: "capture",
});
try {
  for (const tasks of sizes) {
    const swarmId = `sw_roombench${Date.now().toString(36)}${tasks}`;
    const start = {
      swarmId,
      tenant: "tk_roombench",
      spec: { name: `room bench ${tasks}`, model: "mock-1", limits: LimitsSchema.parse({ concurrency: window, max_attempts: 3 }) },
      tasks: Array.from({ length: tasks }, (_, i) => ({ id: `t${String(i + 1).padStart(5, "0")}`, prompt: `room bench task ${i + 1}` })),
      createdAt: Date.now(),
      origin: { kind: "api" },
    };
    const cpu = () => usageOfDescendants(stack.sessionPids, "workerd").reduce((sum, p) => sum + p.cpuMs, 0);
    const before = cpu();
    const startedAt = performance.now();
    const response = await fetch(`${stack.url}/run`, { method: "POST", body: JSON.stringify({ start, lanes, slots, shape: values.laneShape }) });
    if (!response.ok) throw new Error(`driver answered ${response.status}: ${await response.text()}\n${stack.output()}`);
    const status = StatusSchema.parse(await response.json());
    const wallMs = performance.now() - startedAt;
    const cpuMs = cpu() - before;
    console.log(
      [
        `tasks=${tasks}`,
        `succeeded=${status.counts.succeeded}`,
        `wall=${(wallMs / 1_000).toFixed(2)} s`,
        `workerd_cpu=${cpuMs.toFixed(0)} ms`,
        `cpu/task=${(cpuMs / tasks).toFixed(3)} ms`,
        `do_requests/task=${(status.billable.do_requests / tasks).toFixed(3)}`,
        `do_rows/task=${(status.billable.do_rows_written / tasks).toFixed(2)}`,
      ].join(" "),
    );
  }
} finally {
  await stack.stop();
  await rm(persistTo, { recursive: true, force: true });
}
