// `npm run swarm -- <spec.json>`: submits a swarm spec to a running stack (EDGESWARM_URL, default
// http://127.0.0.1:8787, token EDGESWARM_API_TOKEN), waits for it to end and prints the summary.
import { readFile } from "node:fs/promises";
import { formatAnswer } from "./lib/format-answer.ts";
import { readIntOption } from "./lib/int-option.ts";
import { newProgram, parseOrExit } from "./lib/parse-options.ts";
import { ApiCallError, formatSummary, getJson, submitSwarm, waitForSwarm } from "./lib/swarm-client.ts";
import { toErrorMessage } from "../src/core/error-message.ts";

const program = newProgram("npm run swarm --")
  .description(
    "Submit a swarm spec to a running stack, wait for its end, print its summary and answer; exits 0 when every task succeeded. Environment: EDGESWARM_URL (default http://127.0.0.1:8787), EDGESWARM_API_TOKEN (required).",
  )
  .argument("<spec.json>", "the swarm spec (examples/*.json)")
  .option("--timeout-s <s>", "how long to wait for the swarm's end (1-86,400)", "1800")
  .option("--quiet", "no progress lines");
parseOrExit(program);
const values = program.opts<{ timeoutS: string; quiet?: boolean }>();
const specPath = program.args[0] ?? "";
const timeoutS = readIntOption("timeout-s", values.timeoutS, 1, 86_400);
const baseUrl = (process.env.EDGESWARM_URL ?? "http://127.0.0.1:8787").replace(/\/+$/, "");
const token = process.env.EDGESWARM_API_TOKEN;
if (!token) {
  console.error("EDGESWARM_API_TOKEN is not set: use the token `npm start` printed (or your deployment's token).");
  process.exit(2);
}

let spec: unknown;
try {
  spec = JSON.parse(await readFile(specPath, "utf8"));
} catch (error) {
  console.error(`cannot read ${specPath} as JSON: ${toErrorMessage(error)}`);
  process.exit(2);
}

try {
  const { id, urls } = await submitSwarm(baseUrl, token, spec);
  console.log(`swarm ${id} started: ${baseUrl}/v1/swarms/${id}`);
  let last = "";
  const status = await waitForSwarm(baseUrl, token, id, {
    timeoutMs: timeoutS * 1_000,
    pollMs: 500,
    onProgress: (s) => {
      const line = `  ${s.state}: ${s.counts.succeeded + s.counts.failed}/${s.tasks} done (${s.counts.running} running, ${s.counts.failed} failed)`;
      if (!values.quiet && line !== last) console.log(line);
      last = line;
    },
  });
  console.log(formatSummary(status));
  const plan = urls.plan === undefined ? null : await getJson(baseUrl, token, `/v1/swarms/${id}/plan`);
  for (const line of formatAnswer(await getJson(baseUrl, token, `/v1/swarms/${id}`), plan)) console.log(line);
  console.log(`results: ${baseUrl}/v1/swarms/${id}/results${urls.plan === undefined ? "" : `\nplan:    ${baseUrl}/v1/swarms/${id}/plan`}`);
  process.exit(status.state === "completed" ? 0 : 1);
} catch (error) {
  if (error instanceof ApiCallError) console.error(error.message);
  else console.error(`swarm failed: ${toErrorMessage(error)}`);
  if (error instanceof TypeError) console.error(`is the stack running at ${baseUrl}? (npm start)`);
  process.exit(1);
}
