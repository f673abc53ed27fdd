// The OpenAI Batch API end to end, through the official `openai` Node SDK, against the local stack
// (`wrangler dev`, both Workers, the mock model): upload, create, poll, download, list, cancel,
// every validation failure, usage against the ledger, one upstream call per line.
import { rm } from "node:fs/promises";
import path from "node:path";
import { Readable } from "node:stream";
import OpenAI, { toFile } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { ROOT, generateToken, startStack, type Stack } from "../../scripts/lib/local-stack.ts";

const persistTo = path.join(ROOT, ".tmp", "e2e-batches-state");
let stack: Stack;
let client: OpenAI;

type Batch = Awaited<ReturnType<OpenAI["batches"]["retrieve"]>>;

function line(customId: string, content: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    custom_id: customId,
    method: "POST",
    url: "/v1/chat/completions",
    body: { model: "mock-1", messages: [{ role: "user", content }], max_tokens: 32, ...extra },
  });
}

async function uploadLines(lines: readonly string[], name = "requests.jsonl"): Promise<string> {
  const file = await client.files.create({ file: await toFile(Buffer.from(`${lines.join("\n")}\n`), name), purpose: "batch" });
  return file.id;
}

async function waitForBatch(id: string, done: (batch: Batch) => boolean, timeoutMs = 120_000): Promise<Batch> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const batch = await client.batches.retrieve(id);
    if (done(batch)) return batch;
    if (Date.now() > deadline) throw new Error(`batch ${id} still ${batch.status} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
}

const ENDED = new Set(["completed", "failed", "cancelled", "expired"]);

const OutputLineSchema = z.object({
  id: z.string(),
  custom_id: z.string(),
  response: z.object({
    status_code: z.literal(200),
    request_id: z.string(),
    body: z.object({
      object: z.literal("chat.completion"),
      model: z.string(),
      choices: z.array(z.object({ message: z.object({ role: z.literal("assistant"), content: z.string().nullable() }), finish_reason: z.string() })),
      usage: z.object({ prompt_tokens: z.number(), completion_tokens: z.number(), total_tokens: z.number() }),
    }),
  }),
  error: z.null(),
});
const ErrorLineSchema = z.object({ id: z.string(), custom_id: z.string(), response: z.null(), error: z.object({ code: z.string(), message: z.string() }) });

async function readLines(fileId: string): Promise<unknown[]> {
  const text = await (await client.files.content(fileId)).text();
  return text
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l));
}

beforeAll(async () => {
  await rm(persistTo, { recursive: true, force: true });
  stack = await startStack({ port: 0, apiToken: generateToken(), mock: { latency: 20 }, persistTo, log: "capture" });
  client = new OpenAI({ apiKey: stack.token, baseURL: `${stack.url}/v1`, maxRetries: 0, timeout: 60_000 });
});

afterAll(async () => {
  if (process.env.BATCH_E2E_LOG !== undefined) (await import("node:fs")).writeFileSync(process.env.BATCH_E2E_LOG, stack?.output() ?? "");
  await stack?.stop();
});

describe("the Batch API through the openai SDK", () => {
  it("uploads by toFile and by stream, runs a batch to completion, one upstream call per line, usage = the ledger", async () => {
    const lines = Array.from({ length: 30 }, (_, i) => line(`req-${i + 1}`, `Say hello to ${i + 1}`, i === 0 ? { temperature: 0.2 } : {}));
    const inputId = await uploadLines(lines);
    // The same file as a Node stream (the SDK streams it as a multipart part).
    const streamed = await client.files.create({
      file: await toFile(Readable.from([Buffer.from(`${lines.join("\n")}\n`)]), "streamed.jsonl"),
      purpose: "batch",
    });
    expect(streamed.bytes).toBe(Buffer.byteLength(`${lines.join("\n")}\n`));
    expect(await (await client.files.content(streamed.id)).text()).toBe(`${lines.join("\n")}\n`);

    const callsBefore = stack.mock?.stats().calls ?? 0;
    const created = await client.batches.create({
      input_file_id: inputId,
      endpoint: "/v1/chat/completions",
      completion_window: "24h",
      metadata: { team: "e2e" },
    });
    expect(["validating", "in_progress"]).toContain(created.status);
    const done = await waitForBatch(created.id, (b) => ENDED.has(b.status));
    expect(done.status).toBe("completed");
    expect(done.request_counts).toEqual({ total: 30, completed: 30, failed: 0 });
    expect(done.error_file_id).toBeNull();
    const swarmId = String(done.metadata?.["edgeswarm.swarm_id"]);
    expect(swarmId).toMatch(/^sw_/);
    expect(done.metadata?.team).toBe("e2e");

    const output = (await readLines(String(done.output_file_id))).map((l) => OutputLineSchema.parse(l));
    expect(output.map((l) => l.custom_id)).toEqual(lines.map((_, i) => `req-${i + 1}`));
    expect(stack.mock?.stats().calls ?? 0).toBe(callsBefore + 30);

    // A batch is a swarm: it shows in GET /v1/swarms, and in the usage report, which reads the D1 ledger.
    const swarms = await (await fetch(`${stack.url}/v1/swarms?limit=100`, { headers: { authorization: `Bearer ${stack.token}` } })).text();
    expect(swarms).toContain(swarmId);
    const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);
    const LedgerSchema = z.object({
      rows: z.array(z.object({ key: z.string(), calls: z.number(), prompt_tokens: z.number().nullable(), completion_tokens: z.number().nullable() })),
    });
    const readLedger = async () => {
      const report = await fetch(`${stack.url}/v1/usage?from=${day(-1)}&to=${day(1)}&group_by=swarm`, { headers: { authorization: `Bearer ${stack.token}` } });
      return LedgerSchema.parse(await report.json()).rows.find((row) => row.key === swarmId);
    };
    // Ledger rows are flushed from the SwarmRoom within LEDGER_FLUSH_MS.
    let ledger = await readLedger();
    for (let i = 0; i < 40 && ledger?.calls !== 30; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      ledger = await readLedger();
    }
    expect(ledger?.calls).toBe(30);
    const usage = z.object({ input_tokens: z.number(), output_tokens: z.number() }).parse((done as unknown as { usage: unknown }).usage);
    expect(usage).toMatchObject({ input_tokens: ledger?.prompt_tokens, output_tokens: ledger?.completion_tokens });
    expect(output.reduce((sum, l) => sum + l.response.body.usage.prompt_tokens, 0)).toBe(ledger?.prompt_tokens);
  });

  it("lists batches in pages with after/limit", async () => {
    const inputId = await uploadLines([line("a", "x")]);
    const ids: string[] = [];
    for (let i = 0; i < 3; i += 1)
      ids.push((await client.batches.create({ input_file_id: inputId, endpoint: "/v1/chat/completions", completion_window: "24h" })).id);
    const first = await client.batches.list({ limit: 2 });
    expect(first.data.map((b) => b.id)).toEqual([ids[2], ids[1]]);
    expect(first.hasNextPage()).toBe(true);
    const second = await first.getNextPage();
    expect(second.data[0]?.id).toBe(ids[0]);
    for (const id of ids) await waitForBatch(id, (b) => ENDED.has(b.status));
  });

  it("fails a batch with one error per bad line, 1-based, spending nothing", async () => {
    const callsBefore = stack.mock?.stats().calls ?? 0;
    const inputId = await uploadLines([
      line("ok-1", "fine"),
      "{not json",
      line("ok-1", "duplicate"),
      JSON.stringify({ custom_id: "u", method: "POST", url: "/v1/embeddings", body: { model: "mock-1", messages: [{ role: "user", content: "x" }] } }),
      JSON.stringify({ custom_id: "m", method: "POST", url: "/v1/chat/completions", body: { messages: [{ role: "user", content: "x" }] } }),
      JSON.stringify({ custom_id: "g", method: "GET", url: "/v1/chat/completions", body: { model: "mock-1", messages: [{ role: "user", content: "x" }] } }),
    ]);
    const batch = await client.batches.create({ input_file_id: inputId, endpoint: "/v1/chat/completions", completion_window: "24h" });
    expect(batch.status).toBe("failed");
    expect(batch.errors?.data?.map((e) => [e.line, e.code, e.param])).toEqual([
      [2, "invalid_json_line", null],
      [3, "duplicate_custom_id", "custom_id"],
      [4, "invalid_url", "url"],
      [5, "invalid_request", "body.model"],
      [6, "invalid_request", "method"],
    ]);
    expect(batch.request_counts).toEqual({ total: 0, completed: 0, failed: 0 });
    expect(stack.mock?.stats().calls ?? 0).toBe(callsBefore);
  });

  it("refuses bad requests with the error shape: wrong endpoint, window, unknown file, bad metadata", async () => {
    const inputId = await uploadLines([line("a", "x")]);
    const cases: [Record<string, unknown>, number, string][] = [
      [{ input_file_id: inputId, endpoint: "/v1/embeddings", completion_window: "24h" }, 400, "endpoint"],
      [{ input_file_id: inputId, endpoint: "/v1/chat/completions", completion_window: "1h" }, 400, "completion_window"],
      [{ input_file_id: "file-aaaaaaaaaaaaaaaaaaaaaaaa", endpoint: "/v1/chat/completions", completion_window: "24h" }, 404, "input_file_id"],
      [
        { input_file_id: inputId, endpoint: "/v1/chat/completions", completion_window: "24h", metadata: { "edgeswarm.max_usd": "lots" } },
        400,
        "metadata.edgeswarm.max_usd",
      ],
    ];
    for (const [body, status, param] of cases) {
      const error = await client.batches.create(body as never).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OpenAI.APIError);
      const apiError = error as InstanceType<typeof OpenAI.APIError>;
      expect(apiError.status).toBe(status);
      expect(JSON.stringify(apiError.error)).toContain(param);
    }
  });

  it("replaces every line's model with metadata edgeswarm.model", async () => {
    const inputId = await uploadLines([
      JSON.stringify({
        custom_id: "x",
        method: "POST",
        url: "/v1/chat/completions",
        body: { model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] },
      }),
    ]);
    const batch = await client.batches.create({
      input_file_id: inputId,
      endpoint: "/v1/chat/completions",
      completion_window: "24h",
      metadata: { "edgeswarm.model": "mock-1" },
    });
    const done = await waitForBatch(batch.id, (b) => ENDED.has(b.status));
    expect(done.status).toBe("completed");
    const [out] = (await readLines(String(done.output_file_id))).map((l) => OutputLineSchema.parse(l));
    expect(out?.response.body.model).toBe("mock-1");
  });

  it("cancel keeps what finished and writes batch_cancelled lines for the rest", async () => {
    // Slow answers, so the cancel lands while most lines wait.
    stack.mock?.setScenario({ chunk_delay_ms: 200 });
    const lines = Array.from({ length: 200 }, (_, i) => line(`c-${i + 1}`, `slow ${i + 1}`));
    const inputId = await uploadLines(lines);
    const batch = await client.batches.create({ input_file_id: inputId, endpoint: "/v1/chat/completions", completion_window: "24h" });
    await waitForBatch(batch.id, (b) => b.request_counts !== undefined && b.request_counts.completed > 0, 60_000);
    const cancelling = await client.batches.cancel(batch.id);
    expect(["cancelling", "cancelled"]).toContain(cancelling.status);
    const done = await waitForBatch(batch.id, (b) => ENDED.has(b.status));
    expect(done.status).toBe("cancelled");
    const completed = done.request_counts?.completed ?? 0;
    expect(completed).toBeGreaterThan(0);
    expect(completed + (done.request_counts?.failed ?? 0)).toBe(200);
    const output = done.output_file_id ? (await readLines(done.output_file_id)).map((l) => OutputLineSchema.parse(l)) : [];
    const errors = (await readLines(String(done.error_file_id))).map((l) => ErrorLineSchema.parse(l));
    expect(output.length).toBe(completed);
    expect(errors.filter((e) => e.error.code !== "batch_cancelled")).toEqual([]);
    expect(new Set([...output, ...errors].map((l) => l.custom_id)).size).toBe(200);
    stack.mock?.setScenario({ chunk_delay_ms: 0 });
  });
});
