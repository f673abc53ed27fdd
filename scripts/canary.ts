// `npm run canary -- --url <API> --token <key>`: a measured swarm against a deployed stack, and the
// figures the capacity model assumes next to the model's own (docs/canary.md). The work is in
// lib/canary-*.ts; this file only hands it the process's argv, environment, output and Ctrl-C.
import { runCanaryCli } from "./lib/canary-cli.ts";

const interrupted = new AbortController();
process.once("SIGINT", () => interrupted.abort());

process.exitCode = await runCanaryCli(process.argv.slice(2), {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  env: process.env,
  signal: interrupted.signal,
});
