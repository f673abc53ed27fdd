// POST/GET /v1/batches and cancel through the Worker's real entry, with no agent consuming (this
// project's queue goes nowhere): a batch's swarm, its budget and model from metadata, cancel with
// batch_cancelled error lines in line order, Idempotency-Key, another tenant's file. The e2e project
// runs batches to completion through the openai SDK (test/e2e/batches.test.ts).
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { batchForm, callApi, createTenantKey } from "./call-api.ts";
import { readErrorBody } from "./error-body.ts";

const BatchSchema = z.object({
  id: z.string().regex(/^batch_[a-z2-7]{24}$/),
  object: z.literal("batch"),
  status: z.string(),
  output_file_id: z.string().nullable(),
  error_file_id: z.string().nullable(),
  errors: z.object({ data: z.array(z.object({ code: z.string(), line: z.number(), param: z.string().nullable() })) }).nullable(),
  request_counts: z.object({ total: z.number(), completed: z.number(), failed: z.number() }),
  metadata: z.record(z.string(), z.string()),
});

function requestLine(customId: string, model = "mock-1"): string {
  return JSON.stringify({ custom_id: customId, method: "POST", url: "/v1/chat/completions", body: { model, messages: [{ role: "user", content: customId }] } });
}

async function uploadFile(token: string, lines: readonly string[]): Promise<string> {
  const response = await callApi("/v1/files", { token, body: batchForm("in.jsonl", `${lines.join("\n")}\n`) });
  expect(response.status).toBe(200);
  return z.object({ id: z.string() }).parse(await response.json()).id;
}

async function createBatch(token: string, inputFileId: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
  const response = await callApi("/v1/batches", {
    token,
    headers,
    json: { input_file_id: inputFileId, endpoint: "/v1/chat/completions", completion_window: "24h", ...extra },
  });
  return { response, batch: response.status === 200 ? BatchSchema.parse(await response.clone().json()) : null };
}

describe("POST /v1/batches", () => {
  it("starts a swarm whose tasks are the lines; budget and model come from metadata; the swarm lists", async () => {
    const tenant = await createTenantKey({ name: "batcher" });
    const fileId = await uploadFile(tenant.key, [requestLine("a", "gpt-4o-mini"), requestLine("b", "gpt-4o-mini")]);
    const { batch } = await createBatch(tenant.key, fileId, { metadata: { team: "x", "edgeswarm.model": "mock-1", "edgeswarm.max_usd": "2.5" } });
    expect(batch?.status).toBe("in_progress");
    expect(batch?.request_counts).toEqual({ total: 2, completed: 0, failed: 0 });
    const swarmId = batch?.metadata["edgeswarm.swarm_id"] ?? "";
    expect(batch?.metadata.team).toBe("x");
    const status = z
      .object({ tasks: z.number(), model: z.string(), budget: z.object({ max_usd: z.number().nullable() }).nullable() })
      .parse(await (await callApi(`/v1/swarms/${swarmId}`, { token: tenant.key })).json());
    expect(status).toMatchObject({ tasks: 2, model: "mock-1", budget: { max_usd: 2.5 } });
    expect(await (await callApi("/v1/swarms", { token: tenant.key })).text()).toContain(swarmId);
  });

  it("cancel keeps nothing unfinished: every line is a batch_cancelled error line, in line order", async () => {
    const tenant = await createTenantKey({ name: "canceller" });
    const fileId = await uploadFile(tenant.key, [requestLine("first"), requestLine("second"), requestLine("third")]);
    const { batch } = await createBatch(tenant.key, fileId);
    const cancelled = BatchSchema.parse(await (await callApi(`/v1/batches/${batch?.id}/cancel`, { method: "POST", token: tenant.key })).json());
    const done =
      cancelled.status === "cancelled" ? cancelled : BatchSchema.parse(await (await callApi(`/v1/batches/${batch?.id}`, { token: tenant.key })).json());
    expect(done).toMatchObject({ status: "cancelled", output_file_id: null, request_counts: { total: 3, completed: 0, failed: 3 } });
    const errors = (await (await callApi(`/v1/files/${done.error_file_id}/content`, { token: tenant.key })).text()).trim().split("\n");
    expect(errors.map((l) => JSON.parse(l))).toEqual(
      ["first", "second", "third"].map((customId, i) => ({
        id: `batch_req_l${i + 1}`,
        custom_id: customId,
        response: null,
        error: { code: "batch_cancelled", message: expect.any(String) },
      })),
    );
    const again = await callApi(`/v1/batches/${batch?.id}/cancel`, { method: "POST", token: tenant.key });
    expect(again.status).toBe(200);
  });

  it("a batch still running past its 24 h window is cancelled and ends expired, its lines batch_expired", async () => {
    const tenant = await createTenantKey({ name: "expiring" });
    const fileId = await uploadFile(tenant.key, [requestLine("one"), requestLine("two")]);
    const { batch } = await createBatch(tenant.key, fileId);
    // The window's end moved into the past, as 24 h later.
    await env.LEDGER_DB.prepare("UPDATE batches SET expires_at = ? WHERE id = ?")
      .bind(Date.now() - 1, batch?.id)
      .run();
    const read = BatchSchema.parse(await (await callApi(`/v1/batches/${batch?.id}`, { token: tenant.key })).json());
    const done = read.status === "expired" ? read : BatchSchema.parse(await (await callApi(`/v1/batches/${batch?.id}`, { token: tenant.key })).json());
    expect(done).toMatchObject({ status: "expired", output_file_id: null, request_counts: { total: 2, completed: 0, failed: 2 } });
    const lines = (await (await callApi(`/v1/files/${done.error_file_id}/content`, { token: tenant.key })).text()).trim().split("\n");
    expect(lines.map((l) => JSON.parse(l).error.code)).toEqual(["batch_expired", "batch_expired"]);
  });

  it("Idempotency-Key: the same request gives the same batch; another body with the key is 409", async () => {
    const tenant = await createTenantKey({ name: "idempotent" });
    const fileId = await uploadFile(tenant.key, [requestLine("a")]);
    const first = await createBatch(tenant.key, fileId, {}, { "idempotency-key": "batch-key-1" });
    const second = await createBatch(tenant.key, fileId, {}, { "idempotency-key": "batch-key-1" });
    expect(second.batch?.id).toBe(first.batch?.id);
    const other = await createBatch(tenant.key, fileId, { metadata: { x: "y" } }, { "idempotency-key": "batch-key-1" });
    expect(other.response.status).toBe(409);
    const list = z.object({ data: z.array(z.object({ id: z.string() })) }).parse(await (await callApi("/v1/batches", { token: tenant.key })).json());
    expect(list.data.map((b) => b.id)).toEqual([first.batch?.id]);
  });

  it("another tenant's input file is 404, and so is its batch", async () => {
    const a = await createTenantKey({ name: "a" });
    const b = await createTenantKey({ name: "b" });
    const fileId = await uploadFile(a.key, [requestLine("a")]);
    const { response } = await createBatch(b.key, fileId);
    expect(response.status).toBe(404);
    expect((await readErrorBody(response)).details[0]?.path).toBe("input_file_id");
    const { batch } = await createBatch(a.key, fileId);
    expect((await callApi(`/v1/batches/${batch?.id}`, { token: b.key })).status).toBe(404);
  });

  it("fails a batch whose line names a model the tenant may not use, spending nothing", async () => {
    const tenant = await createTenantKey({ name: "limited", limits: { models: ["mock-1"] } });
    const fileId = await uploadFile(tenant.key, [requestLine("a"), requestLine("b", "mock-economy")]);
    const { batch } = await createBatch(tenant.key, fileId);
    expect(batch?.status).toBe("failed");
    expect(batch?.errors?.data).toEqual([expect.objectContaining({ code: "model_not_found", line: 2, param: "body.model" })]);
  });
});
