// `npm run bench:dashboard [-- --screenshots]`: on the local stack (wrangler dev + the mock model),
// measures (1) the live events a client receives from a 1,000-task swarm, per second and by type,
// and (2) the time to render the swarm page of a 10,000-task swarm in Debian's chromium, from
// navigation to the grid's first full draw (the median of 5 loads). With --screenshots it saves
// the list, the 10,000-task page and a failed task's transcript into docs/screenshots/.
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { createClient } from "../src/client/index.ts";
import { launchChromium } from "../test/browser/chromium.ts";
import { readIntOption } from "./lib/int-option.ts";
import { generateToken, ROOT, STACK_ENVIRONMENT, startStack } from "./lib/local-stack.ts";
import { newProgram, parseOrExit } from "./lib/parse-options.ts";
import { waitForSwarm } from "./lib/swarm-client.ts";

const program = newProgram("npm run bench:dashboard --")
  .description(
    `On the local stack: the live events a client receives from a 1,000-task swarm, and the time to render a 10,000-task swarm's page in chromium (docs/testing.md). Environment: ${STACK_ENVIRONMENT}.`,
  )
  .option("--screenshots", "save the list, the 10,000-task page and a failed task's transcript into docs/screenshots/")
  .option("--loads <n>", "page loads of the 10,000-task swarm, of which the median is printed (1-100)", "5");
parseOrExit(program);
const values = program.opts<{ screenshots?: boolean; loads: string }>();
const loads = readIntOption("loads", values.loads, 1, 100);
const shotsDir = path.join(ROOT, "docs", "screenshots");
const persistTo = path.join(ROOT, ".tmp", "bench-dashboard-state");

const spec = (name: string, n: number, attempts = 3) => ({
  name,
  model: "mock-1",
  tasks: Array.from({ length: n }, (_, i) => ({ id: `task-${String(i + 1).padStart(5, "0")}`, prompt: `Review item ${i + 1}.` })),
  limits: { concurrency: 500, max_output_tokens: 32, timeout_s: 30, max_attempts: attempts },
});

console.log("bench:dashboard: starting the local stack …");
const stack = await startStack({ port: 0, apiToken: generateToken(), mock: { latency: { dist: "normal", mean: 200, stddev: 40 } }, persistTo, log: "capture" });
const client = createClient({ baseUrl: stack.url, token: stack.token });
try {
  // (1) Events a client receives from a 1,000-task swarm, slowed (1 s calls, 100 at a time) so the
  // stream runs ~10 s in its steady state rather than ending within a push interval or two.
  stack.mock?.setScenario({ latency: { dist: "normal", mean: 1_000, stddev: 200 }, seed: 2 });
  const { id: thousand } = await client.createSwarm({ ...spec("bench: 1,000 tasks", 1_000), limits: { ...spec("", 0).limits, concurrency: 100 } });
  const byType: Record<string, number> = {};
  let taskChanges = 0;
  let first = 0;
  let last = 0;
  for await (const event of client.watch(thousand)) {
    const now = performance.now();
    if (first === 0) first = now;
    last = now;
    byType[event.type] = (byType[event.type] ?? 0) + 1;
    if (event.type === "tasks") taskChanges += event.data.tasks.length;
  }
  const events = Object.values(byType).reduce((a, b) => a + b, 0);
  const seconds = (last - first) / 1_000;
  const status = await client.getSwarm(thousand);
  console.log(
    `events from a 1,000-task swarm: ${events} events in ${seconds.toFixed(2)} s = ${(events / seconds).toFixed(1)} events/s (${JSON.stringify(byType)}), carrying ${taskChanges} task changes (${(taskChanges / seconds).toFixed(0)}/s); swarm wall ${status.wall_s.toFixed(2)} s`,
  );

  stack.mock?.setScenario({ latency: { dist: "normal", mean: 200, stddev: 40 }, seed: 1 });
  // (2) The swarm page of a 10,000-task swarm.
  const { id: big } = await client.createSwarm(spec("bench: 10,000 tasks", 10_000));
  await waitForSwarm(stack.url, stack.token, big, { timeoutMs: 900_000, pollMs: 1_000 });
  const browser = await launchChromium();
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  await page.goto(`${stack.url}/#token=${encodeURIComponent(stack.token)}`);
  const times: number[] = [];
  for (let i = 0; i < loads; i += 1) {
    await page.goto(`${stack.url}/#/swarms/${big}`);
    await page.reload();
    await page.waitForFunction(() => performance.getEntriesByName("edgeswarm:grid-drawn").length > 0, undefined, { timeout: 60_000 });
    times.push(await page.evaluate(() => performance.getEntriesByName("edgeswarm:grid-drawn")[0]?.startTime ?? Number.NaN));
  }
  times.sort((a, b) => a - b);
  const median = times[Math.floor(times.length / 2)] ?? Number.NaN;
  console.log(
    `10,000-task swarm page: first full grid draw ${median.toFixed(0)} ms after navigation (median of ${loads}: ${times.map((t) => t.toFixed(0)).join(", ")} ms)`,
  );

  if (values.screenshots) {
    await mkdir(shotsDir, { recursive: true });
    await page.waitForSelector("[data-testid=answer]");
    await page.screenshot({ path: path.join(shotsDir, "swarm-10000.png"), fullPage: false });
  }
  // One full redraw of the 10,000 cells, as a `tasks` event causes it.
  const redrawMs = await page.evaluate(async () => {
    const grid = (window as unknown as { edgeswarmGrid: { update(c: [string, string][]): void; draws: number } }).edgeswarmGrid;
    const before = grid.draws;
    const t0 = performance.now();
    grid.update([["task-00001", "running"]]);
    await new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
    return grid.draws > before ? performance.now() - t0 : Number.NaN;
  });
  console.log(`one live redraw of the 10,000 cells: ≤ ${redrawMs.toFixed(1)} ms (two frames)`);
  if (values.screenshots) {
    // A swarm with failures, for the list and a transcript.
    stack.mock?.setScenario({ latency: { dist: "normal", mean: 200, stddev: 40 }, rates: { "400": 0.2 }, seed: 3 });
    const { id: mixed } = await client.createSwarm({ ...spec("code review: 60 files", 60, 1), system: "You are a terse senior reviewer." });
    await waitForSwarm(stack.url, stack.token, mixed, { timeoutMs: 120_000 });
    stack.mock?.setScenario({ latency: { dist: "normal", mean: 200, stddev: 40 }, seed: 4 });
    await page.goto(`${stack.url}/#/`);
    await page.waitForSelector("tr[data-swarm]");
    await page.screenshot({ path: path.join(shotsDir, "swarm-list.png") });
    let failedTask: string | null = null;
    for await (const result of client.results(mixed)) if (result.state === "failed" && failedTask === null) failedTask = result.task_id;
    if (failedTask !== null) {
      await page.goto(`${stack.url}/#/swarms/${mixed}/tasks/${failedTask}`);
      await page.waitForSelector("[data-testid=task-error]");
      await page.screenshot({ path: path.join(shotsDir, "task-transcript.png") });
    }
    await page.goto(`${stack.url}/#/swarms/${mixed}`);
    await page.waitForSelector("[data-testid=answer]");
    await page.screenshot({ path: path.join(shotsDir, "swarm-page.png"), fullPage: true });
    await page.emulateMedia({ colorScheme: "dark" });
    await page.screenshot({ path: path.join(shotsDir, "swarm-page-dark.png") });
    console.log(`screenshots: ${path.relative(ROOT, shotsDir)}/`);
  }
  await browser.close();
} finally {
  await stack.stop();
}
