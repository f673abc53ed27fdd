// `npm run economics`: the money side, end to end on the local stack against the mock model.
// 1. A swarm with a weighted mix (default 60/30/10 over deepseek-v3.2, kimi-k2.5, claude-sonnet-4.5,
//    each answering in its vendor's usage shape) through one gateway upstream with two keys of
//    --rpm RPM each: upstream 429s, the usage report per model against the mock's own counts, and
//    the cost against the price computed by hand from those counts.
// 2. A swarm with a USD budget: it must stop at or under it, with skipped_budget tasks recorded.
// Figures and checks, no pass/fail exit code beyond "it ran".
import { rm } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { DEFAULT_PRICES } from "../src/core/pricing.ts";
import { ROOT, STACK_ENVIRONMENT, generateToken, startStack } from "./lib/local-stack.ts";
import { newProgram, parseOrExit } from "./lib/parse-options.ts";
import { getAllResults, submitSwarm, waitForSwarm } from "./lib/swarm-client.ts";

const program = newProgram("npm run economics --")
  .description(
    `The money side end to end on the local stack: a weighted model mix through one gateway upstream of two rate-limited keys, then a swarm with a USD budget (docs/operations.md). Environment: EDGESWARM_VERBOSE (wrangler's own output), ${STACK_ENVIRONMENT}.`,
  )
  .option("--tasks <n>", "tasks of the mixed swarm", "1000")
  .option("--rpm <n>", "requests per minute of each of the upstream's two keys", "300")
  .option("--concurrency <w>", "the window W of the mixed swarm", "100")
  .option("--latency <ms>", "the mock model's latency", "150")
  .option("--budget-usd <usd>", "budget.max_usd of the budgeted swarm", "0.004");
parseOrExit(program);
const values = program.opts<{ tasks: string; rpm: string; concurrency: string; latency: string; budgetUsd: string }>();
/** A positive number, or exit 2 naming the option. */
function readPositive(name: string, raw: string): number {
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) {
    console.error(`--${name} must be a positive number, got "${raw}"`);
    process.exit(2);
  }
  return n;
}
const tasks = readPositive("tasks", values.tasks);
const rpm = readPositive("rpm", values.rpm);
const concurrency = readPositive("concurrency", values.concurrency);
const latency = readPositive("latency", values.latency);
const budgetUsd = readPositive("budget-usd", values.budgetUsd);

const MIX = [
  { model: "deepseek-v3.2", weight: 60 },
  { model: "kimi-k2.5", weight: 30 },
  { model: "claude-sonnet-4.5", weight: 10 },
];
const gateway = {
  upstreams: {
    mock: {
      base_url: "{{MOCK_URL}}",
      keys: [
        { id: "mock-key-a", rpm },
        { id: "mock-key-b", rpm },
      ],
    },
  },
  models: Object.fromEntries(MIX.map(({ model }) => [model, { upstream: "mock", tier: model === "claude-sonnet-4.5" ? "premium" : "economy" }])),
};

const persistTo = path.join(ROOT, ".tmp", "economics-state");
await rm(persistTo, { recursive: true, force: true });
console.log(`economics: ${tasks} tasks, mix ${MIX.map((m) => `${m.model}:${m.weight}`).join(" ")}, 2 keys × ${rpm} RPM, W=${concurrency}, mock ${latency} ms`);
const stack = await startStack({
  port: 0,
  apiToken: generateToken(),
  persistTo,
  log: process.env.EDGESWARM_VERBOSE ? "inherit" : "capture",
  mock: {
    latency,
    rpm_per_key: rpm,
    cached_share: 0.25,
    usage_shape_by_model: { "deepseek-v3.2": "deepseek", "kimi-k2.5": "kimi", "claude-sonnet-4.5": "anthropic" },
  },
  gatewayConfig: JSON.stringify(gateway),
  upstreamKeys: { "mock-key-a": "sk-mock-a", "mock-key-b": "sk-mock-b" },
});

const TokensSchema = z.looseObject({
  calls: z.number(),
  prompt_tokens: z.number(),
  cached_tokens: z.number(),
  completion_tokens: z.number(),
  total_tokens: z.number(),
});
const UsageReportSchema = z.looseObject({
  rows: z.array(
    z.looseObject({
      key: z.string(),
      calls: z.number(),
      prompt_tokens: z.number().nullable(),
      cached_tokens: z.number().nullable(),
      completion_tokens: z.number().nullable(),
      total_tokens: z.number().nullable(),
      cost_usd: z.number().nullable(),
    }),
  ),
});

try {
  const started = Date.now();
  const { id } = await submitSwarm(stack.url, stack.token, {
    name: "economics: 60/30/10 mix",
    model: MIX,
    tasks: Array.from({ length: tasks }, (_, i) => ({ id: `e${String(i + 1).padStart(5, "0")}`, prompt: `Extract the entities of document ${i + 1}.` })),
    limits: { concurrency, max_output_tokens: 48, timeout_s: 30, max_attempts: 6 },
  });
  const status = await waitForSwarm(stack.url, stack.token, id, { timeoutMs: 1_800_000, pollMs: 1_000 });
  const wallS = (Date.now() - started) / 1000;
  const upstream = stack.mock?.stats();
  const seen429 = upstream?.by_status["429"] ?? 0;

  // The ledger reaches D1 in batched flushes: wait until the report holds every call.
  const report = async () => {
    const response = await fetch(`${stack.url}/v1/usage?group_by=model&from=${new Date(started - 60_000).toISOString()}`, {
      headers: { authorization: `Bearer ${stack.token}` },
    });
    return UsageReportSchema.parse(await response.json());
  };
  let usage = await report();
  for (let i = 0; i < 30 && usage.rows.reduce((n, r) => n + r.calls, 0) < status.usage.calls; i += 1) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    usage = await report();
  }

  console.log(`\nswarm ${id}: ${status.state}, ${status.counts.succeeded}/${tasks} ok, wall ${wallS.toFixed(1)} s, upstream 429s: ${seen429}`);
  console.log("model               share   calls  prompt  cached  completion   total   report cost   hand cost     match");
  let handTotal = 0;
  let allMatch = true;
  for (const { model } of MIX) {
    const mock = TokensSchema.parse(upstream?.by_model[model]);
    const row = usage.rows.find((r) => r.key === model);
    const price = DEFAULT_PRICES[model];
    if (price === undefined) throw new Error(`no default price for ${model}`);
    const hand =
      ((mock.prompt_tokens - mock.cached_tokens) * price.input + mock.cached_tokens * price.cached_input + mock.completion_tokens * price.output) / 1e6;
    handTotal += hand;
    const match =
      row !== undefined &&
      row.calls === mock.calls &&
      row.prompt_tokens === mock.prompt_tokens &&
      row.cached_tokens === mock.cached_tokens &&
      row.completion_tokens === mock.completion_tokens &&
      row.total_tokens === mock.total_tokens &&
      Math.abs((row.cost_usd ?? -1) - hand) < 1e-12;
    allMatch &&= match;
    console.log(
      [
        model.padEnd(18),
        `${((100 * mock.calls) / Math.max(1, upstream?.calls ?? 1)).toFixed(1)}%`.padStart(6),
        String(mock.calls).padStart(7),
        String(mock.prompt_tokens).padStart(7),
        String(mock.cached_tokens).padStart(7),
        String(mock.completion_tokens).padStart(11),
        String(mock.total_tokens).padStart(7),
        `$${(row?.cost_usd ?? Number.NaN).toFixed(9)}`.padStart(13),
        `$${hand.toFixed(9)}`.padStart(11),
        match ? "    yes" : "    NO",
      ].join(" "),
    );
  }
  console.log(
    `swarm cost_usd $${status.cost_usd.toFixed(9)} vs hand-computed $${handTotal.toFixed(9)}: ${Math.abs(status.cost_usd - handTotal) < 1e-9 ? "equal" : "DIFFERENT"}`,
  );
  console.log(`checks: upstream 429s = ${seen429}; usage report = mock counts per model: ${allMatch ? "yes" : "NO"}`);

  // 2. A budget stops a swarm at or under it.
  const budgeted = await submitSwarm(stack.url, stack.token, {
    name: "economics: budget",
    model: "claude-sonnet-4.5",
    tasks: Array.from({ length: 200 }, (_, i) => ({ prompt: `Summarize section ${i + 1} of the annual report.` })),
    limits: { concurrency: 20, max_output_tokens: 64, timeout_s: 30 },
    budget: { max_usd: budgetUsd },
  });
  const end = await waitForSwarm(stack.url, stack.token, budgeted.id, { timeoutMs: 600_000, pollMs: 500 });
  const results = await getAllResults(stack.url, stack.token, budgeted.id);
  const skipped = results.filter((r) => r.state === "skipped_budget").length;
  console.log(
    `\nbudget swarm ${budgeted.id}: ${end.state}; budget $${budgetUsd}, spent $${end.cost_usd.toFixed(6)} (${end.cost_usd <= budgetUsd ? "at or under" : "OVER"}); ` +
      `${end.counts.succeeded} succeeded, ${skipped} skipped_budget; reason: ${String(end.reason ?? "")}`,
  );
} finally {
  await stack.stop();
}
