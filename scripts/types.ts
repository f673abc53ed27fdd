// Generates (or with --check verifies) the committed binding types of both Workers with
// `wrangler types`. The agent's types are generated with the orchestrator's config as a
// secondary, so its cross-script SwarmRoom binding is typed with the real class.
import { spawnSync } from "node:child_process";
import path from "node:path";
import { newProgram, parseOrExit } from "./lib/parse-options.ts";
import { WRANGLER_OFFLINE_ENV } from "./lib/wrangler-env.ts";

const root = path.resolve(import.meta.dirname, "..");
const program = newProgram("npm run types --")
  .description("Write both Workers' binding types (worker-configuration.d.ts) from their wrangler configs, with wrangler types.")
  .option("--check", "write nothing: exit 1 if the committed types are out of date (npm run types:check)");
parseOrExit(program);
const check = program.opts<{ check?: boolean }>().check === true;
const targets: { out: string; configs: string[] }[] = [
  { out: "workers/orchestrator/worker-configuration.d.ts", configs: ["wrangler.toml"] },
  { out: "workers/agent/worker-configuration.d.ts", configs: ["workers/agent/wrangler.toml", "wrangler.toml"] },
];

let failed = false;
for (const { out, configs } of targets) {
  const args = ["types", out, ...configs.flatMap((c) => ["-c", c]), "--include-runtime=false", "--strict-vars=false"];
  if (check) args.push("--check");
  const run = spawnSync(process.execPath, [path.join(root, "node_modules/wrangler/bin/wrangler.js"), ...args], {
    cwd: root,
    env: { ...process.env, ...WRANGLER_OFFLINE_ENV },
    encoding: "utf8",
  });
  if (run.status !== 0) {
    failed = true;
    process.stderr.write(`${out}: ${check ? "out of date, run `npm run types`" : "generation failed"}\n${run.stdout}${run.stderr}\n`);
  } else if (!check) {
    process.stdout.write(`wrote ${out}\n`);
  }
}
process.exit(failed ? 1 : 0);
