// Starts and stops the local edgeswarm stack: D1 migrations, the mock model (unless a real
// upstream is configured) and the two Workers, each in a `wrangler dev` session of its own (the
// agent's lane executors in two by default), that find each other through a dev registry private
// to the stack. Used by npm start, bench and e2e.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { z } from "zod";
import { startMockModel, type MockModelHandle, type MockModelOptions } from "../../dev/mock-model/server.ts";
import { deriveWebhookKey } from "../../src/core/webhook-signature.ts";
import { DEFAULT_TENANT_ID } from "../../src/core/ids.ts";
import { WRANGLER_OFFLINE_ENV } from "./wrangler-env.ts";
import { MAX_AGENT_PROCESSES, toAgentConfigs } from "./agent-configs.ts";
import { OTEL_SETTING_NAMES, type OtelSettingName } from "../../src/core/otel-settings.ts";
import { KEEP_INTERCEPTOR_ENV, keepsInterceptor } from "./outbound-interceptor.ts";

export const ROOT = path.resolve(import.meta.dirname, "..", "..");
const WRANGLER = path.join(ROOT, "node_modules", "wrangler", "bin", "wrangler.js");
const AGENT_CONFIG = path.join(ROOT, "workers", "agent", "wrangler.toml");
const SESSION_GUARD = path.join(import.meta.dirname, "session-guard.ts");
const OUTBOUND_HOOK = path.join(import.meta.dirname, "outbound-interceptor-hook.ts");
/** How often startStack triggers the cron handler unless told otherwise (StackOptions.cronEveryMs). */
export const DEFAULT_CRON_EVERY_MS = 5_000;
/**
 * The agent's lane executors run in two workerd processes by default: at 10,000 × 200 ms,
 * W = 1,000 one process was busy the whole wall while the other core had room, and two took the
 * wall from 6.2–6.5 s to 5.0–5.5 s and the peak in flight from 569–583 to 633 (docs/benchmarks.md,
 * "Lane executors in two agent processes"). Production gives every executor a CPU of its own.
 */
export const DEFAULT_AGENT_PROCESSES = 2;
/** For a script's --help: what every stack it starts reads from the environment (docs/configuration.md). */
export const STACK_ENVIRONMENT = `OTEL_* (traces from both Workers), X_LOCAL_OBSERVABILITY (wrangler dev's trace collector) and ${KEEP_INTERCEPTOR_ENV} (miniflare's outbound interceptor), as npm start`;

export interface StackOptions {
  /** API port; 0 picks a free one. */
  port: number;
  /** Bearer token the API accepts. */
  apiToken: string;
  /** A real OpenAI-compatible upstream; when unset the mock model is started. */
  modelBaseUrl?: string | undefined;
  modelApiKey?: string | undefined;
  /** Options for the mock model (ignored with a real upstream); its port defaults to an ephemeral one. */
  mock?: MockModelOptions;
  /**
   * A mock model already running, used instead of starting one (and left running by stop/kill):
   * the upstream that outlives a stack killed and started again (`npm run faults`).
   */
  mockHandle?: MockModelHandle;
  /**
   * How often the cron handler is triggered (ms; 0 = never). Locally cron never fires by itself and
   * no Durable Object alarm survives a restart (workers-sdk#7781), so this stands in for both: each
   * tick runs due schedules and wakes unfinished swarms. Default 5,000.
   */
  cronEveryMs?: number;
  /** SECRETS_KEY of both Workers (tenant secrets are encrypted with keys derived from it); generated when unset. */
  secretsKey?: string;
  /** WEBHOOK_SECRET of the agent (and the mock's /tools/lint); generated when unset. */
  webhookSecret?: string;
  /**
   * Let http_fetch and webhook tools reach 127.0.0.1 and private addresses (ALLOW_PRIVATE_NETWORK):
   * local development only, so tools can use the mock's fixtures and webhook.
   */
  allowPrivateNetwork?: boolean;
  /** Where local D1/DO state lives; defaults to wrangler's `.wrangler/state`. */
  persistTo?: string;
  /**
   * Extra `--var KEY:VALUE` settings for the orchestrator. With two `-c` configs, wrangler dev
   * applies `--var` to the first (primary) config only: in wrangler 4.156 `setupDevEnv` passes the
   * other configs nothing but `env` (checked: `--var X:v` leaves the second Worker's X unchanged).
   */
  vars?: Record<string, string>;
  /**
   * Settings for the agent Worker. `--var` cannot reach it (see `vars`), so these go through the
   * environment of wrangler dev, which overrides, in every Worker whose config has a [secrets]
   * block, the vars that config declares. Hence: a name must be declared in the agent's
   * workers/agent/wrangler.toml [vars], else wrangler drops it (listed in `droppedAgentVars`); and
   * a name the orchestrator's wrangler.toml declares too gets the value in both Workers.
   */
  agentVars?: Record<string, string>;
  /**
   * OTEL_* settings for both Workers (docs/observability.md), over those set in this process's
   * environment. They go as `--var` to each Worker's own session (each config is its session's
   * primary), so neither config needs to declare them.
   */
  otel?: Partial<Record<OtelSettingName, string>>;
  /** GATEWAY_CONFIG for both Workers (JSON); `{{MOCK_URL}}` is replaced by the mock's /v1 URL. */
  gatewayConfig?: string;
  /** UPSTREAM_KEYS for the agent: gateway key id → API key. */
  upstreamKeys?: Record<string, string>;
  /**
   * The Worker configs of one `wrangler dev` session, the first one primary (its port answers
   * /healthz), instead of the default: the orchestrator and the agent, each in a session (a workerd
   * process) of its own.
   */
  configs?: readonly string[];
  /**
   * workerd processes (each a `wrangler dev` session) that run the agent's lane executors, 1 to
   * MAX_AGENT_PROCESSES; default DEFAULT_AGENT_PROCESSES. The first consumes the queues and hands
   * each ticket's executor to one of them (scripts/lib/agent-configs.ts). Ignored with `configs`.
   */
  agentProcesses?: number;
  /** Pass wrangler's output through (npm start) or keep it for error reports (tests, bench). */
  log: "inherit" | "capture";
}

export interface Stack {
  url: string;
  token: string;
  /** The upstream the agents call, for display (never the key). */
  modelBaseUrl: string;
  mock: MockModelHandle | null;
  /**
   * The `wrangler dev` sessions, the primary (the API's) first: the Workers each runs (`name`, its
   * configs' Worker names) and the pid of the session's guard (lib/session-guard.ts), below which
   * its wrangler and workerd run (the process trees, for CPU figures and workerd's inspectors), and
   * the directory of its first config, under whose `.wrangler/tmp` wrangler writes its bundle.
   */
  sessions: ReadonlyArray<{ name: string; pid: number; configDir: string }>;
  /** The sessions' pids, the primary first. */
  sessionPids: readonly number[];
  /** Names of `agentVars` the agent's config does not declare: wrangler dev did not pass them. */
  droppedAgentVars: string[];
  /** Whether the Workers' fetches pass through miniflare's outbound interceptor (EDGESWARM_OUTBOUND_INTERCEPTOR=true; outbound-interceptor.ts). */
  outboundInterceptor: boolean;
  /** The port of the primary session's wrangler DevTools inspector (its first Worker), for CPU profiles. */
  inspectorPort: number;
  /** wrangler's output so far, when captured. */
  output(): string;
  stop(): Promise<void>;
  /** kill -9 of every process of the stack (the sessions' guards, wranglers and workerds), at once: a machine that dies. */
  kill(): Promise<void>;
}

export function generateToken(): string {
  return `es_local_${randomBytes(18).toString("base64url")}`;
}

export async function findFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

function wranglerArgs(args: string[], persistTo: string | undefined): string[] {
  return [WRANGLER, ...args, ...(persistTo ? ["--persist-to", persistTo] : [])];
}

/** Applies the D1 migrations to the local ledger (`wrangler d1 migrations apply --local`), without blocking this process. */
export async function applyLocalMigrations(persistTo: string | undefined): Promise<void> {
  const child = spawn(process.execPath, wranglerArgs(["d1", "migrations", "apply", "LEDGER_DB", "--local", "-c", "wrangler.toml"], persistTo), {
    cwd: ROOT,
    env: { ...process.env, ...WRANGLER_OFFLINE_ENV, CI: "true" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once("error", reject);
    child.once("close", resolve);
  });
  if (code !== 0) throw new Error(`applying local D1 migrations failed:\n${output}`);
}

/** Runs one SQL statement on the local D1 ledger, as an operator would (`wrangler d1 execute --local`). */
export function queryLocalD1(persistTo: string | undefined, sql: string): unknown[] {
  const run = spawnSync(
    process.execPath,
    wranglerArgs(["d1", "execute", "LEDGER_DB", "--local", "-c", "wrangler.toml", "--json", "--command", sql], persistTo),
    { cwd: ROOT, env: { ...process.env, ...WRANGLER_OFFLINE_ENV }, encoding: "utf8" },
  );
  if (run.status !== 0) throw new Error(`d1 execute failed: ${run.stderr}`);
  const parsed = z.array(z.object({ results: z.array(z.unknown()) })).parse(JSON.parse(run.stdout));
  return parsed[0]?.results ?? [];
}

/** Polls `ready` every 250 ms until it holds; fails when a session exits first or after `timeoutMs`. */
async function waitUntil(
  what: string,
  sessions: readonly ChildProcess[],
  ready: () => boolean | Promise<boolean>,
  output: () => string,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const exited = sessions.find((child) => child.exitCode !== null);
    if (exited !== undefined) throw new Error(`wrangler dev exited with code ${exited.exitCode}:\n${output()}`);
    if (await ready()) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`${what} within ${timeoutMs / 1000} s:\n${output()}`);
}

async function answersHealthz(url: string): Promise<boolean> {
  try {
    const response = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2_000) });
    await response.body?.cancel();
    return response.ok;
  } catch {
    return false; // not listening yet
  }
}

/**
 * Whether `worker` has registered in the dev registry at `registry`: miniflare writes a file named
 * after the Worker, with the address of its workerd's debug port, once that workerd serves it.
 */
function registered(registry: string, worker: string): boolean {
  try {
    return z.object({ debugPortAddress: z.string() }).safeParse(JSON.parse(readFileSync(path.join(registry, worker), "utf8"))).success;
  } catch {
    return false; // not written yet (or half-written)
  }
}

/** `--var` arguments of the OTEL_* settings set in `env`, overridden by `overrides` (blank values are left out). */
export function toOtelVarArgs(env: NodeJS.ProcessEnv, overrides: Partial<Record<OtelSettingName, string>>): string[] {
  return OTEL_SETTING_NAMES.flatMap((name) => {
    const value = (overrides[name] ?? env[name] ?? "").trim();
    return value === "" ? [] : ["--var", `${name}:${value}`];
  });
}

/**
 * The var names a wrangler.toml declares in its top-level [vars] table. A line scan, not a TOML
 * parser: enough for this repository's configs (one `NAME = "value"` a line, no inline tables).
 */
function declaredVars(configPath: string): Set<string> {
  const names = new Set<string>();
  let inVars = false;
  for (const line of readFileSync(configPath, "utf8").split("\n")) {
    const trimmed = line.trim();
    if (trimmed.startsWith("[")) inVars = trimmed === "[vars]";
    else if (inVars) {
      const name = /^([A-Za-z_][A-Za-z0-9_]*)\s*=/.exec(trimmed)?.[1];
      if (name !== undefined) names.add(name);
    }
  }
  return names;
}

/** The `name` a wrangler.toml gives its Worker (a line scan, as declaredVars), or the file's path. */
function workerName(configPath: string): string {
  const match = /^name\s*=\s*"([^"]+)"/m.exec(readFileSync(path.resolve(ROOT, configPath), "utf8"));
  return match?.[1] ?? configPath;
}

/** Builds the dashboard into dashboard/dist, the orchestrator's static assets (wrangler.toml [assets]). */
export function buildDashboard(): void {
  const built = spawnSync(process.execPath, [path.join(ROOT, "node_modules", "vite", "bin", "vite.js"), "build", "--config", "dashboard/vite.config.ts"], {
    cwd: ROOT,
    encoding: "utf8",
  });
  if (built.status !== 0) throw new Error(`the dashboard build failed:\n${built.stdout}${built.stderr}`);
}

/** Attempts at a stack whose ports this module picks: see isPortClash. */
const PORT_CLASH_ATTEMPTS = 3;

/**
 * Whether a start failed because a port picked free was taken before wrangler bound it: findFreePort
 * closes the port it found, and another stack's workerd (test files start stacks in parallel) may
 * be handed it as an ephemeral port meanwhile. workerd then says "Address already in use".
 */
export function isPortClash(error: unknown): boolean {
  return error instanceof Error && error.message.includes("Address already in use");
}

/** Starts the local stack; a start whose freely picked ports clashed with another process's is made again on new ones. */
export async function startStack(options: StackOptions): Promise<Stack> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await startStackOnce(options);
    } catch (error) {
      if (attempt >= PORT_CLASH_ATTEMPTS || !isPortClash(error)) throw error;
      console.warn(`the local stack's ports clashed with another process's (attempt ${attempt}); starting it again on new ones`);
    }
  }
}

async function startStackOnce(options: StackOptions): Promise<Stack> {
  const port = options.port === 0 ? await findFreePort() : options.port;
  const inspectorPort = await findFreePort();
  buildDashboard();

  const realUpstream = Boolean(options.modelBaseUrl);
  const webhookSecret = options.webhookSecret ?? `whsec_local_${randomBytes(18).toString("base64url")}`;
  // The agent signs webhook calls with the tenant's key (derived from WEBHOOK_SECRET): the mock's
  // /tools/lint verifies with the key of the default tenant, whose admin key the stack's token is.
  const webhookKey = await deriveWebhookKey(webhookSecret, DEFAULT_TENANT_ID);
  const ownMock = !realUpstream && options.mockHandle === undefined;
  const mock = realUpstream ? null : (options.mockHandle ?? (await startMockModel({ port: 0, webhookSecret: webhookKey, ...options.mock })));
  const modelBaseUrl = realUpstream ? String(options.modelBaseUrl) : `${mock?.url}/v1`;
  const modelApiKey = options.modelApiKey || (realUpstream ? "" : "mock-key-local");
  if (realUpstream && !modelApiKey) throw new Error("MODEL_BASE_URL is set but MODEL_API_KEY is empty");

  const vars = Object.entries(options.vars ?? {}).flatMap(([k, v]) => ["--var", `${k}:${v}`]);
  const otelArgs = toOtelVarArgs(process.env, options.otel ?? {});
  const agentVars = options.agentVars ?? {};
  const agentDeclared = declaredVars(AGENT_CONFIG);
  const droppedAgentVars = Object.keys(agentVars).filter((name) => !agentDeclared.has(name));
  // Each Worker runs in a `wrangler dev` session of its own, so in a workerd process (one thread)
  // of its own, as production gives every invocation and Durable Object its own CPU: the agents'
  // calls no longer queue behind the SwarmRooms' SQL. The two find each other through wrangler's
  // dev registry (WRANGLER_REGISTRY_PATH), private to this stack so that two stacks never see each
  // other's Workers: the agent's SwarmRoom and KeyPool bindings (script_name) reach the
  // orchestrator's Durable Objects through its workerd's debug port, and the orchestrator's Queue
  // producers, with no local consumer, forward each message to the broker of the session that
  // consumes the queue (miniflare's queue broker `#tryRemoteConsumer`, which drops a message when
  // no consumer is registered: hence the agent starts first).
  const split = options.configs === undefined;
  const agentProcesses = split ? (options.agentProcesses ?? DEFAULT_AGENT_PROCESSES) : 1;
  if (!Number.isInteger(agentProcesses) || agentProcesses < 1 || agentProcesses > MAX_AGENT_PROCESSES) {
    throw new Error(`agentProcesses must be an integer from 1 to ${MAX_AGENT_PROCESSES} (got ${agentProcesses})`);
  }
  const registry = split ? mkdtempSync(path.join(tmpdir(), "edgeswarm-registry-")) : null;
  // With more than one agent process, the agent's configs are written for this stack (its consumer
  // binds the others' executors): in a directory of their own, removed with the stack.
  const agentConfigDir = agentProcesses > 1 ? mkdtempSync(path.join(tmpdir(), "edgeswarm-agent-configs-")) : null;
  const agentConfigs =
    agentConfigDir === null
      ? [{ name: workerName(AGENT_CONFIG), file: AGENT_CONFIG }]
      : toAgentConfigs(readFileSync(AGENT_CONFIG, "utf8"), path.dirname(AGENT_CONFIG), agentConfigDir, agentProcesses).map(({ name, text }) => {
          const file = path.join(agentConfigDir, `${name}.toml`);
          writeFileSync(file, text);
          return { name, file };
        });
  const persistRoot = options.persistTo ?? path.join(ROOT, ".wrangler", "state");
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ...WRANGLER_OFFLINE_ENV,
    // wrangler dev's local trace collector (on by default) records a span of every fetch, RPC and
    // queue delivery into SQLite, on the thread of the Worker it traces: about 0.5 ms of CPU per
    // task, a third of the swarm's, which production does not charge to the Workers. Off unless
    // the environment asks for it (X_LOCAL_OBSERVABILITY=true).
    X_LOCAL_OBSERVABILITY: process.env.X_LOCAL_OBSERVABILITY ?? "false",
    API_TOKENS: options.apiToken,
    MODEL_BASE_URL: modelBaseUrl,
    MODEL_API_KEY: modelApiKey,
    UPSTREAM_KEYS: JSON.stringify(options.upstreamKeys ?? {}),
    WEBHOOK_SECRET: webhookSecret,
    SECRETS_KEY: options.secretsKey ?? `sk_local_${randomBytes(24).toString("base64url")}`,
    ALLOW_PRIVATE_NETWORK: options.allowPrivateNetwork ? "true" : "false",
    // Keys the local stack mints say so: es_local_… (wrangler.toml's default is live).
    API_KEY_KIND: "local",
    // Declared vars are overridden from the environment in both Workers (secrets are declared).
    ...(options.gatewayConfig ? { GATEWAY_CONFIG: options.gatewayConfig.replaceAll("{{MOCK_URL}}", modelBaseUrl) } : {}),
    ...agentVars,
    ...(registry === null ? {} : { WRANGLER_REGISTRY_PATH: registry }),
  };
  const interceptor = keepsInterceptor(process.env);
  let captured = "";
  const keep = (chunk: Buffer) => {
    captured = (captured + chunk.toString()).slice(-200_000);
  };
  const sessions: Array<{ child: ChildProcess; name: string; configDir: string }> = [];
  /** One `wrangler dev` session of `configs`, its process group of its own (signalled whole). */
  const startSession = (configs: readonly string[], sessionPort: number, sessionInspectorPort: number, persistTo: string | undefined, extra: string[]) => {
    // Without miniflare's outbound interceptor unless the environment keeps it (outbound-interceptor.ts).
    const hook = interceptor ? [] : ["--import", OUTBOUND_HOOK];
    const args = wranglerArgs(
      [
        "dev",
        ...configs.flatMap((config) => ["-c", config]),
        "--ip",
        "127.0.0.1",
        "--port",
        String(sessionPort),
        "--inspector-port",
        String(sessionInspectorPort),
        "--show-interactive-dev-session=false",
        ...extra,
      ],
      persistTo,
    );
    // Secrets declared under [secrets] in the configs are read from the process environment.
    // The session runs under lib/session-guard.ts, which holds the other end of its stdin pipe and
    // ends the session when this process goes away without stop() (a Ctrl-C, a crash, a SIGKILL):
    // detached, its process group would otherwise outlive the script.
    const child = spawn(process.execPath, [SESSION_GUARD, process.execPath, ...hook, ...args], {
      cwd: ROOT,
      env,
      stdio: ["pipe", options.log === "inherit" ? "inherit" : "pipe", options.log === "inherit" ? "inherit" : "pipe"],
      detached: true,
    });
    child.stdout?.on("data", keep);
    child.stderr?.on("data", keep);
    const session = { child, name: configs.map(workerName).join("+"), configDir: path.dirname(path.resolve(ROOT, configs[0] ?? "wrangler.toml")) };
    sessions.push(session);
    return session;
  };

  let stopped = false;
  let cronTimer: ReturnType<typeof setInterval> | null = null;
  /** Signals every session's process group (workerd included), once, and waits for them to exit. */
  const end = async (signal: "SIGTERM" | "SIGKILL"): Promise<void> => {
    if (stopped) return;
    stopped = true;
    if (cronTimer !== null) clearInterval(cronTimer);
    await Promise.all(
      sessions.map(async ({ child }) => {
        if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
        const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
        const signalGroup = (sig: "SIGTERM" | "SIGKILL") => {
          try {
            if (child.pid !== undefined) process.kill(-child.pid, sig);
          } catch {
            // already gone
          }
        };
        signalGroup(signal);
        // A SIGTERM that is not heeded within 5 s becomes a SIGKILL.
        const timer = signal === "SIGTERM" ? setTimeout(() => signalGroup("SIGKILL"), 5_000) : null;
        await exited;
        if (timer !== null) clearTimeout(timer);
      }),
    );
    if (registry !== null) rmSync(registry, { recursive: true, force: true });
    if (agentConfigDir !== null) rmSync(agentConfigDir, { recursive: true, force: true });
  };
  const stop = async (): Promise<void> => {
    if (stopped) return;
    await end("SIGTERM");
    if (ownMock) await mock?.close();
  };
  const kill = (): Promise<void> => end("SIGKILL");

  const url = `http://127.0.0.1:${port}`;
  // The migrations run while the agent's session starts (it keeps no D1 of its own); the
  // orchestrator's, which opens the ledger, starts once both are done.
  const migrated = applyLocalMigrations(options.persistTo);
  // Handled at its await below; this keeps a failure before then from being an unhandled rejection.
  migrated.catch(() => {});
  try {
    if (registry !== null) {
      // Each agent session's state (its lane executors' storage, its local queue brokers) gets a
      // directory apart from the orchestrator's SQLite files, and from the other agent's.
      // The agent processes (the consumer, then the executors' other hosts) start one after the
      // other: they share the R2 bucket's files (shareFilesBucket), which miniflare keeps in a
      // SQLite database, and two workerds opening it at the same moment failed to start one of
      // them now and then ("database is locked: SQLITE_BUSY", in a CI run and in `npm run faults`).
      // The consumer's bindings to the others' executors find them through the registry when used.
      for (const [i, config] of agentConfigs.entries()) {
        const agentPersist = path.join(persistRoot, i === 0 ? "agent" : `agent-${i + 1}`);
        shareFilesBucket(persistRoot, agentPersist);
        const agent = startSession([config.file], await findFreePort(), await findFreePort(), agentPersist, otelArgs);
        await waitUntil(
          `the agent's wrangler dev (${agent.name}) did not register`,
          sessions.map(({ child }) => child),
          () => registered(registry, agent.name),
          () => captured,
          90_000,
        );
      }
    }
    await migrated;
    startSession(options.configs ?? ["wrangler.toml"], port, inspectorPort, options.persistTo, [...vars, ...otelArgs]);
    await waitUntil(
      `wrangler dev did not answer ${url}/healthz`,
      sessions.map(({ child }) => child),
      () => answersHealthz(url),
      () => captured,
      90_000,
    );
  } catch (error) {
    await stop();
    await migrated.catch(() => {}); // not left writing to a state directory the caller may remove
    throw error;
  }
  const cronEveryMs = options.cronEveryMs ?? DEFAULT_CRON_EVERY_MS;
  if (cronEveryMs > 0) {
    cronTimer = setInterval(() => {
      fetch(`${url}/cdn-cgi/handler/scheduled?cron=*+*+*+*+*`).then(
        (response) => response.body?.cancel(),
        () => {},
      );
    }, cronEveryMs);
    cronTimer.unref();
  }
  // Started the agents first; listed primary (the API's session) first, then the agents in order.
  const primaryFirst = [...sessions.slice(-1), ...sessions.slice(0, -1)];
  return {
    url,
    token: options.apiToken,
    modelBaseUrl,
    mock,
    sessions: primaryFirst.map(({ child, name, configDir }) => ({ name, pid: child.pid ?? -1, configDir })),
    sessionPids: primaryFirst.map(({ child }) => child.pid ?? -1),
    inspectorPort,
    droppedAgentVars,
    outboundInterceptor: interceptor,
    output: () => captured,
    stop,
    kill,
  };
}

/**
 * Both Workers bind the R2 bucket FILES_BUCKET (a batch task reads its input line from it). Each
 * session keeps its local state under its own --persist-to, and miniflare keeps a session's R2
 * buckets under `<persist>/v3/r2`: the agent's is made a link to the orchestrator's, so both
 * sessions see one bucket, as both Workers do in production. (Only R2 is shared: the sessions'
 * queue brokers must stay apart.)
 */
function shareFilesBucket(orchestratorPersist: string, agentPersist: string): void {
  const shared = path.join(orchestratorPersist, "v3", "r2");
  const link = path.join(agentPersist, "v3", "r2");
  mkdirSync(shared, { recursive: true });
  mkdirSync(path.dirname(link), { recursive: true });
  if (existsSync(link) || isLink(link)) return;
  symlinkSync(shared, link, "dir");
}

function isLink(file: string): boolean {
  try {
    return lstatSync(file).isSymbolicLink();
  } catch {
    return false;
  }
}
