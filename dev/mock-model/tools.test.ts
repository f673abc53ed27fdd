// Tests multi-turn tool calling over real loopback HTTP: tool turns and directives, argument rules,
// every tool-call dialect streamed through the official openai SDK (raw deltas, read back with the
// engine's src/core/tool-calls.ts), the tool_call_id echo rule, and the answer after tool results.

import type OpenAI from "openai";
import { describe, expect, it } from "vitest";
import { accumulateToolCalls } from "../../src/core/tool-calls.ts";
import { chat, sseData, userBody, useMockModel } from "./test-helpers.ts";
import { countPromptTokens } from "./text.ts";
import type { ToolDialect } from "./server.ts";

const { mock, client } = await useMockModel();

const fn = (name: string, parameters: Record<string, unknown>): OpenAI.ChatCompletionTool => ({ type: "function", function: { name, parameters } });
const TOOLS: OpenAI.ChatCompletionTool[] = [
  fn("lookup", { type: "object", properties: { q: { type: "string" }, k: { type: "integer", minimum: 1 } }, required: ["q", "k"] }),
  fn("http_fetch", { type: "object", properties: { url: { type: "string" }, max_bytes: { type: "integer", minimum: 1 } }, required: ["url"] }),
  fn("scratchpad_put", {
    type: "object",
    properties: { key: { type: "string" }, value: { type: "string" }, ttl_s: { type: "integer" } },
    required: ["key", "value"],
  }),
  fn("scratchpad_get", { type: "object", properties: { key: { type: "string" } }, required: ["key"] }),
];

type Message = OpenAI.ChatCompletionMessageParam;
interface WireCall {
  id: string;
  type: string;
  function: { name: string; arguments: unknown };
}

/** The model whose default dialect is each one (args_object is opt-in: mapped per model in the scenario). */
const MODEL_OF: Record<ToolDialect, string> = {
  openai: "gpt-4.1",
  kimi: "kimi-k2.5",
  gemini: "gemini-2.5-flash",
  anthropic: "claude-sonnet-4.5",
  args_object: "mock-args",
};
const DIALECTS = Object.keys(MODEL_OF) as ToolDialect[];
const ARGS_SCENARIO = { tool_dialect_by_model: { "mock-args": "args_object" as const } };

const create = (body: Record<string, unknown>): Promise<OpenAI.ChatCompletion> =>
  client.chat.completions.create(body as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming);

/** Streams through the SDK and returns each chunk's raw `delta.tool_calls` (undefined when absent) and the finish reason. */
async function streamDeltas(body: Record<string, unknown>): Promise<{ deltas: unknown[]; finish: string | null | undefined; content: string }> {
  const stream = await client.chat.completions.create({ ...(body as unknown as OpenAI.ChatCompletionCreateParamsStreaming), stream: true });
  const deltas: unknown[] = [];
  let finish: string | null | undefined;
  let content = "";
  for await (const chunk of stream) {
    const choice = chunk.choices[0];
    deltas.push(choice?.delta.tool_calls);
    content += choice?.delta.content ?? "";
    finish = choice?.finish_reason ?? finish;
  }
  return { deltas, finish, content };
}

const asRecords = (deltas: unknown[]): Array<Record<string, unknown>> => deltas.flatMap((d) => (Array.isArray(d) ? (d as Array<Record<string, unknown>>) : []));
const argsOf = (a: unknown): unknown => (typeof a === "string" ? JSON.parse(a) : a);

describe("tool turns", () => {
  const task = "Fetch https://example.org/docs/a.md with http_fetch, then note it with scratchpad_put.";

  it("offered tools → one call of the first mentioned tool, then a text answer that uses the tool result", async () => {
    const messages: Message[] = [{ role: "user", content: task }];
    const first = await create({ model: "gpt-4.1", messages, tools: TOOLS });
    const choice = first.choices[0];
    expect(choice?.finish_reason).toBe("tool_calls");
    expect(choice?.message.content).toBeNull();
    const calls = (choice?.message.tool_calls ?? []) as WireCall[];
    expect(calls).toHaveLength(1);
    expect(calls[0]?.function.name).toBe("http_fetch");
    // http_fetch: url from the user message; optional properties left out.
    expect(argsOf(calls[0]?.function.arguments)).toEqual({ url: "https://example.org/docs/a.md" });

    messages.push(choice?.message as Message, {
      role: "tool",
      tool_call_id: calls[0]?.id ?? "",
      content: "Example   Domain\n\nThis domain is for use in\texamples.",
    });
    const second = await create({ model: "gpt-4.1", messages, tools: TOOLS });
    expect(second.choices[0]?.finish_reason).toBe("stop");
    expect(second.choices[0]?.message.content).toBe("[mock] answer using http_fetch: Example Domain This domain is for use in examples.");
    // Tool messages, earlier tool calls and tool definitions are all prompt tokens.
    expect(second.usage?.prompt_tokens).toBe(countPromptTokens(messages, TOOLS));
    expect(mock.stats()).toMatchObject({ tool_call_responses: 1, completed: 2 });
  });

  it("the answer quotes at most 120 chars of the last tool result", async () => {
    const long = `${"word ".repeat(60)}END`;
    const messages: Message[] = [
      { role: "user", content: "use lookup" },
      { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "lookup", arguments: "{}" } }] },
      { role: "tool", tool_call_id: "c1", content: long },
    ];
    const c = await create({ model: "mock-1", messages });
    expect(c.choices[0]?.message.content).toBe(`[mock] answer using lookup: ${long.slice(0, 120)}`);
  });

  it("[mock:tool_turns=2]: two tool turns (put, then get with the same key), then the answer; kimi ids count across turns", async () => {
    const messages: Message[] = [
      { role: "system", content: "You are a worker. [mock:tool_turns=2]" },
      { role: "user", content: "Store a note with scratchpad_put and read it back with scratchpad_get." },
    ];
    const ids: string[] = [];
    const names: string[] = [];
    const keys: unknown[] = [];
    for (let turn = 0; turn < 2; turn++) {
      const c = await create({ model: "kimi-k2.5", messages, tools: TOOLS });
      expect(c.choices[0]?.finish_reason).toBe("tool_calls");
      const call = (c.choices[0]?.message.tool_calls as WireCall[] | undefined)?.[0];
      ids.push(call?.id ?? "");
      names.push(call?.function.name ?? "");
      keys.push((argsOf(call?.function.arguments) as { key?: unknown }).key);
      messages.push(c.choices[0]?.message as Message, { role: "tool", tool_call_id: call?.id ?? "", content: turn === 0 ? "stored" : "the note" });
    }
    expect(names).toEqual(["scratchpad_put", "scratchpad_get"]);
    expect(ids).toEqual(["functions.scratchpad_put:0", "functions.scratchpad_get:1"]);
    expect(keys[0]).toMatch(/^note-[0-9a-f]{8}$/);
    expect(keys[1]).toBe(keys[0]);
    const last = await create({ model: "kimi-k2.5", messages, tools: TOOLS });
    expect(last.choices[0]?.message.content).toBe("[mock] answer using scratchpad_put, scratchpad_get: the note");
    expect(mock.stats().tool_call_responses).toBe(2);
  });

  it("scratchpad_put gets {key, value} plus other required properties only", async () => {
    const c = await create({ model: "mock-1", messages: [{ role: "user", content: "scratchpad_put it" }], tools: TOOLS });
    const args = argsOf((c.choices[0]?.message.tool_calls as WireCall[] | undefined)?.[0]?.function.arguments) as Record<string, unknown>;
    expect(Object.keys(args).sort()).toEqual(["key", "value"]);
    expect(String(args.value)).toMatch(/^\[mock\] note /);
  });

  it("[mock:tool_turns=0] and tool_choice none answer in text at once", async () => {
    for (const body of [
      userBody("http_fetch nothing [mock:tool_turns=0]", { tools: TOOLS }),
      userBody("http_fetch nothing", { tools: TOOLS, tool_choice: "none" }),
    ]) {
      const c = await create(body);
      expect(c.choices[0]?.finish_reason).toBe("stop");
      expect(c.choices[0]?.message.content).toMatch(/^\[mock\] reply to [0-9a-f]{8}: /);
    }
  });

  it("[mock:parallel=K] calls K tools in one turn: mentioned ones in order, cycling; parallel_tool_calls: false means one", async () => {
    const three = await create(userBody("Use scratchpad_get and lookup. [mock:parallel=3]", { tools: TOOLS }));
    const calls = (three.choices[0]?.message.tool_calls ?? []) as WireCall[];
    expect(calls.map((c) => c.function.name)).toEqual(["scratchpad_get", "lookup", "scratchpad_get"]);
    expect(new Set(calls.map((c) => c.id)).size).toBe(3);
    const one = await create(userBody("Use scratchpad_get and lookup. [mock:parallel=3]", { tools: TOOLS, parallel_tool_calls: false }));
    expect(one.choices[0]?.message.tool_calls).toHaveLength(1);
  });

  it("no tool mentioned → the first offered tool, arguments from its schema; http_fetch without a URL → https://example.com/", async () => {
    const c = await create(userBody("do something", { tools: TOOLS }));
    const call = (c.choices[0]?.message.tool_calls as WireCall[] | undefined)?.[0];
    expect(call?.function.name).toBe("lookup");
    const args = argsOf(call?.function.arguments) as { q: string; k: number };
    expect(typeof args.q).toBe("string");
    expect(args.k).toBeGreaterThanOrEqual(1);
    const fetch = await create(userBody("http_fetch the page", { tools: TOOLS }));
    expect(argsOf((fetch.choices[0]?.message.tool_calls as WireCall[] | undefined)?.[0]?.function.arguments)).toEqual({ url: "https://example.com/" });
  });

  it("is deterministic, and max_tokens cuts the arguments (finish_reason length)", async () => {
    const body = userBody("lookup twice [mock:parallel=2]", { model: "gpt-4.1", tools: TOOLS });
    const a = await create(body);
    const b = await create(body);
    expect(a.choices[0]?.message.tool_calls).toEqual(b.choices[0]?.message.tool_calls);
    const cut = await create({ ...body, max_tokens: 3 });
    expect(cut.choices[0]?.finish_reason).toBe("length");
    expect(cut.usage?.completion_tokens).toBe(3);
  });
});

describe("tool-call dialects", () => {
  const body = (dialect: ToolDialect): Record<string, unknown> => ({
    model: MODEL_OF[dialect],
    messages: [{ role: "user", content: "Fetch https://example.org/spec.md with http_fetch and save it with scratchpad_put. [mock:parallel=2]" }],
    tools: TOOLS,
  });

  it.each(DIALECTS)("%s: streamed deltas have the dialect's shape; the engine's accumulator reads them; non-stream has the same calls", async (dialect) => {
    mock.setScenario(ARGS_SCENARIO);
    const { deltas, finish, content } = await streamDeltas(body(dialect));
    expect(finish).toBe("tool_calls");
    expect(content).toBe("");
    const records = asRecords(deltas);
    const headers = records.filter((d) => "id" in d);
    expect(headers).toHaveLength(2);
    const ids = headers.map((h) => h.id);

    switch (dialect) {
      case "openai":
      case "kimi":
      case "anthropic": {
        const base = dialect === "anthropic" ? 1 : 0;
        expect(headers.map((h) => h.index)).toEqual([base, base + 1]);
        for (const h of headers) expect(h).toMatchObject({ type: "function", function: { arguments: "" } });
        for (const index of [base, base + 1]) {
          const fragments = records.filter((d) => d.index === index && !("id" in d));
          expect(fragments.length).toBeGreaterThanOrEqual(2);
          expect(fragments.length).toBeLessThanOrEqual(3);
          for (const f of fragments) expect(typeof (f.function as { arguments: unknown }).arguments).toBe("string");
        }
        if (dialect === "kimi") expect(ids).toEqual(["functions.http_fetch:0", "functions.scratchpad_put:1"]);
        else for (const id of ids) expect(id).toMatch(/^call_[0-9a-f]{16}$/);
        break;
      }
      case "gemini":
        expect(records).toHaveLength(2);
        for (const d of records) {
          expect(d).not.toHaveProperty("index");
          expect(d.id).toBe("");
          expect(typeof (d.function as { arguments: unknown }).arguments).toBe("string");
        }
        break;
      case "args_object":
        expect(records).toHaveLength(2);
        expect(headers.map((h) => h.index)).toEqual([0, 1]);
        for (const d of records) expect(typeof (d.function as { arguments: unknown }).arguments).toBe("object");
        break;
    }

    const calls = accumulateToolCalls(deltas);
    expect(calls.map((c) => c.name)).toEqual(["http_fetch", "scratchpad_put"]);
    expect(calls[0]?.arguments).toEqual({ ok: true, value: { url: "https://example.org/spec.md" } });
    expect(calls[1]?.arguments).toMatchObject({ ok: true, value: { key: expect.stringMatching(/^note-/) as unknown } });

    const plain = await create(body(dialect));
    const wire = (plain.choices[0]?.message.tool_calls ?? []) as WireCall[];
    expect(wire.map((c) => c.id)).toEqual(ids);
    expect(wire.map((c) => argsOf(c.function.arguments))).toEqual(calls.map((c) => (c.arguments.ok ? c.arguments.value : undefined)));
    for (const c of wire) expect(typeof c.function.arguments).toBe(dialect === "args_object" ? "object" : "string");
  });

  it.each(DIALECTS)("%s: the full loop (tools → calls → results echoed with the same ids → answer)", async (dialect) => {
    mock.setScenario(ARGS_SCENARIO);
    const messages: Message[] = [{ role: "user", content: "Read https://example.org/a with http_fetch. [mock:tool_turns=2] [mock:parallel=2]" }];
    let generated = 0;
    for (let turn = 0; turn < 2; turn++) {
      const c = await create({ model: MODEL_OF[dialect], messages, tools: TOOLS });
      expect(c.choices[0]?.finish_reason).toBe("tool_calls");
      const calls = (c.choices[0]?.message.tool_calls ?? []) as WireCall[];
      expect(calls).toHaveLength(2);
      // Gemini sends "" ids: the client makes its own and uses them in both places.
      const echoed = calls.map((call) => ({ ...call, id: call.id === "" ? `gen_${generated++}` : call.id }));
      messages.push({ role: "assistant", content: null, tool_calls: echoed } as unknown as Message);
      for (const call of echoed) messages.push({ role: "tool", tool_call_id: call.id, content: `result of ${call.id}` });
    }
    const answer = await create({ model: MODEL_OF[dialect], messages, tools: TOOLS });
    const lastId = (messages.at(-1) as { tool_call_id: string }).tool_call_id;
    expect(answer.choices[0]?.message.content).toBe(`[mock] answer using http_fetch: result of ${lastId}`);
    if (dialect === "kimi") expect(lastId).toBe("functions.http_fetch:3");
  });

  it("x-mock-tool-dialect overrides the model's dialect; an unknown one is 400", async () => {
    const res = await chat(mock, { body: { ...body("openai"), stream: true }, headers: { "x-mock-tool-dialect": "gemini" } });
    const deltas = sseData(await res.text())
      .slice(0, -1)
      .map((d) => (JSON.parse(d) as { choices: Array<{ delta: { tool_calls?: unknown } }> }).choices[0]?.delta.tool_calls);
    const records = asRecords(deltas);
    expect(records).toHaveLength(2);
    for (const r of records) expect(r).toMatchObject({ id: "", type: "function" });
    for (const r of records) expect(r).not.toHaveProperty("index");
    const bad = await chat(mock, { body: body("openai"), headers: { "x-mock-tool-dialect": "klingon" } });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { code: string } }).error.code).toBe("invalid_mock_header");
  });

  it("tool_dialect in the scenario applies to every model; tool_dialect_by_model wins over it", async () => {
    mock.setScenario({ tool_dialect: "kimi", tool_dialect_by_model: { "gpt-4.1": "gemini" } });
    const kimi = await create(body("anthropic"));
    expect((kimi.choices[0]?.message.tool_calls as WireCall[] | undefined)?.[0]?.id).toBe("functions.http_fetch:0");
    const gemini = await create(body("openai"));
    expect((gemini.choices[0]?.message.tool_calls as WireCall[] | undefined)?.[0]?.id).toBe("");
  });
});

describe("tool_call_id echo rule", () => {
  const issued: Message = {
    role: "assistant",
    content: null,
    tool_calls: [{ id: "functions.lookup:0", type: "function", function: { name: "lookup", arguments: "{}" } }],
  };

  it.each(DIALECTS)("%s: a tool message whose id matches no earlier assistant tool call is 400", async (dialect) => {
    mock.setScenario(ARGS_SCENARIO);
    for (const wrong of ["functions.lookup:1", "call_unknown", ""]) {
      const res = await chat(mock, {
        body: {
          model: MODEL_OF[dialect],
          tools: TOOLS,
          messages: [{ role: "user", content: "lookup" }, issued, { role: "tool", tool_call_id: wrong, content: "x" }],
        },
      });
      expect(res.status).toBe(400);
      const err = (await res.json()) as { error: { message: string; type: string; param: string } };
      expect(err.error).toMatchObject({ type: "invalid_request_error", param: "messages[2].tool_call_id" });
      expect(err.error.message).toContain("does not match any tool call");
    }
    const ok = await chat(mock, {
      body: {
        model: MODEL_OF[dialect],
        tools: TOOLS,
        messages: [{ role: "user", content: "lookup" }, issued, { role: "tool", tool_call_id: "functions.lookup:0", content: "x" }],
      },
    });
    expect(ok.status).toBe(200);
    await ok.arrayBuffer();
  });

  it("a tool message before the call it answers, or without tool_call_id, is 400", async () => {
    const early = await chat(mock, {
      body: { model: "mock-1", messages: [{ role: "user", content: "x" }, { role: "tool", tool_call_id: "functions.lookup:0", content: "x" }, issued] },
    });
    expect(early.status).toBe(400);
    await early.arrayBuffer();
    const missing = await chat(mock, { body: { model: "mock-1", messages: [{ role: "user", content: "x" }, issued, { role: "tool", content: "x" }] } });
    expect(missing.status).toBe(400);
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe("missing_required_parameter");
    expect(mock.stats().by_status).toEqual({ "400": 2 });
  });
});
