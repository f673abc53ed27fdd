// HTTP: Idempotency-Key on POST /v1/swarms and POST /v1/schedules, against local D1 and the real
// SwarmRoom: a retried POST starts nothing twice, another request under the key is 409, the key is
// per tenant, and a request that died holding a key is taken over without a second swarm.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { DEFAULT_TENANT_ID } from "../../../src/core/ids.ts";
import { toKeyedSwarmId } from "../idempotency.ts";
import { callApi, createTenantKey, TOKEN_A, validSpec } from "./call-api.ts";
import { readErrorBody } from "./error-body.ts";

const CreatedSchema = z.object({ id: z.string(), state: z.string() });
let counter = 0;
function newKey(): string {
  counter += 1;
  return `key-${Date.now().toString(36)}-${counter}`;
}

function postSwarm(key: string | null, spec: Record<string, unknown> = validSpec(), token = TOKEN_A): Promise<Response> {
  return callApi("/v1/swarms", { json: spec, token, headers: key === null ? {} : { "idempotency-key": key } });
}

async function swarmRows(id: string): Promise<number> {
  const row = await env.LEDGER_DB.prepare("SELECT COUNT(*) AS n FROM swarms WHERE id = ?1").bind(id).first<{ n: number }>();
  return row?.n ?? 0;
}

describe("Idempotency-Key on POST /v1/swarms", () => {
  it("the same key and body answer the first response again: same status, same id, one swarm", async () => {
    const key = newKey();
    const first = await postSwarm(key);
    expect(first.status).toBe(202);
    const created = CreatedSchema.parse(await first.json());
    expect(first.headers.get("idempotent-replayed")).toBeNull();

    const again = await postSwarm(key);
    expect(again.status).toBe(202);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.headers.get("location")).toBe(first.headers.get("location"));
    expect(CreatedSchema.parse(await again.json()).id).toBe(created.id);
    expect(await swarmRows(created.id)).toBe(1);
    // The id is the key's, so even a request that lost its record could not start a second swarm.
    expect(created.id).toBe(await toKeyedSwarmId(DEFAULT_TENANT_ID, key));
  });

  it("the same key with another body is 409 conflict, naming the header", async () => {
    const key = newKey();
    expect((await postSwarm(key)).status).toBe(202);
    const other = await postSwarm(key, validSpec({ name: "another review" }));
    expect(other.status).toBe(409);
    const error = await readErrorBody(other);
    expect(error.code).toBe("conflict");
    expect(error.details[0]?.path).toBe("headers.idempotency-key");
  });

  it("keys are per tenant: the same key under another tenant's key starts that tenant's own swarm", async () => {
    const key = newKey();
    const a = CreatedSchema.parse(await (await postSwarm(key, validSpec(), TOKEN_A)).json());
    const other = await createTenantKey({ name: "idempotency tenant" });
    const b = CreatedSchema.parse(await (await postSwarm(key, validSpec(), other.key)).json());
    expect(b.id).not.toBe(a.id);
  });

  it("a refused spec (400) is answered the same way again; a key is never needed", async () => {
    const key = newKey();
    const bad = validSpec({ tasks: [] });
    const first = await postSwarm(key, bad);
    expect(first.status).toBe(400);
    const again = await postSwarm(key, bad);
    expect(again.status).toBe(400);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect((await readErrorBody(again)).code).toBe("invalid_spec");
    expect((await postSwarm(null)).status).toBe(202);
  });

  it.each([
    ["empty", "", "must not be empty"],
    ["201 characters", "k".repeat(201), "at most 200 characters"],
    ["a control character", "key\u0007bell", "printable ASCII"],
  ])("refuses an Idempotency-Key that is %s with 400 naming the header", async (_label, key, message) => {
    const response = await postSwarm(key);
    expect(response.status).toBe(400);
    const error = await readErrorBody(response);
    expect(error.code).toBe("invalid_request");
    expect(error.details).toEqual([{ path: "headers.idempotency-key", message: expect.stringContaining(message) }]);
  });

  it("while the first request with the key runs, another is 409 with Retry-After", async () => {
    const key = newKey();
    const tenant = DEFAULT_TENANT_ID;
    // The first request claimed the key and has not answered yet (same fingerprint as any body: it is compared after).
    await env.LEDGER_DB.prepare("INSERT INTO idempotency_keys (tenant, key, fingerprint, created_at, expires_at) VALUES (?1, ?2, 'x', ?3, ?4)")
      .bind(tenant, key, Date.now(), Date.now() + 86_400_000)
      .run();
    const response = await postSwarm(key);
    expect(response.status).toBe(409);
  });

  it("a request that died holding its key is taken over, and the swarm it had started is the answer, not a second one", async () => {
    const key = newKey();
    const tenant = DEFAULT_TENANT_ID;
    const first = await postSwarm(key);
    const { id } = CreatedSchema.parse(await first.json());
    // Its record is lost as if the first invocation died before answering: only a stale claim is left.
    const fingerprint = await env.LEDGER_DB.prepare("SELECT fingerprint FROM idempotency_keys WHERE tenant = ?1 AND key = ?2")
      .bind(tenant, key)
      .first<{ fingerprint: string }>();
    await env.LEDGER_DB.prepare("UPDATE idempotency_keys SET status = NULL, response = NULL, created_at = ?3 WHERE tenant = ?1 AND key = ?2")
      .bind(tenant, key, Date.now() - 120_000)
      .run();
    expect(fingerprint).not.toBeNull();

    const retry = await postSwarm(key);
    expect(retry.status).toBe(202);
    expect(CreatedSchema.parse(await retry.json()).id).toBe(id);
    expect(await swarmRows(id)).toBe(1);
  });
});

describe("Idempotency-Key on POST /v1/schedules", () => {
  it("a retried save answers the first schedule again and saves one", async () => {
    const key = newKey();
    const body = { name: `nightly ${key}`, cron: "0 3 * * *", spec: validSpec() };
    const first = await callApi("/v1/schedules", { json: body, headers: { "idempotency-key": key } });
    expect(first.status).toBe(201);
    const { id } = CreatedSchema.pick({ id: true }).parse(await first.json());
    const again = await callApi("/v1/schedules", { json: body, headers: { "idempotency-key": key } });
    expect(again.status).toBe(201);
    expect(CreatedSchema.pick({ id: true }).parse(await again.json()).id).toBe(id);
    const rows = await env.LEDGER_DB.prepare("SELECT COUNT(*) AS n FROM schedules WHERE name = ?1").bind(body.name).first<{ n: number }>();
    expect(rows?.n).toBe(1);
  });
});
