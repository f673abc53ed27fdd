// HTTP: /v1/swarms against the real SwarmRoom Durable Object and local D1: spec validation,
// body limits, start, status, listing, results paging, tenant isolation and the event stream.
import { listDurableObjectIds } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { MAX_TASKS } from "../../../src/core/spec-schema.ts";
import { createClient } from "../../../src/client/index.ts";
import type { TaskReport } from "../../../src/core/swarm-contract.ts";
import { createApp } from "../app.ts";
import { callApi, createTenantKey, ORIGIN, TOKEN_A, validSpec } from "./call-api.ts";
import { readErrorBody } from "./error-body.ts";

// A second tenant, and one whose monthly budget ($0.000001) cannot pay for a single call.
const TOKEN_B = (await createTenantKey({ name: "swarms-b", scopes: ["run"] })).key;
const CAPPED_TOKEN = (await createTenantKey({ name: "capped", scopes: ["run"], limits: { monthly_usd: 0.000001 } })).key;

const CreatedSchema = z.strictObject({
  id: z.string().regex(/^sw_[a-z2-7]{20}$/),
  state: z.literal("running"),
  urls: z.strictObject({ self: z.string(), results: z.string(), events: z.string() }),
});

const CountsSchema = z.strictObject({
  queued: z.number(),
  running: z.number(),
  succeeded: z.number(),
  failed: z.number(),
  cancelled: z.number(),
  skipped_budget: z.number(),
  skipped: z.number(),
});
const StatusSchema = z.object({ id: z.string(), name: z.string(), state: z.string(), tasks: z.number(), counts: CountsSchema });

const ResultsSchema = z.strictObject({
  results: z.array(z.object({ task_id: z.string(), state: z.string() })),
  next_cursor: z.string().nullable(),
});

const ListSchema = z.strictObject({
  swarms: z.array(z.object({ id: z.string(), name: z.string(), model: z.string(), state: z.string(), tasks: z.number(), created_at: z.string() })),
  next_cursor: z.string().nullable(),
});

async function createSwarm(spec: Record<string, unknown> = validSpec(), token = TOKEN_A): Promise<z.infer<typeof CreatedSchema>> {
  const response = await callApi("/v1/swarms", { json: spec, token });
  expect(response.status).toBe(202);
  return CreatedSchema.parse(await response.json());
}

function room(swarmId: string) {
  return env.SWARM_ROOM.get(env.SWARM_ROOM.idFromName(swarmId));
}

/** Plays the agent Worker by hand: one lane pulls every task and records a success for each. */
async function finishAllTasks(swarmId: string, taskIds: string[]): Promise<void> {
  const lane = { ticket: "test-lane", slots: taskIds.length, final: false };
  const pulled = await room(swarmId).pull({ ...lane, reports: [], want: taskIds.length });
  const reports: TaskReport[] = pulled.granted.map((task) => ({
    taskId: task.taskId,
    attempt: task.attempt,
    outcome: { kind: "succeeded", output: `done: ${task.prompt}`, finishReason: "stop" },
    calls: [],
  }));
  await room(swarmId).pull({ ...lane, reports, want: 0, final: true });
}

const manyTasks = (n: number) => Array.from({ length: n }, (_, i) => ({ prompt: `task ${i}` }));

describe("POST /v1/swarms validation", () => {
  it.each<[string, unknown, string]>([
    ["missing name", { model: "mock-1", tasks: [{ prompt: "x" }] }, "name"],
    ["empty name", validSpec({ name: "" }), "name"],
    ["empty tasks", validSpec({ tasks: [] }), "tasks"],
    [`${MAX_TASKS + 1} tasks`, validSpec({ tasks: manyTasks(MAX_TASKS + 1) }), "tasks"],
    ["an empty prompt", validSpec({ tasks: [{ prompt: "a" }, { prompt: "b" }, { prompt: "c" }, { prompt: "" }] }), "tasks.3.prompt"],
    ["concurrency 0", validSpec({ limits: { concurrency: 0 } }), "limits.concurrency"],
    ["fractional concurrency", validSpec({ limits: { concurrency: 1.5 } }), "limits.concurrency"],
    ["an unknown limit", validSpec({ limits: { concurency: 4 } }), "limits"],
    ["an unknown top-level key", validSpec({ colour: "red" }), "(root)"],
    [
      "duplicate task ids",
      validSpec({
        tasks: [
          { id: "a", prompt: "1" },
          { id: "b", prompt: "2" },
          { id: "a", prompt: "3" },
        ],
      }),
      "tasks.2.id",
    ],
    ["an unknown response_format type", validSpec({ response_format: { type: "yaml" } }), "response_format.type"],
    ["json_schema without a schema", validSpec({ response_format: { type: "json_schema", json_schema: { name: "x" } } }), "response_format.json_schema.schema"],
    ["a spec that is an array", [validSpec()], "(root)"],
  ])("%s → 400 invalid_spec at %s", async (_case, spec, path) => {
    const response = await callApi("/v1/swarms", { json: spec });
    expect(response.status).toBe(400);
    const error = await readErrorBody(response);
    expect(error.code).toBe("invalid_spec");
    expect(error.details.map((d) => d.path)).toContain(path);
  });

  it.each([
    ["truncated JSON", '{"name": "x", "tasks": ['],
    ["an empty body", ""],
    ["not JSON at all", "name=x"],
  ])("%s → 400 invalid_request at (body)", async (_case, body) => {
    const response = await callApi("/v1/swarms", { body, headers: { "content-type": "application/json" } });
    expect(response.status).toBe(400);
    const error = await readErrorBody(response);
    expect(error.code).toBe("invalid_request");
    expect(error.details.map((d) => d.path)).toEqual(["(body)"]);
  });

  it.each([
    ["text/plain", { "content-type": "text/plain" }],
    ["form data", { "content-type": "application/x-www-form-urlencoded" }],
    ["a string body with no explicit type (sent as text/plain)", {}],
  ])("%s → 415", async (_case, headers) => {
    const response = await callApi("/v1/swarms", { body: JSON.stringify(validSpec()), headers });
    expect(response.status).toBe(415);
    expect((await readErrorBody(response)).code).toBe("unsupported_media_type");
  });

  it("accepts application/json with a charset", async () => {
    const response = await callApi("/v1/swarms", { body: JSON.stringify(validSpec()), headers: { "content-type": "application/json; charset=utf-8" } });
    expect(response.status).toBe(202);
  });
});

describe("body size limit", () => {
  const limit = Number(env.MAX_BODY_BYTES);

  it("refuses a body over MAX_BODY_BYTES with 413 naming the limit", async () => {
    const spec = validSpec({ system: "x".repeat(limit) });
    const response = await callApi("/v1/swarms", { json: spec });
    expect(response.status).toBe(413);
    const error = await readErrorBody(response);
    expect(error.code).toBe("payload_too_large");
    expect(error.message).toContain(`${limit} bytes`);
  });

  it("refuses a declared Content-Length over the limit before reading the body", async () => {
    const app = createApp();
    const response = await app.request(
      "/v1/swarms",
      { method: "POST", headers: { authorization: `Bearer ${TOKEN_A}`, "content-type": "application/json", "content-length": "1001" }, body: "{}" },
      { ...env, MAX_BODY_BYTES: "1000" },
    );
    expect(response.status).toBe(413);
    expect((await readErrorBody(response)).message).toContain("1000 bytes");
  });

  it("counts a streamed body without Content-Length as it arrives", async () => {
    const chunk = new TextEncoder().encode(JSON.stringify(validSpec({ system: "y".repeat(600) })));
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(chunk);
        controller.enqueue(chunk);
        controller.close();
      },
    });
    const response = await createApp().request(
      "/v1/swarms",
      { method: "POST", headers: { authorization: `Bearer ${TOKEN_A}`, "content-type": "application/json" }, body },
      { ...env, MAX_BODY_BYTES: "1000" },
    );
    expect(response.status).toBe(413);
    expect((await readErrorBody(response)).code).toBe("payload_too_large");
  });
});

describe("starting and reading a swarm", () => {
  it("answers 202 with the id, absolute urls and a Location header, and the swarm runs", async () => {
    const response = await callApi("/v1/swarms", { json: validSpec() });
    expect(response.status).toBe(202);
    const created = CreatedSchema.parse(await response.json());
    const self = `${ORIGIN}/v1/swarms/${created.id}`;
    expect(response.headers.get("location")).toBe(self);
    expect(created.urls).toEqual({ self, results: `${self}/results`, events: `${self}/events` });

    const status = await callApi(`/v1/swarms/${created.id}`);
    expect(status.status).toBe(200);
    const body = StatusSchema.parse(await status.json());
    expect(body).toMatchObject({ id: created.id, name: "review", state: "running", tasks: 3 });
    // No agent consumes the queue in this project: every task is queued or running, none finished.
    expect(body.counts.queued + body.counts.running).toBe(3);
    expect(body.counts.succeeded + body.counts.failed).toBe(0);
  });

  it("keeps the user's task ids and generates the missing ones, in order", async () => {
    const created = await createSwarm();
    const response = await callApi(`/v1/swarms/${created.id}/results`);
    expect(response.status).toBe(200);
    const page = ResultsSchema.parse(await response.json());
    expect(page.results.map((r) => r.task_id)).toEqual(["auth.py", "t00001", "t00002"]);
    expect(page.next_cursor).toBeNull();
  });

  it("answers 404 for an unknown or malformed swarm id", async () => {
    for (const id of ["sw_aaaaaaaaaaaaaaaaaaaa", "sw_nope", "..", "%00"]) {
      for (const suffix of ["", "/results", "/events"]) {
        const response = await callApi(`/v1/swarms/${id}${suffix}`);
        expect(response.status, `${id}${suffix}`).toBe(404);
        expect((await readErrorBody(response)).code).toBe("not_found");
      }
    }
  });
});

describe("tenant isolation", () => {
  it("hides a swarm from another tenant (404, not 403)", async () => {
    const created = await createSwarm(validSpec({ name: "tenant-a-only" }), TOKEN_A);
    for (const suffix of ["", "/results", "/events"]) {
      const response = await callApi(`/v1/swarms/${created.id}${suffix}`, { token: TOKEN_B });
      expect(response.status).toBe(404);
      expect((await readErrorBody(response)).code).toBe("not_found");
    }
    const list = ListSchema.parse(await (await callApi("/v1/swarms?limit=100", { token: TOKEN_B })).json());
    expect(list.swarms.map((s) => s.id)).not.toContain(created.id);
  });
});

describe("budgets and model mixes", () => {
  it.each([
    ["an empty budget", { budget: {} }, "budget"],
    ["a negative max_usd", { budget: { max_usd: -1 } }, "budget.max_usd"],
    ["a mix weight of 0", { model: [{ model: "a", weight: 0 }] }, "model.0.weight"],
    ["an empty mix", { model: [] }, "model"],
  ])("refuses %s with 400 naming %s", async (_label, overrides, path) => {
    const response = await callApi("/v1/swarms", { json: validSpec(overrides) });
    expect(response.status).toBe(400);
    const error = await readErrorBody(response);
    expect(error.code).toBe("invalid_spec");
    expect(error.details.map((d) => d.path)).toContain(path);
  });

  it("refuses a USD budget over a model without a price, naming the model", async () => {
    const response = await callApi("/v1/swarms", { json: validSpec({ model: "unpriced-model", budget: { max_usd: 1 } }) });
    expect(response.status).toBe(400);
    const error = await readErrorBody(response);
    expect(error.details).toEqual([{ path: "budget.max_usd", message: expect.stringContaining('"unpriced-model" has no price') }]);
  });

  it("refuses a fallback tier that no gateway model has, naming the tiers", async () => {
    // vitest.config.ts's GATEWAY_CONFIG has tiers premium (mock-1) and economy (mock-economy).
    const response = await callApi("/v1/swarms", { json: validSpec({ budget: { max_tokens: 10_000, fallback_tier: "bargain" } }) });
    expect(response.status).toBe(400);
    const error = await readErrorBody(response);
    expect(error.code).toBe("invalid_spec");
    expect(error.details).toEqual([{ path: "budget.fallback_tier", message: 'no gateway model has tier "bargain" (tiers: premium, economy)' }]);
  });

  it("refuses a model without a price when the tenant's monthly cap is in USD, at path model", async () => {
    // CAPPED_TOKEN's tenant is capped in USD (monthly_usd); the spec has no budget of its own.
    const response = await callApi("/v1/swarms", { json: validSpec({ model: "unpriced-model" }), token: CAPPED_TOKEN });
    expect(response.status).toBe(400);
    const error = await readErrorBody(response);
    expect(error.details).toEqual([{ path: "model", message: expect.stringContaining('"unpriced-model" has no price') }]);
  });

  it("refuses what admission refuses before any SwarmRoom exists", async () => {
    const rooms = async () => (await listDurableObjectIds(env.SWARM_ROOM)).length;
    const before = await rooms();
    for (const overrides of [{ model: "unpriced-model", budget: { max_usd: 1 } }, { budget: { max_tokens: 10_000, fallback_tier: "bargain" } }]) {
      expect((await callApi("/v1/swarms", { json: validSpec(overrides) })).status).toBe(400);
    }
    expect(await rooms()).toBe(before);
    // The count does see a room that was started.
    await createSwarm();
    expect(await rooms()).toBe(before + 1);
  });

  it("answers 402 budget_exceeded when the tenant's monthly budget cannot pay for one call", async () => {
    // CAPPED_TOKEN's tenant may spend $0.000001 a month (its monthly_usd limit).
    const response = await callApi("/v1/swarms", { json: validSpec(), token: CAPPED_TOKEN });
    expect(response.status).toBe(402);
    const error = await readErrorBody(response);
    expect(error.code).toBe("budget_exceeded");
    expect(error.details[0]?.message).toMatch(/monthly budget \(\$0\.000001\) for \d{4}-\d{2} is spent/);
  });

  it("starts a weighted mix and shows its models", async () => {
    const created = await createSwarm(
      validSpec({
        model: [
          { model: "deepseek-v3.2", weight: 60 },
          { model: "kimi-k2.5", weight: 40 },
        ],
      }),
    );
    const status = z
      .object({ model: z.string(), models: z.array(z.object({ model: z.string(), weight: z.number() })) })
      .parse(await (await callApi(`/v1/swarms/${created.id}`)).json());
    expect(status.model).toBe("deepseek-v3.2:60,kimi-k2.5:40");
    expect(status.models).toHaveLength(2);
  });
});

describe("reducers", () => {
  it.each([
    ["vote", { kind: "vote" }, { kind: "vote", winner: "done: audit auth.py", votes: 1, total: 3, tie: true }],
    ["concat", { kind: "concat", template: "{task_id}", separator: "," }, { kind: "concat", text: "auth.py,t00001,t00002", truncated: false }],
  ])("a finished swarm with reduce %s answers the reduced output", async (_label, reduce, expected) => {
    const created = await createSwarm(validSpec({ reduce }));
    const page = ResultsSchema.parse(await (await callApi(`/v1/swarms/${created.id}/results`)).json());
    await finishAllTasks(
      created.id,
      page.results.map((r) => r.task_id),
    );
    const status = z
      .object({ reduce: z.object({ kind: z.string() }), output: z.record(z.string(), z.unknown()) })
      .parse(await (await callApi(`/v1/swarms/${created.id}`)).json());
    expect(status.reduce.kind).toBe(reduce.kind);
    expect(status.output).toMatchObject(expected);
  });

  it("merges JSON results into one value over the RPC boundary", async () => {
    const created = await createSwarm(
      validSpec({
        reduce: { kind: "json_merge" },
        tasks: [
          { id: "a", prompt: "x" },
          { id: "b", prompt: "y" },
        ],
      }),
    );
    const room = env.SWARM_ROOM.get(env.SWARM_ROOM.idFromName(created.id));
    const lane = { ticket: "test-lane", slots: 2 };
    const pulled = await room.pull({ ...lane, reports: [], want: 2, final: false });
    await room.pull({
      ...lane,
      want: 0,
      final: true,
      reports: pulled.granted.map((task) => ({
        taskId: task.taskId,
        attempt: task.attempt,
        outcome: { kind: "succeeded", output: JSON.stringify({ files: [task.taskId], meta: { n: task.taskId === "a" ? 1 : 2 } }), finishReason: "stop" },
        calls: [],
      })),
    });
    const status = z.object({ output: z.unknown() }).parse(await (await callApi(`/v1/swarms/${created.id}`)).json());
    expect(status.output).toEqual({
      kind: "json_merge",
      value: { files: ["a", "b"], meta: { n: 1 } },
      conflicts: [
        {
          path: "meta.n",
          values: [
            { task_id: "a", value: 1 },
            { task_id: "b", value: 2 },
          ],
        },
      ],
      invalid: [],
    });
  });

  it("accepts the llm reducer and refuses a reducer it does not know", async () => {
    expect((await callApi("/v1/swarms", { json: validSpec({ reduce: { kind: "llm", instructions: "Merge." } }) })).status).toBe(202);
    const response = await callApi("/v1/swarms", { json: validSpec({ reduce: { kind: "median" } }) });
    expect(response.status).toBe(400);
    expect((await readErrorBody(response)).details.map((d) => d.path)).toContain("reduce.kind");
  });
});

describe("agents: goal, tools, structured output", () => {
  const lint = {
    name: "lint",
    description: "Lint a file",
    parameters: { type: "object", properties: { path: { type: "string" } } },
    url: "https://ci.example.com/lint",
  };

  it("a goal starts the swarm planning; its plan is readable at urls.plan", async () => {
    const response = await callApi("/v1/swarms", { json: { name: "research", model: "mock-1", goal: "Research:\n- a\n- b", planner: { max_tasks: 5 } } });
    expect(response.status).toBe(202);
    const body = z.object({ id: z.string(), state: z.literal("planning"), urls: z.object({ plan: z.string() }) }).parse(await response.json());
    const status = await callApi(`/v1/swarms/${body.id}`);
    expect(await status.json()).toMatchObject({
      state: "planning",
      tasks: 0,
      plan: { goal: "Research:\n- a\n- b", model: "mock-1", state: "planning", attempts: 1, task_count: 0 },
    });
    const plan = await callApi(new URL(body.urls.plan).pathname);
    expect(plan.status).toBe(200);
    expect(await plan.json()).toMatchObject({ state: "planning", tasks: [] });
  });

  it("a swarm given tasks has no plan: 404 that says why", async () => {
    const created = await createSwarm();
    const response = await callApi(`/v1/swarms/${created.id}/plan`);
    expect(response.status).toBe(404);
    expect((await readErrorBody(response)).message).toMatch(/tasks, not a goal/);
  });

  it.each([
    ["tasks and a goal", validSpec({ goal: "g" }), "goal"],
    ["neither tasks nor a goal", { name: "x", model: "mock-1" }, "tasks"],
    ["a planner without a goal", validSpec({ planner: { max_tasks: 3 } }), "planner"],
    ["http_fetch without an allowlist", validSpec({ tools: ["http_fetch"] }), "http_allowlist"],
    ["an unknown built-in tool", validSpec({ tools: ["shell"] }), "tools.0"],
    ["a webhook tool named like a built-in", validSpec({ tools: [{ ...lint, name: "http_fetch" }] }), "tools.0.name"],
    ["a webhook tool twice", validSpec({ tools: [lint, lint] }), "tools.1"],
    ["a webhook url that is not http(s)", validSpec({ tools: [{ ...lint, url: "file:///etc/passwd" }] }), "tools.0.url"],
    [
      "webhook parameters that are no usable JSON Schema",
      validSpec({ tools: [{ ...lint, parameters: { type: "object", properties: { path: { type: "strng" } } } }] }),
      "tools.0.parameters",
    ],
    ["an allowlist entry with a path", validSpec({ tools: ["http_fetch"], http_allowlist: ["example.com/x"] }), "http_allowlist.0"],
    ["max_turns 0", validSpec({ limits: { max_turns: 0 } }), "limits.max_turns"],
    ["a task id reserved for the engine", validSpec({ tasks: [{ id: "__plan.1", prompt: "x" }] }), "tasks.0.id"],
    [
      "a response schema with an external $ref (no network at run time)",
      validSpec({ response_format: { type: "json_schema", json_schema: { name: "x", schema: { $ref: "https://example.com/s.json" } } } }),
      "response_format.json_schema.schema",
    ],
  ])("refuses %s with 400 naming the field", async (_label, spec, path) => {
    const response = await callApi("/v1/swarms", { json: spec });
    expect(response.status).toBe(400);
    expect((await readErrorBody(response)).details.map((d) => d.path)).toContain(path);
  });

  it("a goal cannot be estimated before it is planned: 400 at goal", async () => {
    const response = await callApi("/v1/swarms/estimate", { json: { name: "r", model: "mock-1", goal: "g" } });
    expect(response.status).toBe(400);
    expect((await readErrorBody(response)).details.map((d) => d.path)).toEqual(["goal"]);
  });

  it("accepts tools, an allowlist, parallel_tool_calls and agent limits", async () => {
    const spec = validSpec({
      tools: ["scratchpad", "http_fetch", lint],
      http_allowlist: ["api.example.com", "*.docs.rs", "cdn.example.net:8443"],
      parallel_tool_calls: false,
      limits: { max_turns: 4, max_tool_calls: 6 },
    });
    expect((await callApi("/v1/swarms", { json: spec })).status).toBe(202);
  });

  it("refuses tools that could only reach private addresses (ALLOW_PRIVATE_NETWORK is off): 400 naming each", async () => {
    const spec = validSpec({
      tools: ["http_fetch", { ...lint, url: "https://10.0.0.1/lint" }],
      http_allowlist: ["api.example.com", "127.0.0.1:8788", "169.254.169.254"],
    });
    const response = await callApi("/v1/swarms", { json: spec });
    expect(response.status).toBe(400);
    const body = await readErrorBody(response);
    expect(body.details.map((d) => d.path)).toEqual(["tools.1.url", "http_allowlist.1", "http_allowlist.2"]);
    expect(body.details[0]?.message).toMatch(/10\.0\.0\.1 is a private address/);
    const schedule = await callApi("/v1/schedules", { json: { name: "s", cron: "0 * * * *", spec } });
    expect(schedule.status).toBe(400);
    expect((await readErrorBody(schedule)).details.map((d) => d.path)).toEqual(["spec.tools.1.url", "spec.http_allowlist.1", "spec.http_allowlist.2"]);
  });
});

describe("POST /v1/swarms/:id/cancel", () => {
  it("cancels a running swarm: open tasks end cancelled, the answer is its status", async () => {
    const created = await createSwarm(validSpec({ name: "to-cancel" }));
    const response = await callApi(`/v1/swarms/${created.id}/cancel`, { method: "POST" });
    expect(response.status).toBe(200);
    const status = StatusSchema.parse(await response.json());
    expect(status).toMatchObject({ state: "cancelled", counts: { cancelled: 3, queued: 0, running: 0 } });
    // Idempotent: cancelling again answers the same state.
    const again = await callApi(`/v1/swarms/${created.id}/cancel`, { method: "POST" });
    expect(again.status).toBe(200);
    expect(StatusSchema.parse(await again.json()).state).toBe("cancelled");
  });

  it("answers 409 for a swarm that already ended, and 404 for another tenant's swarm", async () => {
    const created = await createSwarm(validSpec({ name: "done-before-cancel" }));
    const page = ResultsSchema.parse(await (await callApi(`/v1/swarms/${created.id}/results`)).json());
    await finishAllTasks(
      created.id,
      page.results.map((r) => r.task_id),
    );
    const conflict = await callApi(`/v1/swarms/${created.id}/cancel`, { method: "POST" });
    expect(conflict.status).toBe(409);
    expect((await readErrorBody(conflict)).code).toBe("conflict");

    const other = await createSwarm(validSpec({ name: "not-yours" }), TOKEN_A);
    const hidden = await callApi(`/v1/swarms/${other.id}/cancel`, { method: "POST", token: TOKEN_B });
    expect(hidden.status).toBe(404);
  });
});

describe("GET /v1/swarms/:id conditional reads (ETag, If-None-Match)", () => {
  const BillableSchema = z.object({ billable: z.object({ do_requests: z.number() }), reruns: z.array(z.string()) });
  const read = (id: string, ifNoneMatch?: string) =>
    callApi(`/v1/swarms/${id}`, ifNoneMatch === undefined ? {} : { headers: { "if-none-match": ifNoneMatch } });

  async function finishedSwarm(): Promise<string> {
    const created = await createSwarm(validSpec({ name: "tagged" }));
    const page = ResultsSchema.parse(await (await callApi(`/v1/swarms/${created.id}/results`)).json());
    await finishAllTasks(
      created.id,
      page.results.map((r) => r.task_id),
    );
    return created.id;
  }

  it("a running swarm's status has no tag, and If-None-Match does not hold it back", async () => {
    const created = await createSwarm(validSpec({ name: "untagged" }));
    const response = await read(created.id, "*");
    expect(response.status).toBe(200);
    expect(response.headers.get("etag")).toBeNull();
    expect(StatusSchema.parse(await response.json()).state).toBe("running");
  });

  it("an ended swarm's status carries a weak tag; naming it answers 304 with no body, though the meters moved", async () => {
    const id = await finishedSwarm();
    const first = await read(id);
    expect(first.status).toBe(200);
    const tag = first.headers.get("etag") ?? "";
    expect(tag).toMatch(/^W\/"[0-9a-f]{32}"$/);
    expect(first.headers.get("cache-control")).toBe("private, no-cache");
    const before = BillableSchema.parse(await first.json()).billable.do_requests;

    const unchanged = await read(id, tag);
    expect(unchanged.status).toBe(304);
    expect(unchanged.headers.get("etag")).toBe(tag);
    expect(await unchanged.text()).toBe("");

    // Every read counts among the billable meters, the 304 too; the tag leaves them out.
    const again = await read(id);
    expect(again.headers.get("etag")).toBe(tag);
    expect(BillableSchema.parse(await again.json()).billable.do_requests).toBeGreaterThan(before);
  });

  it.each([
    { name: "the strong form of the tag (weak comparison)", header: (tag: string) => tag.slice(2), expected: 304 },
    { name: "a list that holds the tag", header: (tag: string) => `"elsewhere", ${tag}`, expected: 304 },
    { name: "*", header: () => "*", expected: 304 },
    { name: "another tag", header: () => 'W/"00000000000000000000000000000000"', expected: 200 },
    { name: "a malformed header", header: (tag: string) => tag.slice(3), expected: 200 },
  ])("If-None-Match with $name → $expected", async ({ header, expected }) => {
    const id = await finishedSwarm();
    const tag = (await read(id)).headers.get("etag") ?? "";
    const response = await read(id, header(tag));
    expect(response.status).toBe(expected);
    expect(response.headers.get("etag")).toBe(tag);
    if (expected === 200) expect(StatusSchema.parse(await response.json()).id).toBe(id);
  });

  it("a rerun moves an ended swarm's tag: the old one gets the new status", async () => {
    const id = await finishedSwarm();
    const tag = (await read(id)).headers.get("etag") ?? "";
    const rerun = await callApi(`/v1/swarms/${id}/rerun`, { json: { tasks: ["auth.py"] } });
    expect(rerun.status).toBe(202);
    const child = z.object({ id: z.string() }).parse(await rerun.json()).id;
    const after = await read(id, tag);
    expect(after.status).toBe(200);
    expect(after.headers.get("etag")).not.toBe(tag);
    expect(BillableSchema.parse(await after.json()).reruns).toEqual([child]);
  });

  it("the typed client's getSwarmIfChanged follows the tag: changed, then not, through the real route", async () => {
    const client = createClient({ baseUrl: ORIGIN, token: TOKEN_A, fetch: (input, init) => exports.default.fetch(new Request(input, init)) });
    const running = await createSwarm(validSpec({ name: "client-running" }));
    expect(await client.getSwarmIfChanged(running.id, null)).toMatchObject({ changed: true, etag: null, status: { state: "running" } });

    const id = await finishedSwarm();
    const first = await client.getSwarmIfChanged(id, null);
    if (!first.changed) throw new Error("the first read must carry the status");
    expect(first.status).toMatchObject({ id, state: "completed" });
    expect(first.etag).toMatch(/^W\/"[0-9a-f]{32}"$/);
    expect(await client.getSwarmIfChanged(id, first.etag)).toEqual({ changed: false, etag: first.etag });
    await expect(client.getSwarmIfChanged("sw_aaaaaaaaaaaaaaaaaaaa", first.etag)).rejects.toMatchObject({ code: "not_found", status: 404 });
  });

  it("answers 404, not 304, for another tenant's swarm whatever the header", async () => {
    const id = await finishedSwarm();
    const response = await callApi(`/v1/swarms/${id}`, { token: TOKEN_B, headers: { "if-none-match": "*" } });
    expect(response.status).toBe(404);
  });
});

describe("GET /v1/swarms/:id/results paging", () => {
  it("pages through the tasks in order with next_cursor", async () => {
    const created = await createSwarm(validSpec({ tasks: manyTasks(5) }));
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = cursor === null ? "?limit=2" : `?limit=2&cursor=${cursor}`;
      const response = await callApi(`/v1/swarms/${created.id}/results${query}`);
      expect(response.status).toBe(200);
      const page = ResultsSchema.parse(await response.json());
      seen.push(...page.results.map((r) => r.task_id));
      cursor = page.next_cursor;
      pages += 1;
    } while (cursor !== null && pages < 10);
    expect(pages).toBe(3);
    expect(seen).toEqual(["t00001", "t00002", "t00003", "t00004", "t00005"]);
  });

  it.each([
    ["limit=0", "limit"],
    ["limit=1001", "limit"],
    ["limit=abc", "limit"],
    ["limit=1e3", "limit"],
    ["limit=-1", "limit"],
    ["cursor=abc", "cursor"],
    ["cursor=-1", "cursor"],
    ["cursor=1234567890123", "cursor"],
    ["cursor=", "cursor"],
  ])("?%s → 400 invalid_request at %s", async (query, path) => {
    const created = await createSwarm();
    const response = await callApi(`/v1/swarms/${created.id}/results?${query}`);
    expect(response.status).toBe(400);
    const error = await readErrorBody(response);
    expect(error.code).toBe("invalid_request");
    expect(error.details.map((d) => d.path)).toEqual([path]);
  });
});

describe("GET /v1/swarms", () => {
  it("lists the caller's swarms newest first, paging with an opaque cursor", async () => {
    const ids: string[] = [];
    for (const name of ["first", "second", "third"]) ids.push((await createSwarm(validSpec({ name }), TOKEN_B)).id);

    const seen: string[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 5; page += 1) {
      const query: string = cursor === null ? "?limit=2" : `?limit=2&cursor=${encodeURIComponent(cursor)}`;
      const response = await callApi(`/v1/swarms${query}`, { token: TOKEN_B });
      expect(response.status).toBe(200);
      const body = ListSchema.parse(await response.json());
      expect(body.swarms.length).toBeLessThanOrEqual(2);
      seen.push(...body.swarms.map((s) => s.id));
      cursor = body.next_cursor;
      if (cursor === null) break;
    }
    // Other tests of this file may have added swarms for tenant b; ours are in creation order reversed.
    expect(seen.filter((id) => ids.includes(id))).toEqual([...ids].reverse());
    expect(new Set(seen).size).toBe(seen.length);
  });

  it("describes each swarm from the D1 index", async () => {
    const created = await createSwarm(validSpec({ name: "indexed" }));
    const body = ListSchema.parse(await (await callApi("/v1/swarms?limit=100")).json());
    const listed = body.swarms.find((s) => s.id === created.id);
    expect(listed).toMatchObject({ name: "indexed", model: "mock-1", state: "running", tasks: 3 });
    expect(Number.isNaN(Date.parse(listed?.created_at ?? ""))).toBe(false);
  });

  it.each([
    ["limit=0", "limit"],
    ["limit=101", "limit"],
    ["limit=ten", "limit"],
    ["cursor=not-a-cursor", "cursor"],
    [`cursor=${btoa("123:sw_nope")}`, "cursor"],
  ])("?%s → 400 invalid_request at %s", async (query, path) => {
    const response = await callApi(`/v1/swarms?${query}`);
    expect(response.status).toBe(400);
    const error = await readErrorBody(response);
    expect(error.code).toBe("invalid_request");
    expect(error.details.map((d) => d.path)).toEqual([path]);
  });
});
