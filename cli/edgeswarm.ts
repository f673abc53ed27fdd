#!/usr/bin/env node
// `edgeswarm`: the command line of the edgeswarm API (docs/cli-and-client.md), on the typed client.
// Exit codes: 0 every task succeeded, 1 some did not, 2 usage or config error, 3 the API refused
// or failed. Progress goes to stderr (a bar on a TTY, plain lines otherwise); data to stdout.
import { openAsBlob } from "node:fs";
import { readFile } from "node:fs/promises";
import { basename } from "node:path";
import { Command, CommanderError, Option } from "commander";
import { type Batch, createClient, EdgeswarmError, type EdgeswarmClient, formatSummary, type SwarmStatus } from "../src/client/index.ts";
import { EXIT, UsageError } from "./exit-codes.ts";
import { formatResultLine, formatResultsHeader, RESULT_FORMATS, type ResultFormat } from "./format-results.ts";
import { watchSwarm, type WatchOutput } from "./watch-swarm.ts";

interface GlobalOptions {
  url?: string;
  token?: string;
  json?: boolean;
}

const out = (line: string) => process.stdout.write(`${line}\n`);
// A reader that stops early (`… | head`) closes the pipe: that ends the output, it is no failure.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code === "EPIPE") process.exit(process.exitCode ?? 0);
  throw error;
});
const err = (line: string) => process.stderr.write(`${line}\n`);

function clientOf(command: Command): EdgeswarmClient {
  const options = command.optsWithGlobals<GlobalOptions>();
  const url = options.url ?? process.env.EDGESWARM_URL;
  const token = options.token ?? process.env.EDGESWARM_API_TOKEN;
  if (!url) throw new UsageError("no API URL: pass --url or set EDGESWARM_URL (npm start prints it)");
  if (!token) throw new UsageError("no API token: pass --token or set EDGESWARM_API_TOKEN (npm start prints it)");
  try {
    new URL(url);
  } catch {
    throw new UsageError(`--url / EDGESWARM_URL is not a URL: ${url}`);
  }
  return createClient({ baseUrl: url, token });
}

const jsonMode = (command: Command): boolean => command.optsWithGlobals<GlobalOptions>().json === true;

function watchOutput(command: Command): WatchOutput {
  const mode = jsonMode(command) ? "json" : process.stderr.isTTY ? "tty" : "plain";
  return { mode, out, err: process.stderr };
}

async function readJsonFile(path: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    throw new UsageError(`cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch (error) {
    throw new UsageError(`${path} is not JSON: ${(error as Error).message}`);
  }
}

const print = (command: Command, value: unknown, plain: () => void) => (jsonMode(command) ? out(JSON.stringify(value)) : plain());
const exitOfStatus = (status: SwarmStatus): number =>
  status.state === "completed" && status.counts.succeeded === status.tasks ? EXIT.ok : EXIT.notAllSucceeded;

/** Follows a started swarm to its end: progress, then the summary line (or the final status as JSON). */
async function followToEnd(command: Command, client: EdgeswarmClient, id: string): Promise<number> {
  const status = await watchSwarm(client, id, watchOutput(command));
  if (jsonMode(command)) out(JSON.stringify(status));
  else {
    out(formatSummary(status));
    out(`swarm ${id} ${status.state}${status.reason ? ` (${status.reason})` : ""}`);
  }
  return exitOfStatus(status);
}

let exitCode: number = EXIT.ok;
const program = new Command("edgeswarm")
  .description("Run and watch edgeswarm swarms from the command line.")
  .addOption(new Option("--url <url>", "API base URL (default: $EDGESWARM_URL)"))
  .addOption(new Option("--token <token>", "API token (default: $EDGESWARM_API_TOKEN)"))
  .option("--json", "machine-readable output: NDJSON events, then one JSON line")
  .showHelpAfterError()
  .exitOverride();

program
  .command("run <spec>")
  .description("start a swarm from a JSON spec file and follow it to its end")
  .option("--no-wait", "print the new swarm's id and return at once")
  .option("--idempotency-key <key>", "sent as Idempotency-Key")
  .action(async (specPath: string, options: { wait: boolean; idempotencyKey?: string }, command: Command) => {
    const spec = await readJsonFile(specPath);
    const client = clientOf(command);
    const created = await client.createSwarm(spec, options.idempotencyKey === undefined ? {} : { idempotencyKey: options.idempotencyKey });
    if (!options.wait) {
      print(command, created, () => out(created.id));
      return;
    }
    if (!jsonMode(command)) err(`swarm ${created.id} started: ${client.baseUrl}/v1/swarms/${created.id}`);
    exitCode = await followToEnd(command, client, created.id);
  });

program
  .command("watch <id>")
  .description("follow a swarm's live events to its end")
  .action(async (id: string, _options: unknown, command: Command) => {
    exitCode = await followToEnd(command, clientOf(command), id);
  });

program
  .command("status <id>")
  .description("a swarm's status")
  .action(async (id: string, _options: unknown, command: Command) => {
    const status = await clientOf(command).getSwarm(id);
    print(command, status, () => {
      out(`${status.id} ${status.name}: ${status.state}`);
      out(formatSummary(status));
    });
  });

program
  .command("results <id>")
  .description("a swarm's results, every page")
  .addOption(new Option("--format <format>", "output format").choices(RESULT_FORMATS).default("jsonl"))
  .action(async (id: string, options: { format: ResultFormat }, command: Command) => {
    const client = clientOf(command);
    if (options.format === "json") {
      const all = [];
      for await (const result of client.results(id)) all.push(result);
      out(JSON.stringify(all, null, 2));
      return;
    }
    for (const line of formatResultsHeader(options.format)) out(line);
    for await (const result of client.results(id)) out(formatResultLine(options.format, result));
  });

program
  .command("task <id> <task_id>")
  .description("one task's transcript: attempts, calls, messages, error, output")
  .action(async (id: string, taskId: string, _options: unknown, command: Command) => {
    const t = await clientOf(command).getTask(id, taskId);
    print(command, t, () => {
      out(`${t.task_id}: ${t.state} after ${t.attempts} attempt(s), ${t.usage.calls} call(s), ${t.usage.total_tokens} tokens, $${t.cost_usd.toFixed(6)}`);
      for (const c of t.calls)
        out(
          `  call ${c.attempt}.${c.turn} ${c.model} ${c.status}${c.error_class ? ` (${c.error_class})` : ""} ${c.latency_ms} ms ${c.usage.total_tokens ?? "?"} tokens`,
        );
      for (const m of t.messages) {
        const text =
          m.role === "assistant" && m.tool_calls
            ? `${m.content ?? ""} → ${m.tool_calls.map((tc) => `${tc.function.name}(${tc.function.arguments})`).join(", ")}`
            : (m.content ?? "");
        out(`  [${m.role}] ${text}`);
      }
      if (t.error) out(`  error: ${t.error.class}: ${t.error.message}`);
    });
  });

program
  .command("cancel <id>")
  .description("cancel a running swarm")
  .action(async (id: string, _options: unknown, command: Command) => {
    const status = await clientOf(command).cancel(id);
    print(command, status, () => out(`${status.id}: ${status.state}`));
  });

program
  .command("rerun <id>")
  .description("start a new swarm from a subset of an ended swarm's tasks")
  .option("--failed", "the failed tasks (the default)")
  .option("--not-succeeded", "every task that did not succeed")
  .option("--tasks <ids>", "these task ids, comma-separated")
  .option("--no-wait", "print the new swarm's id and return at once")
  .action(async (id: string, options: { failed?: boolean; notSucceeded?: boolean; tasks?: string; wait: boolean }, command: Command) => {
    const chosen = [options.failed, options.notSucceeded, options.tasks !== undefined].filter(Boolean).length;
    if (chosen > 1) throw new UsageError("pass one of --failed, --not-succeeded, --tasks");
    const selection = options.tasks !== undefined ? options.tasks.split(",").filter((s) => s !== "") : options.notSucceeded ? "not_succeeded" : "failed";
    const client = clientOf(command);
    const created = await client.rerun(id, selection);
    if (!options.wait) {
      print(command, created, () => out(created.id));
      return;
    }
    if (!jsonMode(command)) err(`rerun ${created.id} of ${id} started (${created.tasks} tasks)`);
    exitCode = await followToEnd(command, client, created.id);
  });

program
  .command("estimate <spec>")
  .description("price a spec before running it")
  .option("--jobs-per-day <n>", "project a monthly cost at this many runs a day")
  .action(async (specPath: string, options: { jobsPerDay?: string }, command: Command) => {
    const jobs = options.jobsPerDay === undefined ? undefined : Number(options.jobsPerDay);
    if (jobs !== undefined && !(jobs > 0)) throw new UsageError(`--jobs-per-day must be a positive number, not ${options.jobsPerDay}`);
    const estimate = await clientOf(command).estimate(await readJsonFile(specPath), jobs === undefined ? undefined : { jobs_per_day: jobs });
    out(JSON.stringify(estimate, null, jsonMode(command) ? undefined : 2));
  });

program
  .command("usage")
  .description("usage and cost from the ledger")
  .option("--from <date>", "ISO date or time (default: 30 days ago)")
  .option("--to <date>", "ISO date or time (default: now)")
  .addOption(new Option("--group-by <key>", "group rows by").choices(["model", "day", "swarm", "token"]))
  .action(async (options: { from?: string; to?: string; groupBy?: "model" | "day" | "swarm" | "token" }, command: Command) => {
    const query = {
      ...(options.from ? { from: options.from } : {}),
      ...(options.to ? { to: options.to } : {}),
      ...(options.groupBy ? { group_by: options.groupBy } : {}),
    };
    out(JSON.stringify(await clientOf(command).usage(query), null, jsonMode(command) ? undefined : 2));
  });

const schedules = program.command("schedules").description("cron schedules that start swarms");
schedules.command("list").action(async (_options: unknown, command: Command) => {
  out(JSON.stringify(await clientOf(command).listSchedules(), null, jsonMode(command) ? undefined : 2));
});
schedules
  .command("create <spec>")
  .requiredOption("--name <name>", "the schedule's name")
  .requiredOption("--cron <expr>", "a 5-field cron expression (UTC)")
  .option("--disabled", "save it disabled")
  .action(async (specPath: string, options: { name: string; cron: string; disabled?: boolean }, command: Command) => {
    const spec = await readJsonFile(specPath);
    const schedule = await clientOf(command).createSchedule({ name: options.name, cron: options.cron, spec, enabled: options.disabled !== true });
    print(command, schedule, () => out(schedule.id));
  });
schedules.command("delete <id>").action(async (id: string, _options: unknown, command: Command) => {
  await clientOf(command).deleteSchedule(id);
  print(command, { deleted: id }, () => out(`deleted ${id}`));
});

const parseScopes = (text: string): ("admin" | "run" | "read")[] => {
  const scopes = text.split(",").filter((s) => s !== "");
  const bad = scopes.filter((s) => !["admin", "run", "read"].includes(s));
  if (bad.length > 0 || scopes.length === 0) throw new UsageError(`--scopes takes admin, run, read (comma-separated), not "${text}"`);
  return scopes as ("admin" | "run" | "read")[];
};
const parseLimits = (text: string | undefined): Record<string, unknown> | undefined => {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    throw new UsageError(`--limits must be a JSON object, e.g. '{"rpm":600}', not ${text}`);
  }
};

const keys = program.command("keys").description("API keys (admin scope)");
keys.command("list").action(async (_options: unknown, command: Command) => {
  out(JSON.stringify(await clientOf(command).listKeys(), null, jsonMode(command) ? undefined : 2));
});
keys
  .command("create")
  .requiredOption("--tenant <id>", "the tenant the key belongs to")
  .requiredOption("--name <name>", "a name for the key")
  .requiredOption("--scopes <scopes>", "admin, run, read (comma-separated)")
  .option("--expires-at <iso>", "when the key stops working")
  .option("--rpm <n>", "requests a minute for this key")
  .action(async (options: { tenant: string; name: string; scopes: string; expiresAt?: string; rpm?: string }, command: Command) => {
    const rpm = options.rpm === undefined ? undefined : Number(options.rpm);
    if (rpm !== undefined && !(Number.isInteger(rpm) && rpm > 0)) throw new UsageError(`--rpm must be a positive whole number, not ${options.rpm}`);
    const key = await clientOf(command).createKey({
      tenant_id: options.tenant,
      name: options.name,
      scopes: parseScopes(options.scopes),
      ...(options.expiresAt ? { expires_at: options.expiresAt } : {}),
      ...(rpm !== undefined ? { rpm } : {}),
    });
    print(command, key, () => {
      out(`${key.id} (${key.scopes.join(",")}) for ${key.tenant_id}`);
      out(`key: ${key.key}   (shown once: store it now)`);
    });
  });
keys.command("revoke <id>").action(async (id: string, _options: unknown, command: Command) => {
  await clientOf(command).revokeKey(id);
  print(command, { revoked: id }, () => out(`revoked ${id}`));
});
keys.command("rotate <id>").action(async (id: string, _options: unknown, command: Command) => {
  const key = await clientOf(command).rotateKey(id);
  print(command, key, () => out(`key: ${key.key}   (shown once: store it now)`));
});

const tenants = program.command("tenants").description("tenants (admin scope)");
tenants.command("list").action(async (_options: unknown, command: Command) => {
  out(JSON.stringify(await clientOf(command).listTenants(), null, jsonMode(command) ? undefined : 2));
});
tenants
  .command("create <name>")
  .option("--limits <json>", 'e.g. \'{"rpm":600,"monthly_usd":50}\'')
  .action(async (name: string, options: { limits?: string }, command: Command) => {
    const limits = parseLimits(options.limits);
    const tenant = await clientOf(command).createTenant({ name, ...(limits ? { limits } : {}) });
    print(command, tenant, () => out(tenant.id));
  });
tenants.command("get <id>").action(async (id: string, _options: unknown, command: Command) => {
  out(JSON.stringify(await clientOf(command).getTenant(id), null, jsonMode(command) ? undefined : 2));
});
tenants
  .command("update <id>")
  .option("--name <name>")
  .option("--limits <json>")
  .action(async (id: string, options: { name?: string; limits?: string }, command: Command) => {
    const limits = parseLimits(options.limits);
    if (options.name === undefined && limits === undefined) throw new UsageError("pass --name and/or --limits");
    const tenant = await clientOf(command).updateTenant(id, { ...(options.name ? { name: options.name } : {}), ...(limits ? { limits } : {}) });
    out(JSON.stringify(tenant, null, jsonMode(command) ? undefined : 2));
  });
tenants.command("delete <id>").action(async (id: string, _options: unknown, command: Command) => {
  await clientOf(command).deleteTenant(id);
  print(command, { deleted: id }, () => out(`deleted ${id}`));
});

const files = program.command("files").description("batch input and output files (OpenAI's Files API)");
files.command("upload <path>").action(async (file: string, _options: unknown, command: Command) => {
  let blob: Blob;
  try {
    // Streams from disk as it is sent: a 200 MB file is never read whole.
    blob = await openAsBlob(file);
  } catch (error) {
    throw new UsageError(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
  const uploaded = await clientOf(command).uploadFile(blob, basename(file));
  print(command, uploaded, () => out(`${uploaded.id} ${uploaded.bytes} bytes ${uploaded.filename}`));
});
files
  .command("get <id>")
  .option("--content", "write the file's bytes to stdout instead of its description")
  .action(async (id: string, options: { content?: boolean }, command: Command) => {
    const client = clientOf(command);
    if (options.content === true) {
      const reader = (await client.fileContent(id)).getReader();
      for (let next = await reader.read(); !next.done; next = await reader.read()) process.stdout.write(next.value);
      return;
    }
    out(JSON.stringify(await client.getFile(id), null, jsonMode(command) ? undefined : 2));
  });

const batchLine = (batch: Batch): string =>
  `${batch.id} ${batch.status} ${batch.request_counts.completed}/${batch.request_counts.total} done, ${batch.request_counts.failed} failed` +
  ` swarm=${batch.metadata["edgeswarm.swarm_id"] ?? "-"} output=${batch.output_file_id ?? "-"} errors=${batch.error_file_id ?? "-"}`;

const batches = program.command("batches").description("batches (OpenAI's Batch API): each runs as a swarm");
batches
  .command("list")
  .option("--limit <n>", "batches a page (1-100)", "20")
  .option("--after <id>", "the last batch id of the page before")
  .action(async (options: { limit: string; after?: string }, command: Command) => {
    const limit = Number(options.limit);
    if (!(Number.isInteger(limit) && limit >= 1 && limit <= 100)) throw new UsageError(`--limit must be a whole number from 1 to 100, not ${options.limit}`);
    const page = await clientOf(command).listBatches({ limit, ...(options.after ? { after: options.after } : {}) });
    print(command, page, () => {
      for (const batch of page.data) out(batchLine(batch));
      if (page.has_more) out(`more: --after ${page.last_id}`);
    });
  });
batches.command("get <id>").action(async (id: string, _options: unknown, command: Command) => {
  const batch = await clientOf(command).getBatch(id);
  print(command, batch, () => out(batchLine(batch)));
});
batches.command("cancel <id>").action(async (id: string, _options: unknown, command: Command) => {
  const batch = await clientOf(command).cancelBatch(id);
  print(command, batch, () => out(batchLine(batch)));
});

program
  .command("me")
  .description("the caller's tenant, key, scopes, limits and spend")
  .action(async (_options: unknown, command: Command) => {
    out(JSON.stringify(await clientOf(command).me(), null, jsonMode(command) ? undefined : 2));
  });

for (const command of program.commands) command.exitOverride().showHelpAfterError();
for (const group of [schedules, keys, tenants, files, batches]) for (const command of group.commands) command.exitOverride();

try {
  await program.parseAsync(process.argv);
} catch (error) {
  exitCode = toExitCode(error);
}
process.exitCode = exitCode;

function toExitCode(error: unknown): number {
  if (error instanceof CommanderError) {
    // --help and --version are not errors.
    return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
  }
  if (error instanceof UsageError) {
    err(`edgeswarm: ${error.message}`);
    return EXIT.usage;
  }
  if (error instanceof EdgeswarmError) {
    err(`edgeswarm: ${error.code === "network" ? "" : `the API refused (${error.status} ${error.code}): `}${error.message}`);
    for (const d of error.details) err(`  ${d.path}: ${d.message}`);
    if (error.requestId) err(`  request id: ${error.requestId}`);
    return EXIT.api;
  }
  err(`edgeswarm: ${error instanceof Error ? error.message : String(error)}`);
  return EXIT.api;
}
