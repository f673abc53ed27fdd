// Tests the edgeswarm roles over real loopback HTTP: planner plans (and invalid_plans), reducer
// digests, invalid structured output with repair turns (invalid_json), and the context window.

import OpenAI from "openai";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { KEY, chat, userBody, useMockModel } from "./test-helpers.ts";
import { startMockModel } from "./server.ts";
import { countPromptTokens } from "./text.ts";

const { mock, client } = await useMockModel();

const PLANNER_SYSTEM = "[edgeswarm:planner]\nSplit the goal into independent tasks. Answer JSON.";
const REDUCER_SYSTEM = "[edgeswarm:reducer]\nMerge the results.";

const PlanSchema = z.object({ tasks: z.array(z.object({ id: z.string(), prompt: z.string() })).min(1) });
type Plan = z.infer<typeof PlanSchema>;

async function ask(messages: OpenAI.ChatCompletionMessageParam[], extra: Record<string, unknown> = {}): Promise<string> {
  const c = await client.chat.completions.create({ model: "mock-1", messages, ...extra } as OpenAI.ChatCompletionCreateParamsNonStreaming);
  return c.choices[0]?.message.content ?? "";
}
const plan = async (user: string, extra: OpenAI.ChatCompletionMessageParam[] = []): Promise<Plan> =>
  PlanSchema.parse(JSON.parse(await ask([{ role: "system", content: PLANNER_SYSTEM }, { role: "user", content: user }, ...extra])));
const uniqueIds = (p: Plan): boolean => new Set(p.tasks.map((t) => t.id)).size === p.tasks.length;

describe("planner", () => {
  it("one task per list line of the goal, capped at max_tasks, ids t1…", async () => {
    const p = await plan("max_tasks: 3\nGoal:\nReview these files:\n- src/a.py\n* src/b.py\n1. docs/c.md\n2) tests/d.py");
    expect(p.tasks).toEqual([
      { id: "t1", prompt: "src/a.py" },
      { id: "t2", prompt: "src/b.py" },
      { id: "t3", prompt: "docs/c.md" },
    ]);
  });

  it("a goal that is not a list → min(max_tasks, 4) 'Investigate aspect k' tasks; each carries the goal's URL", async () => {
    const p = await plan("Goal: Assess the security of https://example.org/app and report.\nmax_tasks: 10");
    expect(p.tasks).toHaveLength(4);
    expect(p.tasks[0]).toEqual({ id: "t1", prompt: "Investigate aspect 1 of: Assess the security of https://example.org/app and report." });
    const two = await plan("max_tasks: 2\nGoal:\nSummarize the release notes.");
    expect(two.tasks.map((t) => t.prompt)).toEqual([
      "Investigate aspect 1 of: Summarize the release notes.",
      "Investigate aspect 2 of: Summarize the release notes.",
    ]);
    // The URL is past the first 200 chars, or the tasks are list lines: it is appended.
    const far = await plan(`Goal: ${"background ".repeat(25)}then read https://example.org/far.md`);
    for (const t of far.tasks) expect(t.prompt).toMatch(/\(source: https:\/\/example\.org\/far\.md\)$/);
    const list = await plan("Goal: check the pages of https://example.org/site\n- the pricing page\n- the docs https://example.org/docs");
    expect(list.tasks.map((t) => t.prompt)).toEqual(["the pricing page (source: https://example.org/site)", "the docs https://example.org/docs"]);
  });

  it("defaults to max_tasks 5; is deterministic; a retry after a rejected plan gets a valid plan", async () => {
    const goal = `Goal:\n${Array.from({ length: 7 }, (_, i) => `- item ${i + 1}`).join("\n")}`;
    const p = await plan(goal);
    expect(p.tasks.map((t) => t.id)).toEqual(["t1", "t2", "t3", "t4", "t5"]);
    expect(await plan(goal)).toEqual(p);
    const retry = await plan(goal, [
      { role: "assistant", content: '{"tasks":[]}' },
      { role: "user", content: "Your previous plan was rejected: tasks must not be empty. Answer again." },
    ]);
    expect(retry).toEqual(p);
  });

  it("answers the plan even when a json_schema response_format is given", async () => {
    const content = await ask(
      [
        { role: "system", content: PLANNER_SYSTEM },
        { role: "user", content: "Goal:\n- a\n- b" },
      ],
      {
        response_format: { type: "json_schema", json_schema: { name: "plan", schema: z.toJSONSchema(PlanSchema) } },
      },
    );
    expect(JSON.parse(content)).toEqual({
      tasks: [
        { id: "t1", prompt: "a" },
        { id: "t2", prompt: "b" },
      ],
    });
  });

  it("invalid_plans: N → the next N planner answers reuse a task id (retries included); faulted requests do not count", async () => {
    mock.setScenario({ invalid_plans: 2, script: ["503"] });
    const user = "max_tasks: 3\nGoal: Map the codebase.";
    await expect(plan(user)).rejects.toBeInstanceOf(OpenAI.InternalServerError);
    const bad1 = await plan(user);
    expect(bad1.tasks.map((t) => t.id)).toEqual(["t1", "t1", "t3"]);
    expect(mock.getScenario().invalid_plans).toBe(1);
    const bad2 = await plan(user, [
      { role: "assistant", content: JSON.stringify(bad1) },
      { role: "user", content: "Your previous plan was rejected: duplicate id t1." },
    ]);
    expect(uniqueIds(bad2)).toBe(false);
    const good = await plan(user);
    expect(uniqueIds(good)).toBe(true);
    expect(mock.getScenario().invalid_plans).toBe(0);
    // A one-task plan is made invalid by repeating its task.
    mock.setScenario({ invalid_plans: 1 });
    expect((await plan("max_tasks: 1\nGoal: x")).tasks).toEqual([
      { id: "t1", prompt: "Investigate aspect 1 of: x" },
      { id: "t1", prompt: "Investigate aspect 1 of: x" },
    ]);
    // Every valid planner request counts, the one answered 503 included.
    expect(mock.stats()).toMatchObject({ planner_requests: 5 });
  });

  it("counts planner requests in /stats", async () => {
    await plan("Goal: a");
    await plan("Goal: b");
    await ask([{ role: "user", content: "not a planner" }]);
    expect(mock.stats()).toMatchObject({ planner_requests: 2, reducer_requests: 0 });
  });
});

describe("reducer", () => {
  const results = (n: number, body = (i: number): string => `finding ${i}: ${"detail ".repeat(40)}`): string =>
    `Merge these:\n${Array.from({ length: n }, (_, i) => `<result id="t${i + 1}">${body(i)}</result>`).join("\n")}`;

  it("answers a short deterministic digest naming the count and the first 3 ids", async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: "system", content: REDUCER_SYSTEM },
      { role: "user", content: results(12) },
    ];
    const c = await client.chat.completions.create({ model: "mock-1", messages });
    const text = c.choices[0]?.message.content ?? "";
    expect(text).toMatch(/^\[mock\] reduced 12 results \(t1, t2, t3, …\): digest [0-9a-f]{8} [a-z ]+\.$/);
    expect(c.usage?.completion_tokens).toBeLessThanOrEqual(60);
    expect(await ask(messages)).toBe(text);
    const other = await ask([
      { role: "system", content: REDUCER_SYSTEM },
      { role: "user", content: results(12, (i) => `other ${i}`) },
    ]);
    expect(other).not.toBe(text);
    expect(
      await ask([
        { role: "system", content: REDUCER_SYSTEM },
        { role: "user", content: results(2) },
      ]),
    ).toMatch(/^\[mock\] reduced 2 results \(t1, t2\): /);
    expect(mock.stats().reducer_requests).toBe(4);
  });

  it("stays under 60 tokens with long ids, so a reduction of reductions shrinks", async () => {
    const long = Array.from({ length: 50 }, (_, i) => `<result id="${"x".repeat(80)}-${i}">${"y".repeat(400)}</result>`).join("\n");
    const first = await ask([
      { role: "system", content: REDUCER_SYSTEM },
      { role: "user", content: long },
    ]);
    expect(Math.ceil(first.length / 4)).toBeLessThanOrEqual(60);
    const second = await ask([
      { role: "system", content: REDUCER_SYSTEM },
      { role: "user", content: `<result id="r1">${first}</result><result id="r2">${first}</result>` },
    ]);
    expect(second.length).toBeLessThanOrEqual(first.length);
  });
});

describe("invalid structured output and repair", () => {
  const Answer = z.object({ title: z.string(), score: z.number() });
  const jsonSchema = { type: "json_schema", json_schema: { name: "answer", strict: true, schema: z.toJSONSchema(Answer) } };
  const task = { role: "user" as const, content: "summarize" };
  const repair = (bad: string): OpenAI.ChatCompletionMessageParam[] => [
    task,
    { role: "assistant", content: bad },
    { role: "user", content: `[edgeswarm:repair] Your answer did not match the schema. Answer again.` },
  ];

  it("invalid_json: 1 → the answer breaks the schema (valid JSON, a required property dropped); the repair answer is valid", async () => {
    mock.setScenario({ invalid_json: 1 });
    const bad = await ask([task], { response_format: jsonSchema });
    expect(Answer.safeParse(JSON.parse(bad)).success).toBe(false);
    expect(JSON.parse(bad)).not.toHaveProperty("title");
    expect(mock.getScenario().invalid_json).toBe(0);
    const fixed = await ask(repair(bad), { response_format: jsonSchema });
    expect(Answer.safeParse(JSON.parse(fixed)).success).toBe(true);
    expect(mock.stats()).toMatchObject({ repair_requests: 1 });
  });

  it("invalid_json: 2 → the repair answer is invalid too (a task would fail after its repair turn)", async () => {
    mock.setScenario({ invalid_json: 2 });
    const bad = await ask([task], { response_format: jsonSchema });
    const stillBad = await ask(repair(bad), { response_format: jsonSchema });
    expect(Answer.safeParse(JSON.parse(stillBad)).success).toBe(false);
    const later = await ask([task], { response_format: jsonSchema });
    expect(Answer.safeParse(JSON.parse(later)).success).toBe(true);
  });

  it("a schema with nothing to violate gets text that is not JSON; text and json_object answers do not count", async () => {
    mock.setScenario({ invalid_json: 1 });
    expect(JSON.parse(await ask([task], { response_format: { type: "json_object" } }))).toMatchObject({ mock: true });
    expect(await ask([task])).toMatch(/^\[mock\] reply to/);
    expect(mock.getScenario().invalid_json).toBe(1);
    const text = await ask([task], { response_format: { type: "json_schema", json_schema: { name: "any", schema: {} } } });
    expect(() => JSON.parse(text) as unknown).toThrow();
    expect(text).toMatch(/^\[mock\] not JSON/);
  });
});

describe("context window", () => {
  it("prompt + max_tokens over contextTokens (or the model's context_tokens_by_model) → 400 context_length_exceeded; setScenario keeps it", async () => {
    const small = await startMockModel({ contextTokens: 50, context_tokens_by_model: { big: 1000 } });
    const c = new OpenAI({ apiKey: KEY, baseURL: `${small.url}/v1`, maxRetries: 0 });
    try {
      small.setScenario({ latency: 0 });
      const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: "user", content: "x".repeat(160) }]; // 40 + 4 = 44 tokens
      expect(countPromptTokens(messages, undefined)).toBe(44);
      const fits = await c.chat.completions.create({ model: "mock-1", messages, max_tokens: 6 });
      expect(fits.usage?.prompt_tokens).toBe(44);
      const err = await c.chat.completions.create({ model: "mock-1", messages, max_tokens: 7 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      expect(err).toMatchObject({ status: 400, code: "context_length_exceeded", param: "messages", type: "invalid_request_error" });
      expect((err as Error).message).toContain(
        "maximum context length is 50 tokens. However, you requested 51 tokens (44 in the messages, 7 in the completion)",
      );
      // Without max_tokens only the prompt counts; streamed requests get the same JSON 400.
      const stream = await chat(small, { body: userBody("y".repeat(400), { stream: true }) });
      expect(stream.status).toBe(400);
      expect(stream.headers.get("content-type")).toBe("application/json");
      expect(((await stream.json()) as { error: { message: string } }).error.message).toContain("your messages resulted in 104 tokens");
      // Another model's window.
      const big = await c.chat.completions.create({ model: "big", messages: [{ role: "user", content: "y".repeat(400) }], max_tokens: 500 });
      expect(big.choices[0]?.finish_reason).toBe("stop");
      expect(small.stats()).toMatchObject({ context_exceeded: 2, max_prompt_tokens: 104, by_status: { "200": 2, "400": 2 }, completed: 2 });
    } finally {
      await small.close();
    }
  });

  it("is unlimited by default; max_prompt_tokens records the largest prompt seen and resets with the stats", async () => {
    await ask([{ role: "user", content: "z".repeat(40_000) }]);
    await ask([{ role: "user", content: "short" }]);
    expect(mock.stats().max_prompt_tokens).toBe(10_004);
    mock.resetStats();
    expect(mock.stats().max_prompt_tokens).toBe(0);
  });

  it("rejects a bad contextTokens at start", async () => {
    await expect(startMockModel({ contextTokens: 0 })).rejects.toThrow(/contextTokens/);
    await expect(startMockModel({ context_tokens_by_model: { m: 1.5 } })).rejects.toThrow(/context_tokens_by_model\.m/);
  });
});
