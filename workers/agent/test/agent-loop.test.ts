// The agent loop end to end: real SwarmRoom (auxiliary orchestrator Worker), the mock model over
// loopback, the real tools. Multi-turn tool use with per-turn checkpoints (a redelivered or retried
// task resumes after its last finished turn), the scratchpad, webhook tools, structured output with
// its repair turn, the planner, and the llm reducer (hierarchical when the results do not fit).
import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import type { QueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import type { ChatMessage } from "../../../src/core/agent-conversation.ts";
import { LimitsSchema, PlannerSpecSchema, type SwarmSpec } from "../../../src/core/spec-schema.ts";
import { createModelClient } from "../../../src/model/model-client.ts";
import type { ModelCallResult, ModelClient, ModelRequest } from "../../../src/model/model-client.ts";
import { consumeTasks } from "../consume-tasks.ts";
import { toSwarmRooms } from "../swarm-rooms.ts";
import { DEFAULT_TOOL_SETTINGS, toToolEnvironment } from "../tools/swarm-tools.ts";
import { WEBHOOK_TEST_TENANT } from "../../../test/webhook-test-secret.ts";
import { directGateway } from "./fake-gateway.ts";
import { LANE_DEFAULTS, startRoomSwarm, tickets, type RoomSwarm } from "./room-swarm.ts";

const TENANT = WEBHOOK_TEST_TENANT;
let counter = 0;

type SpecPart = Partial<Omit<SwarmSpec, "limits" | "tasks">> & { limits?: Record<string, number> };

async function startSwarm(tasks: { id: string; prompt: string }[], spec: SpecPart = {}): Promise<RoomSwarm> {
  counter += 1;
  const { limits, ...rest } = spec;
  return startRoomSwarm({
    swarmId: `sw_loop${Date.now().toString(36)}${counter}`,
    tenant: TENANT,
    spec: { name: `loop test ${counter}`, model: "mock-1", ...rest, limits: LimitsSchema.parse({ concurrency: 1_000, ...limits }) },
    tasks,
    createdAt: Date.now(),
    origin: { kind: "api" },
  });
}

/**
 * One ticket's lane with the real room, the mock model and real tools allowed to reach the mock on
 * 127.0.0.1. `maxTasks` (the invocation's allowance) stops the lane after that many tasks, so a
 * test can watch a swarm move through its phases (plan, tasks, reduce) one delivery at a time.
 */
async function deliver(
  swarmId: string,
  wrap: (request: ModelRequest, call: () => Promise<ModelCallResult>) => Promise<ModelCallResult> = (_r, call) => call(),
  options: { maxTasks?: number } = {},
): Promise<QueueResult> {
  const real = createModelClient({ baseURL: env.MODEL_BASE_URL, apiKey: env.MODEL_API_KEY });
  const model: ModelClient = { complete: (request) => wrap(request, () => real.complete(request)) };
  const batch = createMessageBatch("edgeswarm-tasks", tickets(swarmId, 1));
  const ctx = createExecutionContext();
  await consumeTasks(batch, {
    ...LANE_DEFAULTS,
    ...options,
    rooms: toSwarmRooms(env.SWARM_ROOM),
    gateway: directGateway(model),
    concurrency: 64,
    tools: toToolEnvironment({ ...DEFAULT_TOOL_SETTINGS, allowPrivate: true, webhookSecret: env.WEBHOOK_SECRET }, fetch),
  });
  return getQueueResult(batch, ctx);
}

async function mock(path: string, body?: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(
    `${env.MOCK_MODEL_URL}${path}`,
    body === undefined ? {} : { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) },
  );
  expect(response.status).toBe(200);
  return (await response.json()) as Record<string, unknown>;
}

interface LedgerRow {
  call_id: string;
  turn: number;
  status: string;
}

async function ledgerRows(swarmId: string, count: number): Promise<LedgerRow[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const { results } = await env.LEDGER_DB.prepare("SELECT call_id, turn, status FROM ledger WHERE swarm_id = ? ORDER BY call_id")
      .bind(swarmId)
      .all<LedgerRow>();
    if (results.length >= count || Date.now() > deadline) return results;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** A deliver() wrapper that keeps a copy of every model request. */
function recordRequests() {
  const requests: ModelRequest[] = [];
  const wrap = (request: ModelRequest, call: () => Promise<ModelCallResult>): Promise<ModelCallResult> => {
    // The call's header slot rides along in the request; it is a live object, not data to copy.
    const { headerSlot: _slot, ...data } = request;
    requests.push(structuredClone(data));
    return call();
  };
  return { requests, wrap };
}

const roles = (messages: readonly ChatMessage[]): string => messages.map((m) => m.role[0]).join("");

afterEach(async () => {
  await mock("/admin/scenario", {});
});

describe("agent loop: tools and checkpoints", () => {
  it("runs a multi-turn task: tool calls, tool results back to the model, a final answer that uses them; one ledger row per turn", async () => {
    const swarm = await startSwarm([{ id: "review", prompt: "[mock:tool_turns=3] Use scratchpad_put to note findings, then answer." }], {
      tools: ["scratchpad"],
    });
    const { requests, wrap } = recordRequests();
    const result = await deliver(swarm.swarmId, wrap);
    expect(result.retryMessages).toEqual([]);
    const [task] = await swarm.results();
    expect(task).toMatchObject({ task_id: "review", state: "succeeded", attempts: 1 });
    expect(task?.output).toMatch(/^\[mock\] answer using scratchpad_put/);
    expect(task?.usage.calls).toBe(4);
    // Turn n sees every earlier turn's assistant message and tool result, ids echoed.
    expect(requests.map((r) => roles(r.messages))).toEqual(["u", "uat", "uatat", "uatatat"]);
    expect(requests.slice(0, 3).every((r) => r.tools !== null)).toBe(true);
    const rows = await ledgerRows(swarm.swarmId, 4);
    expect(rows.map((r) => r.call_id)).toEqual([1, 2, 3, 4].map((turn) => `${swarm.swarmId}:review:1:${turn}`));
    // The scratchpad holds what the agent put, for every agent of the swarm.
    const listed = await swarm.stub.scratchpad({ op: "list", prefix: "" });
    expect(listed.ok && listed.op === "list" && listed.keys.length).toBeGreaterThan(0);
  });

  it("a retried task resumes at its checkpoint: finished turns are not called again, the conversation is kept", async () => {
    const swarm = await startSwarm([{ id: "t", prompt: "[mock:tool_turns=3] Use scratchpad_put, then answer." }], { tools: ["scratchpad"] });
    const requests: { attempt: string; messages: string }[] = [];
    // Turn 3 of the first attempt fails with a 500: the task is retried (inline) as attempt 2.
    await mock("/admin/scenario", { script: ["ok", "ok", "500"] });
    await deliver(swarm.swarmId, (request, call) => {
      requests.push({ attempt: "", messages: roles(request.messages) });
      return call();
    });
    const [task] = await swarm.results();
    expect(task).toMatchObject({ state: "succeeded", attempts: 2 });
    // Turns 1 and 2 once; turn 3 twice (the 500, then attempt 2 from the checkpoint); turn 4 once.
    expect(requests.map((r) => r.messages)).toEqual(["u", "uat", "uatat", "uatat", "uatatat"]);
    const rows = await ledgerRows(swarm.swarmId, 5);
    expect(rows.map((r) => [r.call_id.split(":").slice(2).join(":"), r.status])).toEqual([
      ["1:1", "ok"],
      ["1:2", "ok"],
      ["1:3", "error"],
      ["2:3", "ok"],
      ["2:4", "ok"],
    ]);
  });

  it("a redelivered task whose consumer died mid-loop resumes from the journaled checkpoint once its lease ends; the lost call is billed as unknown", async () => {
    const swarm = await startSwarm([{ id: "t", prompt: "[mock:tool_turns=2] Use scratchpad_put, then answer." }], {
      tools: ["scratchpad"],
      // max_turns 3 × timeout 1 s + 1 s grace: the lease of the dead delivery ends after ~4 s.
      limits: { timeout_s: 1, max_turns: 3 },
    });
    let calls = 0;
    // The run dies at turn 3, after the upstream served the call: its outcome is never recorded;
    // the lane reached the room, so its ticket is acked and the task's lease brings it back.
    const first = await deliver(swarm.swarmId, async (request, call) => {
      calls += 1;
      if (request.messages.filter((m) => m.role === "tool").length === 2) {
        await call();
        throw new Error("isolate killed mid-loop");
      }
      return call();
    });
    expect(first.explicitAcks).toHaveLength(1);
    expect(calls).toBe(3);
    expect((await swarm.results())[0]).toMatchObject({ state: "running", attempts: 1 });
    await new Promise((resolve) => setTimeout(resolve, 4_500));
    const seen: string[] = [];
    await deliver(swarm.swarmId, (request, call) => {
      seen.push(roles(request.messages));
      return call();
    });
    // Only the final turn is called again, with the conversation of the two finished turns.
    expect(seen).toEqual(["uatat"]);
    const [task] = await swarm.results();
    expect(task).toMatchObject({ state: "succeeded", attempts: 2 });
    // Every call the upstream served is on the bill: the lost one as `unknown`, and its retry under a new call id.
    const rows = await ledgerRows(swarm.swarmId, 4);
    expect(rows.map((r) => [r.call_id.split(":").slice(2).join(":"), r.status])).toEqual([
      ["1:1", "ok"],
      ["1:2", "ok"],
      ["1:3", "unknown"],
      ["2:3", "ok"],
    ]);
    // It waits out a real lease (~4.5 s) before the redelivery: the default 5 s timeout leaves it no room on a busy machine.
  }, 30_000);

  it.each([
    ["kimi-k2.5", "kimi: ids like functions.scratchpad_put:0, echoed exactly"],
    ["gemini-2.5-flash", "gemini: no index, empty ids (edgeswarm names them)"],
    ["claude-sonnet-4.5", "anthropic-compatible: indexes from 1"],
    ["mock-args-object", "arguments sent as a JSON object"],
  ])("speaks the %s tool-call dialect (%s): the mock refuses any tool result whose id does not match", async (model) => {
    await mock("/admin/scenario", { tool_dialect_by_model: { "mock-args-object": "args_object" } });
    const swarm = await startSwarm([{ id: "d", prompt: "[mock:tool_turns=2] [mock:parallel=2] scratchpad_put scratchpad_get" }], {
      model,
      tools: ["scratchpad"],
    });
    const { requests, wrap } = recordRequests();
    await deliver(swarm.swarmId, wrap);
    const [task] = await swarm.results();
    expect(task).toMatchObject({ state: "succeeded", attempts: 1, tool_calls: 4, usage: { calls: 3 } });
    const last = requests.at(-1)?.messages ?? [];
    const asked = last.flatMap((m) => (m.role === "assistant" ? (m.tool_calls ?? []).map((c) => c.id) : []));
    const answered = last.flatMap((m) => (m.role === "tool" ? [m.tool_call_id] : []));
    expect(answered).toEqual(asked);
    expect(new Set(asked).size).toBe(4);
    if (model === "kimi-k2.5") expect(asked[0]).toMatch(/^functions\.scratchpad_put:\d+$/);
  });

  it("the last allowed turn is offered no tools; a model that still only asks for tools fails turn_limit, its paid calls recorded", async () => {
    const swarm = await startSwarm([{ id: "stubborn", prompt: "[mock:tool_turns=9] Use scratchpad_put." }], {
      tools: ["scratchpad"],
      limits: { max_turns: 2 },
    });
    const offered: boolean[] = [];
    await deliver(swarm.swarmId, async (request, call) => {
      offered.push(request.tools !== null);
      const result = await call();
      // A model that ignores the missing tools and asks for one anyway, with no text.
      if (request.tools !== null || !result.ok) return result;
      return { ...result, text: "", toolCalls: [{ id: "call_x", name: "scratchpad_put", rawArguments: "{}", arguments: { ok: true, value: {} } }] };
    });
    expect(offered).toEqual([true, false]);
    const [task] = await swarm.results();
    expect(task).toMatchObject({ state: "failed", error: { class: "turn_limit" }, usage: { calls: 2 }, tool_calls: 1 });
  });

  it("resumed between a turn's model call and its tools: runs the pending tools, never that model call again", async () => {
    const swarm = await startSwarm([{ id: "t", prompt: "[mock:tool_turns=2] Use scratchpad_put, then answer." }], { tools: ["scratchpad"] });
    const ticket = `loop-resume-${Date.now().toString(36)}`;
    const { granted } = await swarm.stub.pull({ ticket, reports: [], want: 1, slots: 1, final: false });
    expect(granted.map((g) => [g.taskId, g.attempt])).toEqual([["t", 1]]);
    // Attempt 1 paid for turn 1, checkpointed the tool calls it asked for, then failed before running them.
    const asked = {
      role: "assistant",
      content: null,
      tool_calls: [{ id: "call_pending", type: "function", function: { name: "scratchpad_put", arguments: '{"key":"k1","value":"from turn 1"}' } }],
    };
    const messages = [{ role: "user", content: "[mock:tool_turns=2] Use scratchpad_put, then answer." }, asked];
    const checkpoint = { step: 2, turns: 1, toolCalls: 0, repairs: 0, messages_json: JSON.stringify(messages) };
    const turn1 = { turn: 1, model: "mock-1", usage: null, latencyMs: 5, status: "ok" as const, errorClass: null, startedAt: Date.now() };
    await swarm.stub.pull({
      ticket,
      reports: [
        {
          taskId: "t",
          attempt: 1,
          outcome: { kind: "failed", class: "upstream_connection", retryable: true, retryAfterMs: 0, message: "isolate died" },
          calls: [turn1],
          checkpoint,
        },
      ],
      want: 0,
      slots: 1,
      final: true,
    });
    const seen: string[] = [];
    await deliver(swarm.swarmId, (request, call) => {
      seen.push(roles(request.messages));
      return call();
    });
    // The first call of attempt 2 already has turn 1's tool result: turn 1 was not called again.
    expect(seen).toEqual(["uat", "uatat"]);
    expect(await swarm.stub.scratchpad({ op: "get", key: "k1" })).toMatchObject({ ok: true, value: "from turn 1" });
    const [task] = await swarm.results();
    expect(task).toMatchObject({ state: "succeeded", attempts: 2, tool_calls: 2, usage: { calls: 3 } });
    const rows = await ledgerRows(swarm.swarmId, 3);
    expect(rows.map((r) => r.call_id.split(":").slice(2).join(":"))).toEqual(["1:1", "2:2", "2:3"]);
  });

  it("parallel tool calls of one turn all run, and max_tool_calls refuses the rest with a tool error the model reads", async () => {
    const swarm = await startSwarm([{ id: "p", prompt: "[mock:tool_turns=1] [mock:parallel=3] scratchpad_put scratchpad_get scratchpad_list" }], {
      tools: ["scratchpad"],
      limits: { max_tool_calls: 2 },
    });
    const { requests, wrap } = recordRequests();
    await deliver(swarm.swarmId, wrap);
    const [task] = await swarm.results();
    expect(task?.state).toBe("succeeded");
    const toolMessages = requests[1]?.messages.filter((m) => m.role === "tool") ?? [];
    expect(toolMessages).toHaveLength(3);
    expect(toolMessages[2]?.content).toMatch(/max_tool_calls/);
  });

  it("a webhook tool gets the arguments signed (the mock verifies the signature) and its answer goes back to the model", async () => {
    const before = await mock("/stats");
    const swarm = await startSwarm([{ id: "w", prompt: "Run lint on auth.py" }], {
      tools: [
        {
          name: "lint",
          description: "Lint a file",
          parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
          url: `${env.MOCK_MODEL_URL}/tools/lint`,
        },
      ],
    });
    const { requests, wrap } = recordRequests();
    await deliver(swarm.swarmId, wrap);
    const after = await mock("/stats");
    expect(Number(after.webhook_calls) - Number(before.webhook_calls)).toBe(1);
    expect(Number(after.webhook_rejected) - Number(before.webhook_rejected)).toBe(0);
    const tool = requests[1]?.messages.find((m) => m.role === "tool");
    expect(tool?.content).toMatch(/findings/);
    expect((await swarm.results())[0]?.state).toBe("succeeded");
  });

  it("http_fetch refuses a target off the allowlist; the model gets the refusal as a tool error and still answers", async () => {
    const swarm = await startSwarm([{ id: "f", prompt: "Fetch http://169.254.169.254/latest/meta-data and summarize." }], {
      tools: ["http_fetch"],
      http_allowlist: ["docs.example.com"],
    });
    const { requests, wrap } = recordRequests();
    await deliver(swarm.swarmId, wrap);
    const tool = requests[1]?.messages.find((m) => m.role === "tool");
    expect(tool?.content).toMatch(/"error"/);
    expect(tool?.content).toMatch(/169\.254\.169\.254/);
    expect((await swarm.results())[0]?.state).toBe("succeeded");
  });
});

describe("agent loop under upstream faults", () => {
  it("multi-turn agents through 500s, 502s and 429s: every task ends, ledger = upstream calls, no turn is paid twice", async () => {
    const tasks = Array.from({ length: 20 }, (_, i) => ({ id: `a${i + 1}`, prompt: `[mock:tool_turns=2] Agent ${i + 1}: use scratchpad_put, then answer.` }));
    const swarm = await startSwarm(tasks, { tools: ["scratchpad"], limits: { max_attempts: 10, timeout_s: 5 } });
    await mock("/admin/scenario", { rates: { "500": 0.15, "502": 0.05, "429": 0.1 }, retry_after_s: 0, seed: 7 });
    const before = await mock("/stats");
    // Deliver tickets until the swarm ends (the room would issue them itself): a lane runs what is
    // due and waits up to INLINE_RETRY_MAX_S for a retry; a later retry waits for a later ticket.
    const deadline = Date.now() + 100_000;
    while (Date.now() < deadline) {
      const open = (await swarm.results()).filter((r) => r.state !== "succeeded" && r.state !== "failed");
      if (open.length === 0) break;
      await deliver(swarm.swarmId);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    await mock("/admin/scenario", {});
    const after = await mock("/stats");
    const status = await swarm.status();
    expect(status.state).toMatch(/^completed/);
    expect(status.counts.succeeded + status.counts.failed).toBe(20);
    const upstream = Number(after.calls) - Number(before.calls);
    const rows = await ledgerRows(swarm.swarmId, upstream);
    expect(rows).toHaveLength(upstream);
    // The faults hit agents mid-loop (after a tool turn), not only on their first call.
    expect(rows.some((r) => r.status === "error" && r.turn > 1)).toBe(true);
    // A turn that succeeded once is never called again, whatever the retries.
    const okTurns = rows.filter((r) => r.status === "ok").map((r) => `${r.call_id.split(":")[1]}:${r.turn}`);
    expect(new Set(okTurns).size).toBe(okTurns.length);
    // Each succeeded agent: exactly its 3 turns succeeded (2 tool turns and the answer).
    for (const result of (await swarm.results()).filter((r) => r.state === "succeeded")) {
      expect(okTurns.filter((t) => t.startsWith(`${result.task_id}:`)).sort()).toEqual([`${result.task_id}:1`, `${result.task_id}:2`, `${result.task_id}:3`]);
    }
  }, 120_000);
});

describe("agent loop: structured output", () => {
  const format = {
    type: "json_schema",
    json_schema: {
      name: "finding",
      schema: {
        type: "object",
        properties: { severity: { type: "string", enum: ["low", "high"] }, line: { type: "integer" } },
        required: ["severity", "line"],
        additionalProperties: false,
      },
    },
  } as const;

  it("an invalid answer gets one repair turn with the validation errors; the repaired answer is the output", async () => {
    await mock("/admin/scenario", { invalid_json: 1 });
    const swarm = await startSwarm([{ id: "j", prompt: "Extract the finding." }], { response_format: format });
    const { requests, wrap } = recordRequests();
    await deliver(swarm.swarmId, wrap);
    const [task] = await swarm.results();
    expect(task?.state).toBe("succeeded");
    expect(JSON.parse(task?.output ?? "")).toEqual({ severity: expect.stringMatching(/^(low|high)$/), line: expect.any(Number) });
    expect(requests).toHaveLength(2);
    const repair = requests[1]?.messages.at(-1);
    expect(repair?.role === "user" && repair.content).toMatch(/^\[edgeswarm:repair\]/);
  });

  it("still invalid after the repair turn: the task fails invalid_output and keeps the raw answer", async () => {
    await mock("/admin/scenario", { invalid_json: 2 });
    const swarm = await startSwarm([{ id: "j", prompt: "Extract the finding." }], { response_format: format });
    await deliver(swarm.swarmId);
    const [task] = await swarm.results();
    expect(task).toMatchObject({ state: "failed", error: { class: "invalid_output" }, attempts: 1 });
    expect(task?.output).not.toBeNull();
    expect(task?.usage.calls).toBe(2);
  });
});

describe("planner and llm reducer", () => {
  it("plans from a goal, runs the planned tasks, reduces with the llm reducer; plan and per-task results are readable", async () => {
    const swarm = await startSwarm([], {
      goal: "Research these markets:\n- solar in Spain\n- wind in Denmark\n- heat pumps in Poland",
      planner: PlannerSpecSchema.parse({ max_tasks: 10 }),
      reduce: { kind: "llm", max_output_tokens: 256 },
    });
    expect((await swarm.status()).state).toBe("planning");
    // One task a delivery, so each phase can be watched: the plan first.
    await deliver(swarm.swarmId, undefined, { maxTasks: 1 });
    const planned = await swarm.status();
    expect(planned).toMatchObject({ state: "running", tasks: 3, plan: { state: "planned", attempts: 1, task_count: 3 } });
    const plan = await swarm.stub.getPlan(TENANT);
    expect(plan?.tasks.map((t) => t.id)).toEqual(["t1", "t2", "t3"]);
    expect(plan?.tasks[0]?.prompt).toMatch(/solar in Spain/);

    await deliver(swarm.swarmId, undefined, { maxTasks: 3 });
    const reducing = await swarm.status();
    expect(reducing.state).toBe("reducing");
    expect(reducing.reduction?.levels).toEqual([{ level: 1, inputs: 3, tasks: 1, failed: 0 }]);
    await deliver(swarm.swarmId);
    const done = await swarm.status();
    expect(done.state).toBe("completed");
    expect(done.counts.succeeded).toBe(3);
    expect(done.output).toMatchObject({ kind: "llm", inputs: 3, levels: [{ level: 1, inputs: 3, tasks: 1, failed: 0 }] });
    expect(done.output?.kind === "llm" && done.output.text).toMatch(/reduced 3 results/);
    // 1 planner call + 3 tasks + 1 reducer call, all in the swarm's usage; results list the 3 tasks only.
    expect(done.usage.calls).toBe(5);
    expect((await swarm.results()).map((r) => r.task_id)).toEqual(["t1", "t2", "t3"]);
  });

  it("an invalid plan is asked for once more, told why; a second invalid plan fails the swarm with the reason", async () => {
    await mock("/admin/scenario", { invalid_plans: 1 });
    const retried = await startSwarm([], { goal: "Review:\n- a\n- b" });
    await deliver(retried.swarmId, undefined, { maxTasks: 1 });
    expect((await retried.status()).plan).toMatchObject({ state: "planning", attempts: 2 });
    expect((await retried.status()).plan?.errors.length).toBeGreaterThan(0);
    await deliver(retried.swarmId, undefined, { maxTasks: 1 });
    expect(await retried.status()).toMatchObject({ state: "running", plan: { state: "planned", attempts: 2, errors: [] } });

    await mock("/admin/scenario", { invalid_plans: 2 });
    const failed = await startSwarm([], { goal: "Review:\n- a\n- b" });
    await deliver(failed.swarmId, undefined, { maxTasks: 1 });
    await deliver(failed.swarmId, undefined, { maxTasks: 1 });
    const status = await failed.status();
    expect(status).toMatchObject({ state: "failed", plan: { state: "failed", attempts: 2 } });
    expect(status.reason).toMatch(/^planning failed: the planner's plan was invalid 2 time\(s\)/);
  });

  it("1,000 results reduce hierarchically: every reducer call fits the reducer's context, levels shrink to one answer", async () => {
    const tasks = Array.from({ length: 1_000 }, (_, i) => ({ id: `r${i + 1}`, prompt: `Summarize record ${i + 1}.` }));
    const swarm = await startSwarm(tasks, { reduce: { kind: "llm", model: "mock-small-context", context_tokens: 4_000, max_output_tokens: 200 } });
    await deliver(swarm.swarmId);
    let status = await swarm.status();
    expect(status.counts.succeeded).toBe(1_000);
    for (let guard = 0; status.state === "reducing" && guard < 10; guard += 1) {
      const level = status.reduction?.levels.at(-1);
      if (level === undefined) throw new Error("no reduce level");
      await deliver(swarm.swarmId);
      status = await swarm.status();
    }
    expect(status.state).toBe("completed");
    if (status.output?.kind !== "llm") throw new Error("expected an llm output");
    expect(status.output.levels.length).toBeGreaterThan(1);
    expect(status.output.levels[0]).toMatchObject({ level: 1, inputs: 1_000, failed: 0 });
    expect(status.output.levels.at(-1)).toMatchObject({ tasks: 1, failed: 0 });
    // A call over the context would have failed with context_length (the mock enforces 4,000 tokens).
    expect(status.output.levels.every((l) => l.failed === 0)).toBe(true);
    expect(status.output.text).toMatch(/^\[mock\] reduced/);
  }, 120_000);
});
