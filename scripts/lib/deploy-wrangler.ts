// The deploy's dealings with wrangler: reading a Worker's config through wrangler's own reader,
// running a wrangler command offline-safe (scripts/lib/wrangler-env.ts), and reading the account's
// answers (lists, secrets, the deployed URL) from wrangler's output. Decides nothing.
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import path from "node:path";
import { z } from "zod";
import type { WorkerConfig } from "./deploy-plan.ts";
import { WRANGLER_OFFLINE_ENV } from "./wrangler-env.ts";

export const ROOT = path.resolve(import.meta.dirname, "..", "..");
const WRANGLER = path.join(ROOT, "node_modules", "wrangler", "bin", "wrangler.js");

/** The compatibility date of the workerd that wrangler runs (the `workerd` package wrangler depends on). */
export function readWorkerdCompatibilityDate(): { date: string; version: string } {
  const fromWrangler = createRequire(path.join(ROOT, "node_modules", "wrangler", "package.json"));
  const workerd = z.object({ compatibilityDate: z.string(), version: z.string() }).parse(fromWrangler("workerd"));
  return { date: workerd.compatibilityDate, version: workerd.version };
}

export type ReadConfigResult = { ok: true; config: WorkerConfig; raw: Record<string, unknown> } | { ok: false; file: string; message: string };

/**
 * A Worker's config as wrangler reads it for a deploy (its parser and validation: a wrong type or
 * key is reported by wrangler with its path), and as written (for the deploy's copy).
 */
export async function readWorkerConfig(configPath: string): Promise<ReadConfigResult> {
  // Imported here, not at the top: wrangler's module is 15 MB and the unit tests need none of it.
  const wrangler = await import("wrangler");
  try {
    const config = wrangler.unstable_readConfig({ config: path.resolve(ROOT, configPath) }, { hideWarnings: true });
    const { rawConfig } = wrangler.experimental_readRawConfig({ config: path.resolve(ROOT, configPath) });
    return {
      ok: true,
      config: {
        configPath,
        name: config.name,
        compatibility_date: config.compatibility_date,
        vars: config.vars,
        d1_databases: config.d1_databases,
        queues: config.queues,
        r2_buckets: config.r2_buckets,
        durable_objects: config.durable_objects,
        migrations: config.migrations,
        secrets: config.secrets,
      },
      raw: rawConfig as Record<string, unknown>,
    };
  } catch (error) {
    return { ok: false, file: configPath, message: describeConfigError(error) };
  }
}

/** wrangler's config errors name the key already; a TOML syntax error carries its line and column. */
function describeConfigError(error: unknown): string {
  const location = z.object({ location: z.object({ line: z.number(), column: z.number() }) }).safeParse(error);
  const message = error instanceof Error ? error.message : String(error);
  return location.success ? `line ${location.data.location.line}, column ${location.data.location.column}: ${message}` : message;
}

export interface WranglerRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `wrangler …` in the repository with the offline environment plus `env`; output captured, or echoed too when `echo`. */
export async function runWrangler(args: readonly string[], options: { env?: Record<string, string>; echo?: boolean } = {}): Promise<WranglerRun> {
  const child = spawn(process.execPath, [WRANGLER, ...args], {
    cwd: ROOT,
    // CI=true: no prompts (wrangler answers its confirmations with the default, as in CI).
    env: { ...process.env, ...WRANGLER_OFFLINE_ENV, CI: "true", ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
    if (options.echo) process.stdout.write(chunk);
  });
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
    if (options.echo) process.stderr.write(chunk);
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once("error", reject);
    child.once("close", resolve);
  });
  return { code, stdout, stderr };
}

/** `wrangler d1 list --json`: database name → id. */
export function parseD1List(stdout: string): Map<string, string> {
  const start = stdout.indexOf("[");
  const list = z.array(z.looseObject({ uuid: z.string(), name: z.string() })).parse(JSON.parse(stdout.slice(Math.max(start, 0))));
  return new Map(list.map((db) => [db.name, db.uuid]));
}

/** `wrangler d1 create <name>`: the new database's id (its output's config snippet names it). */
export function parseD1CreatedId(stdout: string): string {
  const id = /"?database_id"?\s*[:=]\s*"([0-9a-f-]{36})"/.exec(stdout)?.[1];
  if (id === undefined) throw new Error(`no database_id in wrangler d1 create's output:\n${stdout}`);
  return id;
}

/** `wrangler queues info <name>`: whether the queue exists; other failures (auth, network) throw. */
export function toQueueExists(run: WranglerRun, name: string): boolean {
  if (run.code === 0) return true;
  if (`${run.stdout}${run.stderr}`.includes(`Queue "${name}" does not exist`)) return false;
  throw new Error(`wrangler queues info ${name} failed:\n${run.stdout}${run.stderr}`);
}

/** `wrangler r2 bucket list`: the buckets' names (its output is `name: …` / `creation_date: …` blocks). */
export function parseR2BucketNames(stdout: string): Set<string> {
  return new Set([...stdout.matchAll(/^name:\s+(\S+)\s*$/gm)].flatMap((match) => (match[1] ? [match[1]] : [])));
}

/**
 * `wrangler secret list --format json`: the names set, or null when the Worker does not exist yet
 * (the API's "script not found", code 10007).
 */
export function parseSecretList(run: WranglerRun): Set<string> | null {
  if (run.code !== 0) {
    if (/10007|not found|does not exist/i.test(`${run.stdout}${run.stderr}`)) return null;
    throw new Error(`wrangler secret list failed:\n${run.stdout}${run.stderr}`);
  }
  const start = run.stdout.indexOf("[");
  const list = z.array(z.looseObject({ name: z.string() })).parse(JSON.parse(run.stdout.slice(Math.max(start, 0))));
  return new Set(list.map((secret) => secret.name));
}

/** The workers.dev URL `wrangler deploy` prints for a Worker with workers_dev = true. */
export function parseDeployedUrl(stdout: string): string | null {
  return /https:\/\/[A-Za-z0-9.-]+\.workers\.dev/.exec(stdout)?.[0] ?? null;
}
