// A swarm's tools as one runner: the definitions the model is offered, and how each call is routed
// (scratchpad to the SwarmRoom, http_fetch and webhooks to the network) without ever throwing.
// The scratchpad is an in-memory fake and the network an injected fetch: no test leaves the process.
import { describe, expect, it } from "vitest";
import { SCRATCHPAD_TOOLS } from "../../../src/core/scratchpad.ts";
import type { ScratchpadRequest, ScratchpadResponse, ToolSpecWire } from "../../../src/core/swarm-contract.ts";
import type { ToolCall } from "../../../src/core/tool-calls.ts";
import { deriveWebhookKey, SIGNATURE_HEADER, verifyWebhook } from "../../../src/core/webhook-signature.ts";
import { HTTP_FETCH_TOOL } from "./http-fetch.ts";
import { createSwarmTools, DEFAULT_TOOL_SETTINGS, toToolEnvironment } from "./swarm-tools.ts";
import type { ToolEnvironment, ToolSettings } from "./swarm-tools.ts";

const SECRET = "whsec_swarm_tools_test";
const TENANT = "tk_0123456789abcdef";
const NOW_MS = 1_767_225_600_000;
const CONTEXT = { swarmId: "sw_toolstest000000001", taskId: "task-007" };

const lookup = {
  name: "lookup",
  description: "Look a SKU up in the stock system.",
  url: "https://hooks.example.com/tools/lookup",
  parameters_json: JSON.stringify({ type: "object", properties: { sku: { type: "string" } }, required: ["sku"], additionalProperties: false }),
};

interface Recorded {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string | null;
}

/**
 * A fetch that answers from `routes` by exact URL and records each request. Written as a `function`
 * that refuses a foreign `this`, as Workers' own fetch does ("Illegal invocation").
 */
function strictFetch(routes: Record<string, () => Response>) {
  const calls: Recorded[] = [];
  const fetch = async function (this: unknown, input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
    if (this !== undefined && this !== globalThis) throw new TypeError("Illegal invocation: fetch called as a method of another object");
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    calls.push({
      url,
      method: init?.method ?? "GET",
      headers: Object.fromEntries(new Headers(init?.headers).entries()),
      body: typeof init?.body === "string" ? init.body : null,
    });
    const route = routes[url];
    if (route === undefined) throw new TypeError(`Network connection lost (no route for ${url})`);
    return route();
  };
  return { fetch: fetch as typeof globalThis.fetch, calls };
}

/** The SwarmRoom's scratchpad, in memory, recording each request. */
function memoryScratchpad() {
  const values = new Map<string, string>();
  const requests: ScratchpadRequest[] = [];
  const scratchpad = async (request: ScratchpadRequest): Promise<ScratchpadResponse> => {
    requests.push(request);
    switch (request.op) {
      case "get":
        return { ok: true, op: "get", key: request.key, value: values.get(request.key) ?? null };
      case "put":
        values.set(request.key, request.value);
        return { ok: true, op: "put", key: request.key, bytes: request.value.length };
      case "list":
        return { ok: true, op: "list", keys: [...values.keys()].filter((k) => k.startsWith(request.prefix)).sort(), truncated: false };
    }
  };
  return { scratchpad, values, requests };
}

function environment(
  options: { fetch?: typeof globalThis.fetch; scratchpad?: ToolEnvironment["scratchpad"]; settings?: Partial<ToolSettings> } = {},
): ToolEnvironment {
  const settings: ToolSettings = { ...DEFAULT_TOOL_SETTINGS, webhookSecret: SECRET, ...options.settings };
  return {
    ...toToolEnvironment(settings, options.fetch ?? strictFetch({}).fetch, () => NOW_MS),
    scratchpad: options.scratchpad ?? memoryScratchpad().scratchpad,
  };
}

function call(name: string, args: Record<string, unknown>, id = "call_1"): ToolCall {
  return { id, name, rawArguments: JSON.stringify(args), arguments: { ok: true, value: args } };
}

const errorOf = (content: string): unknown => (JSON.parse(content) as { error?: unknown }).error;
const names = (tools: ReturnType<typeof createSwarmTools>) => tools.definitions.map((d) => (d.type === "function" ? d.function.name : d.type));

describe("createSwarmTools: definitions", () => {
  it.each([
    { specs: ["scratchpad", "http_fetch", lookup], want: ["scratchpad_get", "scratchpad_put", "scratchpad_list", "http_fetch", "lookup"] },
    { specs: [lookup, "http_fetch", "scratchpad"], want: ["lookup", "http_fetch", "scratchpad_get", "scratchpad_put", "scratchpad_list"] },
    { specs: ["http_fetch"], want: ["http_fetch"] },
    { specs: ["scratchpad"], want: ["scratchpad_get", "scratchpad_put", "scratchpad_list"] },
    { specs: [], want: [] },
  ] satisfies { specs: ToolSpecWire[]; want: string[] }[])("$specs.length spec tool(s) → $want", ({ specs, want }) => {
    expect(names(createSwarmTools(specs, [], TENANT, environment()))).toEqual(want);
  });

  it("offers the built-ins as defined and a webhook with its parsed JSON Schema", () => {
    const { definitions } = createSwarmTools(["scratchpad", "http_fetch", lookup], [], TENANT, environment());
    expect(definitions.slice(0, 3)).toEqual(SCRATCHPAD_TOOLS);
    expect(definitions[3]).toEqual(HTTP_FETCH_TOOL);
    expect(definitions[4]).toEqual({
      type: "function",
      function: { name: "lookup", description: lookup.description, parameters: JSON.parse(lookup.parameters_json) },
    });
  });

  it("hands out copies: changing a definition changes no other swarm's", () => {
    const first = createSwarmTools(["scratchpad", "http_fetch"], [], TENANT, environment());
    const fn = first.definitions[0]?.type === "function" ? first.definitions[0].function : null;
    if (fn !== null) fn.description = "changed";
    expect(SCRATCHPAD_TOOLS[0].function.description).not.toBe("changed");
    expect(createSwarmTools(["scratchpad"], [], TENANT, environment()).definitions[0]).toEqual(SCRATCHPAD_TOOLS[0]);
  });
});

describe("createSwarmTools: run", () => {
  it.each([
    { name: "lookup", want: 'lookup: the arguments are not valid JSON (Unexpected end): {"sku":' },
    { name: "scratchpad_put", want: 'scratchpad_put: the arguments are not valid JSON (Unexpected end): {"sku":' },
    { name: "", want: 'tool call: the arguments are not valid JSON (Unexpected end): {"sku":' },
  ])("answers broken arguments to $name with a tool error naming the tool, running nothing", async ({ name, want }) => {
    const network = strictFetch({});
    const pad = memoryScratchpad();
    const tools = createSwarmTools(["scratchpad", lookup], [], TENANT, environment({ fetch: network.fetch, scratchpad: pad.scratchpad }));
    const broken: ToolCall = {
      id: "call_1",
      name,
      rawArguments: '{"sku":',
      arguments: { ok: false, error: 'the arguments are not valid JSON (Unexpected end): {"sku":' },
    };
    const result = await tools.run(broken, CONTEXT);
    expect(result.ok).toBe(false);
    expect(errorOf(result.content)).toBe(want);
    expect(network.calls).toEqual([]);
    expect(pad.requests).toEqual([]);
  });

  it.each([
    { specs: ["scratchpad", "http_fetch", lookup], name: "delete_everything", offered: "scratchpad_get, scratchpad_put, scratchpad_list, http_fetch, lookup" },
    { specs: [], name: "lookup", offered: "none" },
    // A tool the spec did not ask for is refused like an unknown one, built-in or not.
    { specs: ["scratchpad"], name: "http_fetch", offered: "scratchpad_get, scratchpad_put, scratchpad_list" },
    { specs: ["http_fetch"], name: "scratchpad_get", offered: "http_fetch" },
    { specs: ["http_fetch"], name: "scratchpad_put", offered: "http_fetch" },
    { specs: ["scratchpad", "http_fetch"], name: "lookup", offered: "scratchpad_get, scratchpad_put, scratchpad_list, http_fetch" },
  ] satisfies { specs: ToolSpecWire[]; name: string; offered: string }[])(
    "refuses $name when offered [$offered], listing the offered tools",
    async ({ specs, name, offered }) => {
      const network = strictFetch({ "https://api.example.com/x": () => new Response("x"), [lookup.url]: () => new Response("x") });
      const pad = memoryScratchpad();
      const tools = createSwarmTools(specs, ["api.example.com"], TENANT, environment({ fetch: network.fetch, scratchpad: pad.scratchpad }));
      const result = await tools.run(call(name, { url: "https://api.example.com/x", key: "k", value: "v", sku: "A" }), CONTEXT);
      expect(result).toEqual({ ok: false, content: JSON.stringify({ error: `there is no tool named "${name}" (tools: ${offered})` }) });
      expect(network.calls).toEqual([]);
      expect(pad.requests).toEqual([]);
    },
  );
});

describe("createSwarmTools: scratchpad", () => {
  it("routes get, put and list to the swarm's scratchpad, with the task id on writes", async () => {
    const pad = memoryScratchpad();
    const tools = createSwarmTools(["scratchpad"], [], TENANT, environment({ scratchpad: pad.scratchpad }));
    const steps: { call: ToolCall; want: { ok: boolean; content: unknown } }[] = [
      { call: call("scratchpad_get", { key: "plan" }), want: { ok: true, content: { key: "plan", value: null } } },
      { call: call("scratchpad_put", { key: "plan", value: "step 1" }), want: { ok: true, content: { key: "plan", bytes: 6 } } },
      { call: call("scratchpad_put", { key: "notes/a", value: "x" }), want: { ok: true, content: { key: "notes/a", bytes: 1 } } },
      { call: call("scratchpad_get", { key: "plan" }), want: { ok: true, content: { key: "plan", value: "step 1" } } },
      { call: call("scratchpad_list", { prefix: "notes/" }), want: { ok: true, content: { keys: ["notes/a"], truncated: false } } },
      { call: call("scratchpad_list", {}), want: { ok: true, content: { keys: ["notes/a", "plan"], truncated: false } } },
    ];
    for (const step of steps) {
      const result = await tools.run(step.call, CONTEXT);
      expect({ ok: result.ok, content: JSON.parse(result.content) as unknown }).toEqual(step.want);
    }
    expect(pad.requests).toEqual([
      { op: "get", key: "plan" },
      { op: "put", key: "plan", value: "step 1", taskId: "task-007" },
      { op: "put", key: "notes/a", value: "x", taskId: "task-007" },
      { op: "get", key: "plan" },
      { op: "list", prefix: "notes/" },
      { op: "list", prefix: "" },
    ]);
  });

  it.each([
    { args: {}, want: /^scratchpad_put: key: / },
    { args: { key: "", value: "v" }, want: /^scratchpad_put: key: key must not be empty$/ },
    { args: { key: "k", value: 42 }, want: /^scratchpad_put: value: / },
  ])("refuses scratchpad_put $args before reaching the SwarmRoom", async ({ args, want }) => {
    const pad = memoryScratchpad();
    const result = await createSwarmTools(["scratchpad"], [], TENANT, environment({ scratchpad: pad.scratchpad })).run(call("scratchpad_put", args), CONTEXT);
    expect(result.ok).toBe(false);
    expect(errorOf(result.content)).toMatch(want);
    expect(pad.requests).toEqual([]);
  });

  it("passes a refusal from the SwarmRoom on as a tool error", async () => {
    const full = async (): Promise<ScratchpadResponse> => ({ ok: false, error: "the scratchpad is full (10000 keys): overwrite an existing key instead" });
    const result = await createSwarmTools(["scratchpad"], [], TENANT, environment({ scratchpad: full })).run(
      call("scratchpad_put", { key: "k", value: "v" }),
      CONTEXT,
    );
    expect(result).toEqual({
      ok: false,
      content: JSON.stringify({ error: "scratchpad_put: the scratchpad is full (10000 keys): overwrite an existing key instead" }),
    });
  });

  it.each([
    {
      thrown: new Error("Durable Object reset because its code was updated."),
      want: "scratchpad_get failed: Durable Object reset because its code was updated.",
    },
    { thrown: "a string", want: "scratchpad_get failed: a string" },
  ])("turns a scratchpad RPC that throws ($thrown) into a tool error", async ({ thrown, want }) => {
    const failing = async (): Promise<ScratchpadResponse> => {
      throw thrown;
    };
    const result = await createSwarmTools(["scratchpad"], [], TENANT, environment({ scratchpad: failing })).run(call("scratchpad_get", { key: "k" }), CONTEXT);
    expect(result).toEqual({ ok: false, content: JSON.stringify({ error: want }) });
  });
});

describe("createSwarmTools: http_fetch and webhooks", () => {
  it("fetches an allowlisted URL through the injected fetch", async () => {
    const network = strictFetch({ "https://api.example.com/items": () => new Response('{"items":[1]}', { headers: { "content-type": "application/json" } }) });
    const tools = createSwarmTools(["http_fetch"], ["api.example.com"], TENANT, environment({ fetch: network.fetch }));
    const result = await tools.run(call("http_fetch", { url: "https://api.example.com/items" }), CONTEXT);
    expect(result).toEqual({ ok: true, content: 'HTTP 200 application/json\n\n{"items":[1]}' });
    expect(network.calls).toMatchObject([{ url: "https://api.example.com/items", method: "GET" }]);
  });

  it.each([
    {
      case: "a host off the swarm's allowlist",
      allowlist: ["api.example.com"],
      url: "https://evil.example.org/",
      want: /^http_fetch refused https:\/\/evil\.example\.org\/: host evil\.example\.org/,
    },
    { case: "an empty allowlist", allowlist: [], url: "https://api.example.com/items", want: /is not on the swarm's http_allowlist \(it is empty\)/ },
    { case: "bad arguments", allowlist: ["api.example.com"], url: "", want: /^http_fetch: invalid arguments: url: url must not be empty/ },
  ])("refuses $case as a tool error, without fetching", async ({ allowlist, url, want }) => {
    const network = strictFetch({ "https://api.example.com/items": () => new Response("x") });
    const result = await createSwarmTools(["http_fetch"], allowlist, TENANT, environment({ fetch: network.fetch })).run(call("http_fetch", { url }), CONTEXT);
    expect(result.ok).toBe(false);
    expect(errorOf(result.content)).toMatch(want);
    expect(network.calls).toEqual([]);
  });

  it("reports a network failure of http_fetch as a tool error", async () => {
    const result = await createSwarmTools(["http_fetch"], ["api.example.com"], TENANT, environment({ fetch: strictFetch({}).fetch })).run(
      call("http_fetch", { url: "https://api.example.com/down" }),
      CONTEXT,
    );
    expect(result.ok).toBe(false);
    expect(errorOf(result.content)).toEqual(expect.stringContaining("Network connection lost"));
  });

  it("POSTs a webhook call, signed, with the model's call id as the idempotency key", async () => {
    const network = strictFetch({ [lookup.url]: () => new Response('{"in_stock":true}') });
    const tools = createSwarmTools(["scratchpad", "http_fetch", lookup], [], TENANT, environment({ fetch: network.fetch }));
    const result = await tools.run(call("lookup", { sku: "A-17" }, "functions.lookup:0"), CONTEXT);
    expect(result).toEqual({ ok: true, content: '{"in_stock":true}' });
    expect(network.calls).toHaveLength(1);
    const request = network.calls[0];
    expect(request).toMatchObject({ url: lookup.url, method: "POST", body: '{"sku":"A-17"}' });
    expect(request?.headers).toMatchObject({
      "x-edgeswarm-tool-call-id": "functions.lookup:0",
      "x-edgeswarm-tool": "lookup",
      "x-edgeswarm-swarm-id": CONTEXT.swarmId,
      "x-edgeswarm-task-id": CONTEXT.taskId,
    });
    const signature = request?.headers[SIGNATURE_HEADER] ?? null;
    expect(signature).toMatch(/^t=1767225600,v1=[0-9a-f]{64}$/);
    // Signed with the tenant's key, derived from the secret: never with the secret itself.
    const key = await deriveWebhookKey(SECRET, TENANT);
    expect(await verifyWebhook(key, request?.body ?? "", signature, NOW_MS / 1_000)).toEqual({ ok: true });
    expect((await verifyWebhook(SECRET, request?.body ?? "", signature, NOW_MS / 1_000)).ok).toBe(false);
    expect((await verifyWebhook(await deriveWebhookKey(SECRET, "tk_fedcba9876543210"), request?.body ?? "", signature, NOW_MS / 1_000)).ok).toBe(false);
  });

  it.each([
    {
      case: "answers HTTP 500",
      settings: {},
      routes: { [lookup.url]: () => new Response("boom", { status: 500 }) },
      want: "webhook lookup answered HTTP 500: boom",
      fetched: 1,
    },
    {
      case: "has no secret to sign with",
      settings: { webhookSecret: null },
      routes: {},
      want: /^webhook lookup cannot be called: the agent Worker has no WEBHOOK_SECRET/,
      fetched: 0,
    },
  ])("returns a tool error when the webhook $case", async ({ settings, routes, want, fetched }) => {
    const network = strictFetch(routes);
    const result = await createSwarmTools([lookup], [], TENANT, environment({ fetch: network.fetch, settings })).run(call("lookup", { sku: "A" }), CONTEXT);
    expect(result.ok).toBe(false);
    expect(errorOf(result.content)).toMatch(want);
    expect(network.calls).toHaveLength(fetched);
  });
});

describe("toToolEnvironment", () => {
  it("maps the settings onto the http and webhook sides", () => {
    const settings: ToolSettings = { httpTimeoutMs: 1_000, httpMaxBytes: 2_000, webhookTimeoutMs: 3_000, webhookSecret: "s", allowPrivate: true };
    const now = () => 42;
    const env = toToolEnvironment(settings, strictFetch({}).fetch, now);
    expect(env.http).toMatchObject({ timeoutMs: 1_000, maxResponseBytes: 2_000, maxRedirects: 5, allowPrivate: true });
    expect(env.webhook).toMatchObject({ secret: "s", allowPrivate: true, timeoutMs: 3_000, maxResponseBytes: 262_144 });
    expect(env.webhook.now()).toBe(42);
  });

  it("the strict fake refuses a foreign `this`, as Workers' fetch does", async () => {
    const { fetch } = strictFetch({ "https://api.example.com/": () => new Response("ok") });
    const settings = { fetch };
    await expect(settings.fetch("https://api.example.com/")).rejects.toThrow(/Illegal invocation/);
    await expect(fetch("https://api.example.com/")).resolves.toBeInstanceOf(Response);
  });

  it.each([
    { tool: "http_fetch", spec: "http_fetch" as const, url: "https://api.example.com/", args: { url: "https://api.example.com/" } },
    { tool: "lookup", spec: lookup, url: lookup.url, args: { sku: "A" } },
  ])("calls the global fetch unbound from $tool (no Illegal invocation)", async ({ tool, spec, url, args }) => {
    const network = strictFetch({ [url]: () => new Response("ok") });
    const result = await createSwarmTools([spec], ["api.example.com"], TENANT, environment({ fetch: network.fetch })).run(call(tool, args), CONTEXT);
    expect(result.ok).toBe(true);
    expect(network.calls).toHaveLength(1);
  });
});
