// `npm run canary`'s command line: its options (commander's, one declaration each), the run, and
// what it prints (text, or one JSON object with --json). Returns the exit code: 0 the swarm
// succeeded, 1 the stack refused or tasks failed, 2 the command line (or --max-usd) refused it.
// Reads no environment of its own: the caller passes `env`.
import { Command, CommanderError, InvalidArgumentError } from "commander";
import { formatCanaryReport } from "./canary-report.ts";
import { CanaryError, type CanaryOptions, type CanaryProgress, type CanaryResult, runCanary } from "./canary-run.ts";

export interface CanaryIo {
  out(line: string): void;
  err(line: string): void;
  env: Readonly<Record<string, string | undefined>>;
  /** Defaults to the global fetch. */
  fetch?: typeof fetch;
  /** Aborted on Ctrl-C: the swarm is cancelled. */
  signal?: AbortSignal;
}

/** npm start's mock model: the model a loopback stack serves when no --model is given. */
const LOCAL_DEFAULT_MODEL = "mock-1";
/** Progress lines while the swarm runs, at most this often. */
const PROGRESS_EVERY_MS = 5_000;

const intIn =
  (min: number, max: number) =>
  (raw: string): number => {
    const n = Number(raw);
    if (raw.trim() === "" || !Number.isInteger(n) || n < min || n > max)
      throw new InvalidArgumentError(`want an integer ${min}-${max.toLocaleString("en-US")}.`);
    return n;
  };
const usdAmount = (raw: string): number => {
  const n = Number(raw);
  if (raw.trim() === "" || !Number.isFinite(n) || n < 0) throw new InvalidArgumentError("want an amount in USD, e.g. 0.05.");
  return n;
};

interface CanaryFlags {
  url?: string;
  token?: string;
  tasks: number;
  concurrency: number;
  model?: string;
  maxOutputTokens: number;
  maxUsd: number;
  yes?: boolean;
  pollMs: number;
  rampPollMs: number;
  timeoutS: number;
  agentConcurrency: number;
  json?: boolean;
}

function toProgram(io: CanaryIo): Command {
  return new Command("npm run canary --")
    .description(
      "A measured swarm against a deployed edgeswarm: the figures the capacity model assumes, measured, next to the model's. docs/canary.md explains each.",
    )
    .option("--url <api>", "the stack's API (default: EDGESWARM_URL)")
    .option("--token <key>", "an API key with the run scope (default: EDGESWARM_API_TOKEN)")
    .option("--tasks <n>", "tasks of the swarm (1-10,000)", intIn(1, 10_000), 300)
    .option("--concurrency <w>", "the swarm's window W (1-1,500)", intIn(1, 1_500), 100)
    .option("--model <m>", `the model (default on a loopback URL: ${LOCAL_DEFAULT_MODEL}, npm start's mock)`)
    .option("--max-output-tokens <n>", "max_tokens of every call", intIn(1, 128_000), 16)
    .option("--max-usd <usd>", "refuse to start when the model cost could exceed this, unless --yes", usdAmount, 0.05)
    .option("--yes", "start even above --max-usd (or with an unpriced model)")
    .option("--poll-ms <ms>", "how often the status is read (100-10,000)", intIn(100, 10_000), 500)
    .option("--ramp-poll-ms <ms>", "how often the status is read until 90% of W is in flight (at most 10 s), for the ramp (20-10,000)", intIn(20, 10_000), 50)
    .option("--timeout-s <s>", "cancel the swarm if it has not ended by then", intIn(1, 86_400), 600)
    .option("--agent-concurrency <n>", "AGENT_CONCURRENCY of the stack's agent, for the capacity model", intIn(1, 1_000), 128)
    .option("--json", "print the figures as one JSON object (progress goes to stderr)")
    .exitOverride()
    .configureOutput({ writeOut: (text) => io.out(text.trimEnd()), writeErr: (text) => io.err(text.trimEnd()) });
}

const isLoopback = (url: URL): boolean => ["127.0.0.1", "localhost", "[::1]"].includes(url.hostname);

/** The options of a run, or the one line that says what is missing or wrong. */
function toOptions(flags: CanaryFlags, io: CanaryIo): CanaryOptions | CanaryError {
  const rawUrl = flags.url ?? io.env.EDGESWARM_URL;
  if (rawUrl === undefined || rawUrl === "")
    return new CanaryError("--url is required: the stack's API, e.g. https://edgeswarm.<you>.workers.dev (or EDGESWARM_URL)", 2);
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    return new CanaryError(`--url "${rawUrl}" is not a URL: want http(s)://host[:port]`, 2);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return new CanaryError(`--url "${rawUrl}" is not http(s)`, 2);
  const token = flags.token ?? io.env.EDGESWARM_API_TOKEN;
  if (token === undefined || token === "")
    return new CanaryError("--token is required: an API key of the stack with the run scope (or EDGESWARM_API_TOKEN)", 2);
  const model = flags.model ?? (isLoopback(url) ? LOCAL_DEFAULT_MODEL : undefined);
  if (model === undefined) return new CanaryError("--model is required for a deployed stack: one its gateway serves (e.g. gpt-4.1-mini)", 2);
  return {
    url: url.href.replace(/\/+$/, ""),
    token,
    tasks: flags.tasks,
    concurrency: flags.concurrency,
    model,
    maxOutputTokens: flags.maxOutputTokens,
    maxUsd: flags.maxUsd,
    yes: flags.yes === true,
    pollMs: flags.pollMs,
    rampPollMs: flags.rampPollMs,
    timeoutS: flags.timeoutS,
    agentConcurrency: flags.agentConcurrency,
    ...(io.fetch === undefined ? {} : { fetch: io.fetch }),
    ...(io.signal === undefined ? {} : { signal: io.signal }),
  };
}

function toProgressPrinter(say: (line: string) => void): (event: CanaryProgress) => void {
  let lastAt = Number.NEGATIVE_INFINITY;
  return (event) => {
    switch (event.kind) {
      case "estimate":
        say(
          event.usd === null
            ? "model cost estimate: unknown (the model has no price here)"
            : `model cost estimate: $${event.usd.min.toPrecision(2)}-$${event.usd.max.toPrecision(2)}`,
        );
        return;
      case "submitted":
        say(`swarm ${event.swarmId} submitted`);
        return;
      case "sample": {
        if (event.sample.atMs - lastAt < PROGRESS_EVERY_MS) return;
        lastAt = event.sample.atMs;
        const s = event.sample;
        say(`  ${(s.atMs / 1_000).toFixed(1)} s: ${s.done}/${event.tasks} done, ${s.inFlight} in flight, ${s.lanes ?? "?"} lanes (${event.state})`);
        return;
      }
    }
  };
}

function toJson(result: CanaryResult, options: CanaryOptions): string {
  return JSON.stringify({
    swarm_id: result.swarmId,
    state: result.state,
    url: options.url,
    run: {
      tasks: options.tasks,
      concurrency: options.concurrency,
      model: options.model,
      max_output_tokens: options.maxOutputTokens,
      poll_ms: options.pollMs,
      ramp_poll_ms: options.rampPollMs,
    },
    estimate_usd: result.estimateUsd,
    model_cost_usd: result.modelCostUsd,
    wall_s: result.wallS,
    figures: result.figures,
  });
}

/** Runs `npm run canary -- <argv>`; returns the exit code. */
export async function runCanaryCli(argv: readonly string[], io: CanaryIo): Promise<number> {
  const program = toProgram(io);
  try {
    program.parse([...argv], { from: "user" });
  } catch (error) {
    // commander has printed the help or the error: --help is no error, the rest exit 2.
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 2;
    throw error;
  }
  const flags = program.opts<CanaryFlags>();
  const options = toOptions(flags, io);
  if (options instanceof CanaryError) {
    io.err(`canary: ${options.message}`);
    return options.exitCode;
  }
  const say = flags.json === true ? io.err : io.out;
  say(`canary: ${options.tasks} tasks, W ${options.concurrency}, ${options.model}, max_output_tokens ${options.maxOutputTokens} → ${options.url}`);
  let result: CanaryResult;
  try {
    result = await runCanary(options, toProgressPrinter(say));
  } catch (error) {
    const failure = error instanceof CanaryError ? error : new CanaryError(error instanceof Error ? error.message : String(error), 1);
    io.err(`canary: ${failure.message}`);
    return failure.exitCode;
  }
  const f = result.figures;
  const ok = result.state === "completed" && f.failed === 0 && f.succeeded === f.tasks;
  if (flags.json === true) io.out(toJson(result, options));
  else {
    say(
      `swarm ${result.swarmId} ${result.state} in ${result.wallS.toFixed(1)} s: ${f.succeeded} succeeded, ${f.failed} failed; model cost $${result.modelCostUsd.toPrecision(3)}`,
    );
    for (const line of formatCanaryReport(f, { pollMs: options.pollMs, rampPollMs: options.rampPollMs })) io.out(line);
  }
  if (!ok) io.err(`canary: the swarm ended ${result.state} with ${f.succeeded}/${f.tasks} succeeded: its figures are not those of a healthy run`);
  return ok ? 0 : 1;
}
