// Secrets stay secret, proven on the real local stack (`wrangler dev`, both Workers, the mock model):
// tenants and keys are made through the API, swarms run with tools, tool errors, upstream 429s and
// 5xx with retries, keys are rotated and revoked and then presented again. Then every HTTP response,
// every line wrangler and workerd logged, and every byte of the persisted local state (D1 and every
// Durable Object's SQLite files) are scanned for the upstream key, WEBHOOK_SECRET, the API token and
// each tenant key's secret, SECRETS_KEY and a tenant secret (PUT /v1/secrets) an MCP server's
// credential sends as its bearer token: zero hits. The one place a key may appear is its own
// create/rotate answer; the tenant secret's only destination is the MCP server's Authorization header.
import { createHash, randomBytes } from "node:crypto";
import { readdir, readFile, rm } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { ROOT, generateToken, startStack, type Stack } from "../../scripts/lib/local-stack.ts";
import { startMockMcp, type MockMcpHandle } from "../../dev/mock-mcp/server.ts";

const persistTo = path.join(ROOT, ".tmp", "e2e-secrets-state");
const UPSTREAM_KEY = `sk-upstream-${randomBytes(18).toString("hex")}`;
const WEBHOOK_SECRET = `whsec_scan_${randomBytes(18).toString("hex")}`;
const SECRETS_KEY = `sk_scan_${randomBytes(18).toString("hex")}`;
const TENANT_SECRET = `tok_scan_${randomBytes(18).toString("hex")}`;
let stack: Stack;
let mcp: MockMcpHandle;

/** Every response the test got: status, headers and body, as text. */
const transcript: { label: string; text: string }[] = [];
/** Responses that legitimately carry one key: its create or rotate answer (excluded from the scan). */
const keyAnswers = new Set<number>();
/** Tenant key secrets minted during the run. */
const tenantKeys: string[] = [];

async function call(method: string, urlPath: string, options: { token?: string; json?: unknown } = {}): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${stack.url}${urlPath}`, {
    method,
    headers: { authorization: `Bearer ${options.token ?? stack.token}`, ...(options.json === undefined ? {} : { "content-type": "application/json" }) },
    body: options.json === undefined ? undefined : JSON.stringify(options.json),
  });
  const text = await response.text();
  const headers: string[] = [];
  response.headers.forEach((value, name) => {
    headers.push(`${name}: ${value}`);
  });
  transcript.push({ label: `${method} ${urlPath} → ${response.status}`, text: `${headers.join("\n")}\n\n${text}` });
  let body: unknown = null;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  return { status: response.status, body };
}

async function mintKey(method: string, urlPath: string, json?: unknown): Promise<{ id: string; key: string }> {
  const { status, body } = await call(method, urlPath, { json });
  expect(status, JSON.stringify(body)).toBeLessThan(300);
  keyAnswers.add(transcript.length - 1);
  const key = z.object({ id: z.string(), key: z.string().regex(/^es_local_[0-9a-f]{48}$/) }).parse(body);
  tenantKeys.push(key.key);
  return key;
}

async function runSwarm(token: string, spec: unknown): Promise<Record<string, unknown>> {
  const started = await call("POST", "/v1/swarms", { token, json: spec });
  expect(started.status, JSON.stringify(started.body)).toBe(202);
  const { id } = z.object({ id: z.string() }).parse(started.body);
  const deadline = Date.now() + 120_000;
  for (;;) {
    const { body } = await call("GET", `/v1/swarms/${id}`, { token });
    const status = z.record(z.string(), z.unknown()).parse(body);
    if (["completed", "completed_with_failures", "failed", "cancelled"].includes(String(status.state))) {
      await call("GET", `/v1/swarms/${id}/results?limit=1000`, { token });
      return status;
    }
    if (Date.now() > deadline) throw new Error(`swarm ${id} still ${String(status.state)}`);
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
}

/** Every file under `dir`, recursively. */
async function listFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  // Files only, each once: the agent session's R2 state is a symlink to the orchestrator's (one local
  // bucket for both, scripts/lib/local-stack.ts), whose files the walk reaches through the real path.
  const nested = await Promise.all(
    entries.filter((e) => !e.isSymbolicLink()).map((e) => (e.isDirectory() ? listFiles(path.join(dir, e.name)) : Promise.resolve([path.join(dir, e.name)]))),
  );
  return nested.flat();
}

beforeAll(async () => {
  await rm(persistTo, { recursive: true, force: true });
  stack = await startStack({
    port: 0,
    apiToken: generateToken(),
    modelApiKey: UPSTREAM_KEY,
    webhookSecret: WEBHOOK_SECRET,
    secretsKey: SECRETS_KEY,
    mock: { latency: 20 },
    persistTo,
    allowPrivateNetwork: true,
    log: "capture",
  });
  mcp = await startMockMcp({ port: 0, latencyMs: 5 });
});

afterAll(async () => {
  await stack?.stop();
  await mcp?.close();
});

describe("secrets stay secret", () => {
  it("no response, log line, D1 row or Durable Object row holds a key, the upstream key or WEBHOOK_SECRET", async () => {
    const mockHost = new URL(stack.mock?.url ?? "").host;
    const created = await call("POST", "/v1/tenants", { json: { name: "scan team", limits: { rpm: 1_000 } } });
    expect(created.status).toBe(201);
    const tenantId = z.object({ id: z.string() }).parse(created.body).id;
    const admin = await mintKey("POST", "/v1/keys", { tenant_id: tenantId, name: "scan admin", scopes: ["admin"] });
    const runner = await mintKey("POST", "/v1/keys", { tenant_id: tenantId, name: "scan runner", scopes: ["run"] });

    // Tools: http_fetch of the mock's fixtures, the signed lint webhook (its key is the default
    // tenant's, so the scan tenant's calls are refused: tool errors), the scratchpad.
    const tools = {
      name: "scan tools",
      model: "mock-1",
      system: "Fetch, lint, note. [mock:tool_turns=3]",
      tools: [
        "http_fetch",
        "scratchpad",
        {
          name: "lint",
          description: "Lint one file.",
          parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
          url: `http://${mockHost}/tools/lint`,
        },
      ],
      http_allowlist: [mockHost],
      tasks: ["auth.py", "db.py", "session.ts"].map((f) => ({
        id: f,
        prompt: `Review http://${mockHost}/fixtures/src/${f}: use http_fetch, then lint, then scratchpad_put.`,
      })),
      limits: { concurrency: 4, max_output_tokens: 256, timeout_s: 30, max_turns: 6, max_attempts: 4 },
    };
    expect((await runSwarm(stack.token, tools)).state).toBe("completed");
    expect((await runSwarm(runner.key, tools)).state).toMatch(/^completed/);

    // A tenant secret as an MCP server's credential: stored, listed, used by the lanes' calls.
    expect((await call("PUT", "/v1/secrets/code_search", { token: runner.key, json: { value: TENANT_SECRET } })).status).toBe(201);
    expect((await call("GET", "/v1/secrets", { token: runner.key })).status).toBe(200);
    const withMcp = await runSwarm(runner.key, {
      name: "scan mcp",
      model: "mock-1",
      system: "Look it up. [mock:tool_turns=1]",
      mcp_servers: [{ name: "code", url: `${mcp.url}/mcp`, tools: ["search_code", "failing_tool"], credential: "code_search" }],
      tasks: [{ prompt: "Use mcp__code__search_code to find token checks." }, { prompt: "Use mcp__code__failing_tool." }],
      limits: { concurrency: 2, max_output_tokens: 64, timeout_s: 20, max_turns: 3 },
    });
    expect(withMcp.state).toBe("completed");
    const bearers = mcp.stats().authorizations;
    expect(bearers.length).toBeGreaterThanOrEqual(3);
    expect(bearers.every((b) => b === `Bearer ${TENANT_SECRET}`)).toBe(true);

    // Upstream errors with retries: 429s, 5xx and a timeout-free failure the engine retries.
    stack.mock?.setScenario({ script: ["429", "500", "502", "429", "ok", "500"], retry_after_s: 0 });
    const retried = await runSwarm(admin.key, {
      name: "scan retries",
      model: "mock-1",
      tasks: Array.from({ length: 6 }, (_, i) => ({ prompt: `Task ${i}` })),
      limits: { concurrency: 3, max_output_tokens: 32, timeout_s: 20, max_attempts: 5 },
    });
    expect(retried.state).toMatch(/^completed/);
    stack.mock?.setScenario({});

    // Rotate, revoke, and present the dead secrets again (they are refused, and must not be logged).
    const rotated = await mintKey("POST", `/v1/keys/${runner.id}/rotate`);
    expect((await call("GET", "/v1/me", { token: runner.key })).status).toBe(401);
    expect((await call("DELETE", `/v1/keys/${admin.id}`)).status).toBe(204);
    expect((await call("GET", "/v1/me", { token: admin.key })).status).toBe(401);
    expect((await call("GET", "/v1/me", { token: rotated.key })).status).toBe(200);
    for (const p of ["/v1/keys", "/v1/audit", "/v1/tenants", `/v1/usage?group_by=swarm`, "/v1/webhooks/signing-key"]) await call("GET", p);
    // A malformed request that echoes nothing secret either.
    await call("POST", "/v1/keys", { json: { tenant_id: tenantId, name: "x", scopes: ["admin"], key: rotated.key } });

    const secrets: [string, string][] = [
      ["the upstream key", UPSTREAM_KEY],
      ["WEBHOOK_SECRET", WEBHOOK_SECRET],
      ["SECRETS_KEY", SECRETS_KEY],
      ["a tenant secret (an MCP credential)", TENANT_SECRET],
      ["the API_TOKENS token", stack.token],
      ...tenantKeys.flatMap((key, i): [string, string][] => [
        [`tenant key ${i}`, key],
        // Its secret part alone (after the public prefix `es_local_` + 8 hex chars).
        [`tenant key ${i} secret part`, key.slice("es_local_".length + 8)],
      ]),
    ];

    // The scan can see what it looks for: each minted key is in its own answer, its digest is in D1's
    // file, and the swarm's system prompt (kept only in its SwarmRoom) is in a Durable Object's file.
    expect([...keyAnswers].map((i) => transcript[i]?.text ?? "").join("\n")).toContain(rotated.key);
    const hits: string[] = [];
    transcript.forEach(({ label, text }, i) => {
      if (keyAnswers.has(i)) return;
      for (const [name, secret] of secrets) if (text.includes(secret)) hits.push(`response ${label}: ${name}`);
    });
    const logs = stack.output();
    expect(logs.length).toBeGreaterThan(0);
    for (const [name, secret] of secrets) if (logs.includes(secret)) hits.push(`wrangler/workerd output: ${name}`);

    // Every byte of local state: D1's and each Durable Object's SQLite files (WAL included), read raw.
    const files = await listFiles(persistTo);
    const sqliteFiles = files.filter((f) => /\.sqlite(-wal|-shm)?$/.test(f));
    expect(sqliteFiles.length).toBeGreaterThan(3);
    const digest = createHash("sha256").update(rotated.key).digest("hex");
    let digestSeen = false;
    let promptSeen = false;
    for (const file of files) {
      const bytes = await readFile(file);
      const asText = bytes.toString("latin1");
      digestSeen ||= asText.includes(digest);
      promptSeen ||= asText.includes("Fetch, lint, note.");
      for (const [name, secret] of secrets) if (asText.includes(secret)) hits.push(`${path.relative(persistTo, file)}: ${name}`);
    }
    expect(digestSeen && promptSeen).toBe(true);
    console.log(
      `secrets scan: ${secrets.length} secrets × (${transcript.length - keyAnswers.size} responses, ${logs.split("\n").length} log lines, ${files.length} state files of which ${sqliteFiles.length} SQLite): ${hits.length} hits`,
    );
    expect(hits).toEqual([]);
  });
});
