// Bundles a Worker as `wrangler deploy` would upload it (`--dry-run`, offline) and profiles its
// startup in a local workerd (`wrangler check startup`): the figures the deploy holds against the
// platform's limits (deploy-limits.ts). Writes only into the folder it is given.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { gzipSync } from "node:zlib";
import { CpuProfileSchema, selfTimeByFunction } from "./cpu-profile-summary.ts";
import type { WorkerMeasurement } from "./deploy-limits.ts";
import { runWrangler } from "./deploy-wrangler.ts";

/**
 * The upload's size as wrangler counts it (its bundle reporter: every module, source maps and the
 * README it writes beside them left out, gzipped as one blob).
 */
export function measureBundleDir(dir: string): { rawBytes: number; gzipBytes: number } {
  const modules = readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && !entry.name.endsWith(".map") && entry.name !== "README.md")
    .map((entry) => readFileSync(path.join(entry.parentPath, entry.name)));
  const all = Buffer.concat(modules);
  return { rawBytes: all.byteLength, gzipBytes: gzipSync(all).byteLength };
}

/** Startup CPU from a `wrangler check startup` profile: every sample's self time but idle. */
export function summarizeStartupProfile(profilePath: string): { cpuMs: number; top: { name: string; ms: number }[] } {
  const rows = selfTimeByFunction(CpuProfileSchema.parse(JSON.parse(readFileSync(profilePath, "utf8"))));
  return { cpuMs: rows.reduce((sum, row) => sum + row.ms, 0), top: rows.slice(0, 5) };
}

/**
 * Bundles the Worker of `configPath` into `workDir/<worker>/` and profiles its startup. Throws with
 * wrangler's output when either command fails.
 */
export async function measureWorker(worker: string, configPath: string, workDir: string): Promise<WorkerMeasurement> {
  const outDir = path.join(workDir, worker);
  const bundle = path.join(workDir, `${worker}.bundle`);
  const profile = path.join(workDir, `${worker}.cpuprofile`);
  const built = await runWrangler(["deploy", "--dry-run", "-c", configPath, "--outdir", outDir, "--outfile", bundle]);
  if (built.code !== 0) throw new Error(`bundling ${worker} (wrangler deploy --dry-run -c ${configPath}) failed:\n${built.stdout}${built.stderr}`);
  const checked = await runWrangler(["check", "startup", "-c", configPath, "--worker", bundle, "--outfile", profile]);
  if (checked.code !== 0) throw new Error(`profiling ${worker}'s startup (wrangler check startup) failed:\n${checked.stdout}${checked.stderr}`);
  const sizes = measureBundleDir(outDir);
  const startup = summarizeStartupProfile(profile);
  return { worker, ...sizes, startupCpuMs: startup.cpuMs, startupTop: startup.top };
}
