// `npm start`: the whole stack on this machine — local D1 migrations, the mock model (unless
// MODEL_BASE_URL/MODEL_API_KEY name a real endpoint), each Worker in a `wrangler dev` of its own — then a
// 100-task demo swarm and its summary line. Stays up until Ctrl-C, which stops all it started.
import { readIntOption } from "./lib/int-option.ts";
import { generateToken, startStack, type Stack } from "./lib/local-stack.ts";
import { newProgram, parseOrExit } from "./lib/parse-options.ts";
import { formatSummary, submitSwarm, waitForSwarm } from "./lib/swarm-client.ts";
import { toErrorMessage } from "../src/core/error-message.ts";
import { startMockMcp, type MockMcpHandle } from "../dev/mock-mcp/server.ts";

const program = newProgram("npm start --")
  .description(
    "The whole stack on this machine, then a demo swarm; Ctrl-C stops it (`npm run dev`: --no-demo). Environment (docs/configuration.md): PORT, MODEL_BASE_URL and MODEL_API_KEY (a real upstream instead of the mock), EDGESWARM_API_TOKEN, EDGESWARM_DEMO_MODEL, EDGESWARM_VERBOSE, MOCK_MODEL_PORT, MOCK_MCP_PORT, OTEL_*, X_LOCAL_OBSERVABILITY.",
  )
  .option("--no-demo", "start the stack without the demo swarm")
  .option("--tasks <n>", "tasks of the demo swarm (1-10,000)", "100")
  .option("--exit-after-demo", "stop everything after the demo's summary line");
parseOrExit(program);
const values = program.opts<{ demo: boolean; tasks: string; exitAfterDemo?: boolean }>();

const port = Number(process.env.PORT ?? 8787);
if (!Number.isInteger(port) || port < 1 || port > 65_535) {
  console.error(`PORT must be a TCP port (1-65535), got "${process.env.PORT}"`);
  process.exit(2);
}
const taskCount = readIntOption("tasks", values.tasks, 1, 10_000);
// The tool examples (examples/*-tools.json, research-goal.json) reach the mock's fixtures and webhook here.
const mockPort = readIntOption("MOCK_MODEL_PORT", process.env.MOCK_MODEL_PORT || "8788", 0, 65_535);
// The MCP example (examples/code-review-mcp.json) reaches the mock MCP server here.
const mcpPort = readIntOption("MOCK_MCP_PORT", process.env.MOCK_MCP_PORT || "8790", 0, 65_535);
const apiToken = process.env.EDGESWARM_API_TOKEN || generateToken();
const modelBaseUrl = process.env.MODEL_BASE_URL || undefined;
const demoModel = process.env.EDGESWARM_DEMO_MODEL || (modelBaseUrl ? "gpt-4.1-mini" : "mock-1");

const DEMO_TOPICS = ["rate limiting", "idempotency keys", "retry budgets", "circuit breakers", "back-pressure"];
function demoSpec(n: number) {
  return {
    name: "demo: 100 one-line reviews",
    model: demoModel,
    system: "You are a terse senior engineer. Answer in one sentence.",
    tasks: Array.from({ length: n }, (_, i) => ({
      id: `demo-${String(i + 1).padStart(3, "0")}`,
      prompt: `Tip #${i + 1}: give one practical tip about ${DEMO_TOPICS[i % DEMO_TOPICS.length]} in distributed systems.`,
    })),
    // The defaults otherwise: a 429 spends no attempt, transient failures get 4 attempts in all.
    limits: { concurrency: 50, max_output_tokens: 64, timeout_s: 30 },
    metadata: { source: "npm start demo" },
  };
}

let stack: Stack | null = null;
let mcp: MockMcpHandle | null = null;
let stopping = false;
async function shutdown(code: number): Promise<never> {
  if (!stopping) {
    stopping = true;
    console.log("\nstopping edgeswarm …");
    await stack?.stop();
    await mcp?.close();
  }
  process.exit(code);
}
process.on("SIGINT", () => void shutdown(0));
process.on("SIGTERM", () => void shutdown(0));

console.log("edgeswarm: starting the local stack (D1 migrations, model upstream, orchestrator + agent Workers) …");
try {
  stack = await startStack({
    port,
    apiToken,
    modelBaseUrl,
    modelApiKey: process.env.MODEL_API_KEY,
    mock: { port: mockPort, latency: { dist: "normal", mean: 200, stddev: 40 } },
    // Local development: tools may reach the mock's fixtures and webhook on 127.0.0.1.
    allowPrivateNetwork: true,
    log: process.env.EDGESWARM_VERBOSE ? "inherit" : "capture",
  });
  mcp = await startMockMcp({ port: mcpPort, latencyMs: 50 });
} catch (error) {
  console.error(`edgeswarm: could not start: ${toErrorMessage(error)}`);
  await shutdown(1);
}
if (stack === null) process.exit(1);

console.log(`
API: ${stack.url}
token: ${stack.token}
dashboard: ${stack.url}/#token=${encodeURIComponent(stack.token)}
docs: ${stack.url}/docs
model: ${stack.mock ? `${stack.modelBaseUrl} (built-in mock model: outputs are fake)` : stack.modelBaseUrl}
tools: http_fetch and webhook tools may reach 127.0.0.1 and private addresses (ALLOW_PRIVATE_NETWORK=true, local only)
mcp: ${mcp?.url ?? ""}/mcp (built-in mock MCP server: answers are fake)
`);

if (values.demo) {
  console.log(`running the demo swarm (${taskCount} tasks) …`);
  try {
    const { id } = await submitSwarm(stack.url, stack.token, demoSpec(taskCount));
    const status = await waitForSwarm(stack.url, stack.token, id, { timeoutMs: 600_000 });
    console.log(formatSummary(status));
    console.log(`\n  swarm:   ${stack.url}/v1/swarms/${id}\n  results: ${stack.url}/v1/swarms/${id}/results\n  watch:   ${stack.url}/#/swarms/${id}`);
  } catch (error) {
    console.error(`demo swarm failed: ${toErrorMessage(error)}`);
    if (!process.env.EDGESWARM_VERBOSE) console.error(stack.output().split("\n").slice(-40).join("\n"));
    await shutdown(1);
  }
}

console.log(`
Try it:
  curl -s -H "Authorization: Bearer ${stack.token}" ${stack.url}/v1/swarms
  EDGESWARM_URL=${stack.url} EDGESWARM_API_TOKEN=${stack.token} npx edgeswarm run examples/research.json
  EDGESWARM_URL=${stack.url} EDGESWARM_API_TOKEN=${stack.token} npm run swarm -- examples/code-review.json
  EDGESWARM_URL=${stack.url} EDGESWARM_API_TOKEN=${stack.token} npm run swarm -- examples/code-review-mcp.json
  EDGESWARM_URL=${stack.url} EDGESWARM_API_TOKEN=${stack.token} npm run swarm -- examples/research-goal.json${stack.mock && mockPort !== 8788 ? "\n  (the tool examples expect the mock on port 8788: unset MOCK_MODEL_PORT)" : ""}
  (cron runs every 5 s here: due schedules start, and unfinished swarms resume after a restart)

Ctrl-C stops everything.`);
if (values.exitAfterDemo) await shutdown(0);
// Keep running until a signal arrives.
setInterval(() => {}, 1 << 30);
