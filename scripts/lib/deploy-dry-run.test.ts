// `npm run deploy -- --dry-run` end to end, offline and with no account: one run (about 40 s: the
// dashboard build, then both Workers bundled and their startup profiled in workerd).
import { spawnSync } from "node:child_process";
import path from "node:path";
import { expect, it } from "vitest";
import { WRANGLER_OFFLINE_ENV } from "./wrangler-env.ts";

const ROOT = path.resolve(import.meta.dirname, "..", "..");

it("checks, measures and plans both Workers with no account", { timeout: 240_000 }, () => {
  const { CLOUDFLARE_API_TOKEN: _token, CLOUDFLARE_ACCOUNT_ID: _account, ...env } = process.env;
  const run = spawnSync(process.execPath, [path.join(ROOT, "scripts", "deploy.ts"), "--dry-run"], {
    cwd: ROOT,
    env: { ...env, ...WRANGLER_OFFLINE_ENV },
    encoding: "utf8",
  });
  expect(run.stderr).toBe("");
  expect(run.status).toBe(0);
  const out = run.stdout;
  for (const config of ["wrangler.toml (edgeswarm-orchestrator): ok", "workers/agent/wrangler.toml (edgeswarm-agent): ok"]) expect(out).toContain(config);
  // Each Worker's size and startup CPU, in deploy order.
  expect(out).toMatch(/edgeswarm-orchestrator\n\s+size\s+[\d.]+ KiB raw, [\d.]+% of the 64 MiB limit \(all plans\): ok\n\s+[\d.]+ KiB gzipped/);
  expect(out).toMatch(/edgeswarm-agent\n\s+size\s+[\d.]+ KiB raw, [\d.]+% of the 64 MiB limit/);
  expect(out.match(/startup\s+[\d.]+ ms CPU in the local workerd, [\d.]+% of the 1 s limit: ok/g)).toHaveLength(2);
  // Resources and secrets, from the configs, with the commands a deploy would run.
  expect(out).toContain("would ensure: npx wrangler d1 create edgeswarm");
  for (const queue of ["edgeswarm-tasks", "edgeswarm-tasks-long", "edgeswarm-tasks-dlq"])
    expect(out).toContain(`would ensure: npx wrangler queues create ${queue}\n`);
  expect(out).toMatch(/SwarmRoom in edgeswarm-orchestrator \(migration v1\)/);
  expect(out).toContain("unknown: npx wrangler secret put API_TOKENS -c wrangler.toml");
  expect(out).toContain("unknown: npx wrangler secret put MODEL_API_KEY -c workers/agent/wrangler.toml");
  expect(out.indexOf("deploy edgeswarm-orchestrator:")).toBeLessThan(out.indexOf("deploy edgeswarm-agent:"));
  expect(out).toContain("Dry run: nothing was created or deployed.");
});
