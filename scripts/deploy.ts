// `npm run deploy`: both Workers to a Cloudflare account (CLOUDFLARE_API_TOKEN, CLOUDFLARE_ACCOUNT_ID),
// or with --dry-run, offline and with no account, the checks and the plan: the configs, each
// Worker's bundle size and startup CPU against the limits, the resources and secrets a deploy needs
// and the commands it would run. The plan is lib/deploy-plan.ts; this file runs wrangler.
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { newProgram, parseOrExit } from "./lib/parse-options.ts";
import { z } from "zod";
import { toDeployConfig } from "./lib/deploy-config.ts";
import { reportLimits, type WorkerMeasurement } from "./lib/deploy-limits.ts";
import { measureWorker } from "./lib/deploy-measure.ts";
import { type ConfigProblem, type DeployPlan, formatCommand, type KnownState, planDeploy, validateConfigs, type WorkerConfig } from "./lib/deploy-plan.ts";
import {
  parseD1List,
  parseDeployedUrl,
  parseR2BucketNames,
  parseSecretList,
  ROOT,
  readWorkerConfig,
  readWorkerdCompatibilityDate,
  runWrangler,
  toQueueExists,
} from "./lib/deploy-wrangler.ts";
import { buildDashboard } from "./lib/local-stack.ts";
import { submitSwarm, waitForSwarm } from "./lib/swarm-client.ts";

/** The Workers' configs; the plan reads everything else from them. */
const CONFIGS = ["wrangler.toml", "workers/agent/wrangler.toml"];
/** The user's deploy record and generated configs: gitignored, never committed. */
const DEPLOY_DIR = path.join(ROOT, ".deploy");
const RECORD_PATH = path.join(DEPLOY_DIR, "edgeswarm.deploy.json");
const deployConfigOf = (worker: string): string => path.join(".deploy", `${worker}.wrangler.json`);
/** Secrets the deploy may make up itself, and only with --generate-secrets: random tokens, no outside meaning. */
const GENERATED_SECRETS: Record<string, () => string> = {
  API_TOKENS: () => `es_admin_${randomBytes(24).toString("base64url")}`,
  WEBHOOK_SECRET: () => randomBytes(32).toString("hex"),
  SECRETS_KEY: () => randomBytes(32).toString("hex"),
};

const RecordSchema = z.object({
  account_id: z.string(),
  d1: z.record(z.string(), z.string()),
  queues: z.array(z.string()),
  r2_buckets: z.array(z.string()),
  workers: z.record(z.string(), z.object({ url: z.string().nullable() })),
  updated_at: z.string(),
});
type DeployRecord = z.infer<typeof RecordSchema>;

const program = newProgram("npm run deploy --")
  .description("Deploy both Workers (docs/deploy.md). --dry-run checks and plans offline, with no account.")
  .option("--dry-run", "offline, no account: validate the configs, bundle and profile both Workers, list resources, secrets and commands")
  .option("--secrets-file <path>", "a .env or JSON file of secret values, uploaded with each Worker that requires them (wrangler deploy --secrets-file)")
  .option("--generate-secrets", "make up API_TOKENS and WEBHOOK_SECRET when no Worker has them yet, and print them once")
  .option("--url <url>", "the orchestrator's API URL for the smoke swarm (default: its workers.dev URL)")
  .option("--smoke-token <token>", "a bearer token for the smoke swarm (default: EDGESWARM_API_TOKEN, or the API_TOKENS given)")
  .option("--smoke-model <model>", "the model of the smoke swarm's 3 tasks", "gpt-4o-mini")
  .option("--no-smoke", "skip the smoke swarm");
parseOrExit(program);
const options = program.opts<{
  dryRun?: boolean;
  secretsFile?: string;
  generateSecrets?: boolean;
  url?: string;
  smokeToken?: string;
  smokeModel: string;
  smoke: boolean;
}>();

const say = (line = ""): void => void process.stdout.write(`${line}\n`);
const fail = (message: string): never => {
  process.stderr.write(`${message}\n`);
  process.exit(1);
};

if (!options.dryRun && (!process.env.CLOUDFLARE_API_TOKEN || !process.env.CLOUDFLARE_ACCOUNT_ID)) {
  fail("npm run deploy needs CLOUDFLARE_API_TOKEN and CLOUDFLARE_ACCOUNT_ID in the environment (or --dry-run, which needs no account).");
}

const workerd = readWorkerdCompatibilityDate();
say(
  `npm run deploy${options.dryRun ? " -- --dry-run: offline, no account" : `: account ${process.env.CLOUDFLARE_ACCOUNT_ID}`} (workerd ${workerd.version}, compatibility dates up to ${workerd.date})`,
);

// 1. The configs, as wrangler reads them, then what the engine relies on across them.
say("\nConfigs");
const read = await Promise.all(CONFIGS.map((config) => readWorkerConfig(config)));
const workers: WorkerConfig[] = [];
const raws = new Map<string, Record<string, unknown>>();
for (const result of read) {
  if (!result.ok) say(`  ${result.file}: ${result.message.replaceAll("\n", "\n    ")}`);
  else {
    workers.push(result.config);
    raws.set(result.config.configPath, result.raw);
  }
}
if (workers.length < read.length) fail("\nFix the configs above first.");
const problems = validateConfigs(workers, { workerdCompatibilityDate: workerd.date });
for (const worker of workers) {
  const own = problems.filter((p) => p.file === worker.configPath);
  say(`  ${worker.configPath} (${worker.name}): ${own.some((p) => p.severity === "error") ? "INVALID" : "ok"}`);
  for (const p of own) say(`    ${formatProblem(p)}`);
}
if (problems.some((p) => p.severity === "error")) fail("\nFix the configs above first.");

// 2. What exists: offline only what the local record lists; with an account, the account's answer.
const record = readRecord();
const supplied = readSuppliedSecrets(options.secretsFile);
const known = options.dryRun ? knownFromRecord(record) : await askAccount(workers);
const generated = options.generateSecrets ? generateSecrets(workers, known, supplied) : new Map<string, string>();
for (const [name, value] of generated) supplied.set(name, value);
const plan = planDeploy({ workers, known, suppliedSecrets: new Set(supplied.keys()), deployConfigOf });

// 3. Bundles and startup, from the deploy's own copies of the configs (offline: in a temporary folder).
// Inside the repository (.tmp/, gitignored) at the depth of .deploy/, so the bundles' path comments are as long as a deploy's.
mkdirSync(path.join(ROOT, ".tmp"), { recursive: true });
const workDir = mkdtempSync(path.join(ROOT, ".tmp", "deploy-"));
try {
  say("\nBundles and startup (wrangler deploy --dry-run, wrangler check startup: offline)");
  buildDashboard();
  const configDir = options.dryRun ? workDir : DEPLOY_DIR;
  const d1Ids = new Map(plan.resources.flatMap((r) => (r.kind === "D1 database" ? [[r.name, r.id ?? committedD1Id(workers, r.name)] as const] : [])));
  const configPaths = writeDeployConfigs(workers, raws, configDir, d1Ids);
  const measurements: WorkerMeasurement[] = [];
  for (const worker of plan.workerOrder) measurements.push(await measureWorker(worker, configPaths.get(worker) ?? "", workDir));
  const reports = measurements.map(reportLimits);
  for (const report of reports) for (const line of report.lines) say(`  ${line}`);
  const overLimit = reports.some((r) => r.size === "over" || r.startup === "over");

  printPlan(plan, known.source);
  if (options.dryRun) {
    if (overLimit) fail("\nA Worker is over a platform limit (above): a deploy would fail.");
    say("\nDry run: nothing was created or deployed.");
    process.exit(0);
  }
  if (overLimit) fail("\nA Worker is over a platform limit (above): not deploying.");
  if (plan.blockers.length > 0) fail(`\nNot deploying: secrets are missing.\n${plan.blockers.map((b) => `  ${b}`).join("\n")}`);
  if (generated.size > 0) {
    say("\nGenerated secrets (shown once: keep them; they are uploaded with the deploy):");
    for (const [name, value] of generated) say(`  ${name}=${value}`);
  }
  await deploy(plan, supplied, record);
} finally {
  rmSync(workDir, { recursive: true, force: true });
}

function formatProblem(p: ConfigProblem): string {
  return `${p.severity === "error" ? "error" : "warning"}: ${p.file}: ${p.key}: ${p.message}`;
}

function readRecord(): DeployRecord | null {
  if (!existsSync(RECORD_PATH)) return null;
  const parsed = RecordSchema.safeParse(JSON.parse(readFileSync(RECORD_PATH, "utf8")));
  if (!parsed.success) fail(`${path.relative(ROOT, RECORD_PATH)} is not a deploy record: ${parsed.error.message}`);
  return parsed.data ?? null;
}

function knownFromRecord(record: DeployRecord | null): KnownState {
  return {
    source: "offline",
    d1: new Map(Object.entries(record?.d1 ?? {})),
    queues: new Set(record?.queues ?? []),
    r2Buckets: new Set(record?.r2_buckets ?? []),
    secrets: new Map(),
  };
}

/** The D1 id in the committed config: the local development database's, a stand-in for a dry run's bundles only. */
function committedD1Id(workers: readonly WorkerConfig[], name: string): string {
  const id = workers.flatMap((w) => w.d1_databases).find((db) => db.database_name === name)?.database_id;
  return id ?? "00000000-0000-0000-0000-000000000000";
}

async function askAccount(workers: readonly WorkerConfig[]): Promise<KnownState> {
  const d1List = await runWrangler(["d1", "list", "--json"]);
  if (d1List.code !== 0) fail(`wrangler d1 list failed:\n${d1List.stdout}${d1List.stderr}`);
  const queueNames = [...new Set(workers.flatMap((w) => [...(w.queues.producers ?? []), ...(w.queues.consumers ?? [])].map((q) => q.queue)))];
  const deadLetters = workers.flatMap((w) => (w.queues.consumers ?? []).flatMap((c) => (c.dead_letter_queue ? [c.dead_letter_queue] : [])));
  const queues = new Set<string>();
  for (const name of new Set([...queueNames, ...deadLetters])) if (toQueueExists(await runWrangler(["queues", "info", name]), name)) queues.add(name);
  let r2Buckets = new Set<string>();
  if (workers.some((w) => w.r2_buckets.length > 0)) {
    const listed = await runWrangler(["r2", "bucket", "list"]);
    if (listed.code !== 0) fail(`wrangler r2 bucket list failed:\n${listed.stdout}${listed.stderr}`);
    r2Buckets = parseR2BucketNames(listed.stdout);
  }
  const secrets = new Map<string, ReadonlySet<string>>();
  for (const worker of workers) {
    const set = parseSecretList(await runWrangler(["secret", "list", "--format", "json", "-c", worker.configPath]));
    if (set !== null && worker.name) secrets.set(worker.name, set);
  }
  return { source: "account", d1: parseD1List(d1List.stdout), queues, r2Buckets, secrets };
}

/** A .env (NAME=value a line) or JSON object of secret values. */
function readSuppliedSecrets(file: string | undefined): Map<string, string> {
  if (file === undefined) return new Map();
  const text = readFileSync(path.resolve(file), "utf8");
  if (text.trimStart().startsWith("{")) return new Map(Object.entries(z.record(z.string(), z.string()).parse(JSON.parse(text))));
  const values = new Map<string, string>();
  for (const line of text.split("\n")) {
    const match = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$/.exec(line);
    if (match?.[1] === undefined || line.trimStart().startsWith("#")) continue;
    values.set(match[1], (match[2] ?? "").replace(/^(["'])(.*)\1$/, "$2"));
  }
  return values;
}

/**
 * Values for the generatable secrets that no Worker has yet and the file does not give. One set
 * on some Workers but not others is left alone: WEBHOOK_SECRET must be the same on both.
 */
function generateSecrets(workers: readonly WorkerConfig[], known: KnownState, given: ReadonlyMap<string, string>): Map<string, string> {
  const generated = new Map<string, string>();
  for (const [name, make] of Object.entries(GENERATED_SECRETS)) {
    const needing = workers.filter((w) => w.secrets?.required?.includes(name));
    if (needing.length === 0 || given.has(name)) continue;
    if (needing.every((w) => !known.secrets.get(w.name ?? "")?.has(name))) generated.set(name, make());
  }
  return generated;
}

function writeDeployConfigs(
  workers: readonly WorkerConfig[],
  raw: ReadonlyMap<string, Record<string, unknown>>,
  dir: string,
  d1Ids: ReadonlyMap<string, string>,
) {
  mkdirSync(dir, { recursive: true });
  const paths = new Map<string, string>();
  for (const worker of workers) {
    const name = worker.name ?? "";
    const file = path.join(dir, `${name}.wrangler.json`);
    const config = toDeployConfig(raw.get(worker.configPath) ?? {}, path.dirname(path.resolve(ROOT, worker.configPath)), dir, d1Ids);
    writeFileSync(file, `${JSON.stringify(config, null, 2)}\n`);
    paths.set(name, path.relative(ROOT, file));
  }
  return paths;
}

function printPlan(plan: DeployPlan, source: KnownState["source"]): void {
  say(
    source === "offline"
      ? `\nResources (offline: what the account holds is unknown, so each is "would ensure" unless ${path.relative(ROOT, RECORD_PATH)} records it)`
      : "\nResources (as the account lists them)",
  );
  const width = Math.max(...plan.resources.map((r) => r.name.length));
  for (const r of plan.resources) {
    const state = r.presence === "exists" ? `exists${r.id ? ` (${r.id})` : ""}` : `${r.presence}: ${formatCommand(r.create)}`;
    say(`  ${r.kind.padEnd(11)}  ${r.name.padEnd(width)}  ${state}`);
    say(`  ${"".padEnd(11)}  ${"".padEnd(width)}  used by ${r.usedBy.join("; ")}`);
  }
  say("\nDurable Object classes (created by their host's deploy, from its [[migrations]])");
  for (const d of plan.durableObjects) {
    say(`  ${d.className} in ${d.host} (migration ${d.migrationTags.join(", ")}), bound by ${d.boundBy.join("; ") || "nobody"}`);
  }
  say(
    source === "offline"
      ? "\nSecrets ([secrets] required; offline, which are set is unknown: `npx wrangler secret list -c <config>` tells)"
      : "\nSecrets ([secrets] required)",
  );
  for (const s of plan.secrets) {
    say(`  ${s.worker.padEnd(24)} ${s.name.padEnd(16)} ${s.status === "set" || s.status === "supplied" ? s.status : `${s.status}: ${formatCommand(s.put)}`}`);
  }
  say(`\nDeploy steps${source === "offline" ? " (npm run deploy, given CLOUDFLARE_API_TOKEN and CLOUDFLARE_ACCOUNT_ID)" : ""}`);
  plan.steps.forEach((step, i) => {
    const upload = step.uploadsSecrets ? ` --secrets-file <${step.uploadsSecrets.join(", ")}>` : "";
    say(`  ${i + 1}. ${step.title}${step.command ? `: ${formatCommand(step.command)}${upload}` : ""}`);
  });
}

async function deploy(plan: DeployPlan, secretValues: ReadonlyMap<string, string>, previous: DeployRecord | null): Promise<void> {
  const account = process.env.CLOUDFLARE_ACCOUNT_ID ?? "";
  const record: DeployRecord = {
    account_id: account,
    d1: {},
    queues: [],
    r2_buckets: [],
    workers: previous?.account_id === account ? previous.workers : {},
    updated_at: new Date().toISOString(),
  };
  const saveRecord = () => writeFileSync(RECORD_PATH, `${JSON.stringify({ ...record, updated_at: new Date().toISOString() }, null, 2)}\n`);
  const step = async (title: string, args: readonly string[]): Promise<string> => {
    say(`\n> ${title}: ${formatCommand(args)}`);
    const run = await runWrangler(args, { echo: true });
    if (run.code !== 0) fail(`${title} failed (exit ${run.code}).`);
    return run.stdout;
  };

  for (const resource of plan.resources) {
    if (resource.presence === "create") await step(`create the ${resource.kind} ${resource.name}`, resource.create);
    if (resource.kind === "queue") record.queues.push(resource.name);
    if (resource.kind === "R2 bucket") record.r2_buckets.push(resource.name);
  }
  // The ids, from the account's list (also for a database just created).
  const d1Ids = parseD1List((await runWrangler(["d1", "list", "--json"])).stdout);
  for (const resource of plan.resources.filter((r) => r.kind === "D1 database")) {
    const id = d1Ids.get(resource.name);
    if (id === undefined) fail(`the D1 database ${resource.name} is not in wrangler d1 list after its creation`);
    record.d1[resource.name] = id ?? "";
  }
  mkdirSync(DEPLOY_DIR, { recursive: true });
  saveRecord();
  writeDeployConfigs(workers, raws, DEPLOY_DIR, new Map(Object.entries(record.d1)));
  say(`\nwrote ${path.relative(ROOT, RECORD_PATH)} and ${plan.workerOrder.map(deployConfigOf).join(", ")}`);

  for (const s of plan.steps.filter((s) => s.command !== null && s.command[0] === "d1" && s.command[1] === "migrations")) await step(s.title, s.command ?? []);

  const secretsDir = mkdtempSync(path.join(tmpdir(), "edgeswarm-secrets-"));
  let apiUrl: string | null = options.url ?? null;
  try {
    for (const s of plan.steps.filter((s) => s.command?.[0] === "deploy")) {
      const worker = s.title.replace(/^deploy /, "");
      const args = [...(s.command ?? [])];
      if (s.uploadsSecrets) {
        const file = path.join(secretsDir, `${worker}.json`);
        writeFileSync(file, JSON.stringify(Object.fromEntries(s.uploadsSecrets.map((name) => [name, secretValues.get(name) ?? ""]))), { mode: 0o600 });
        args.push("--secrets-file", file);
      }
      const url = parseDeployedUrl(await step(s.title, args));
      record.workers[worker] = { url };
      saveRecord();
      if (worker === plan.workerOrder[0]) apiUrl ??= url;
    }
  } finally {
    rmSync(secretsDir, { recursive: true, force: true });
  }
  await runSmoke(apiUrl, secretValues);
}

async function runSmoke(apiUrl: string | null, secretValues: ReadonlyMap<string, string>): Promise<void> {
  const token = options.smokeToken ?? process.env.EDGESWARM_API_TOKEN ?? secretValues.get("API_TOKENS")?.split(",")[0];
  if (!options.smoke) return say("\nDeployed. Smoke swarm skipped (--no-smoke).");
  if (apiUrl === null || !token) {
    say("\nDeployed. Smoke swarm skipped: it needs the API's URL (--url) and a token (--smoke-token or EDGESWARM_API_TOKEN). By hand:");
    return say(`  EDGESWARM_URL=${apiUrl ?? "<url>"} EDGESWARM_API_TOKEN=<token> npm run swarm -- examples/research.json`);
  }
  say(`\nSmoke swarm: 3 tasks of ${options.smokeModel} at ${apiUrl}`);
  const spec = {
    name: "deploy smoke",
    model: options.smokeModel,
    tasks: ["one", "two", "three"].map((word, i) => ({ id: `smoke-${i + 1}`, prompt: `Reply with the word "${word}" and nothing else.` })),
    limits: { max_output_tokens: 16, max_attempts: 2 },
    budget: { max_usd: 0.05 },
  };
  const { id } = await submitSwarm(apiUrl, token, spec);
  const status = await waitForSwarm(apiUrl, token, id, { timeoutMs: 180_000, pollMs: 1_000 });
  const counts = Object.entries(status.counts)
    .filter(([, n]) => typeof n === "number" && n > 0)
    .map(([state, n]) => `${n} ${state}`)
    .join(", ");
  say(`  ${id}: ${status.state} (${counts}), ${status.usage.total_tokens} tokens, $${status.cost_usd.toFixed(6)}, ${status.wall_s.toFixed(1)} s`);
  if (status.state !== "completed") fail("The smoke swarm did not complete: see its results with npm run swarm or the dashboard.");
}
