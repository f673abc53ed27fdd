// HTTP: a task's transcript (GET /v1/swarms/:id/tasks/:task_id) and reruns (POST /v1/swarms/:id/rerun)
// against the real SwarmRoom, with the agent side played by hand through its pull RPC.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { CallRecord, TaskReport } from "../../../src/core/swarm-contract.ts";
import { callApi, createTenantKey, validSpec } from "./call-api.ts";

/** A key of a second tenant, for the isolation checks. */
const otherTenant = (): Promise<string> => createTenantKey({ name: "other tenant" }).then((k) => k.key);
import { readErrorBody } from "./error-body.ts";

const room = (swarmId: string) => env.SWARM_ROOM.get(env.SWARM_ROOM.idFromName(swarmId));

async function createSwarm(spec: Record<string, unknown> = validSpec({ system: "Be terse." })): Promise<string> {
  const response = await callApi("/v1/swarms", { json: spec });
  expect(response.status).toBe(202);
  return z.object({ id: z.string() }).parse(await response.json()).id;
}

const call = (turn: number, status: "ok" | "error" = "ok"): CallRecord => ({
  turn,
  model: "mock-1",
  usage: status === "ok" ? { prompt_tokens: 10, cached_tokens: 0, completion_tokens: 5, reasoning_tokens: 0, total_tokens: 15 } : null,
  latencyMs: 120,
  status,
  errorClass: status === "ok" ? null : "bad_request",
  startedAt: Date.now(),
});

/** auth.py fails after a tool-using turn; t00001 and t00002 succeed. */
async function runWithOneFailure(swarmId: string): Promise<void> {
  const lane = { ticket: "lane-t", slots: 10, final: false };
  const pulled = await room(swarmId).pull({ ...lane, reports: [], want: 3 });
  const messages = [
    { role: "system", content: "Be terse." },
    { role: "user", content: "Audit auth.py." },
    { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "http_fetch", arguments: '{"url":"x"}' } }] },
    { role: "tool", tool_call_id: "c1", content: "the page" },
  ];
  const reports = pulled.granted.map((task): TaskReport => {
    if (task.taskId === "auth.py") {
      return {
        taskId: task.taskId,
        attempt: task.attempt,
        outcome: { kind: "failed", class: "bad_request", message: "upstream refused the request", retryable: false, retryAfterMs: null },
        calls: [call(1), call(2, "error")],
        checkpoint: { step: messages.length, turns: 1, toolCalls: 1, repairs: 0, messages_json: JSON.stringify(messages) },
      };
    }
    return { taskId: task.taskId, attempt: task.attempt, outcome: { kind: "succeeded", output: `ok ${task.taskId}`, finishReason: "stop" }, calls: [call(1)] };
  });
  await room(swarmId).pull({ ...lane, reports, want: 0, final: true });
}

const TranscriptSchema = z.object({
  task_id: z.string(),
  state: z.string(),
  attempts: z.number(),
  error: z.object({ class: z.string(), message: z.string() }).nullable(),
  output: z.string().nullable(),
  calls: z.array(
    z.object({
      call_id: z.string(),
      attempt: z.number(),
      turn: z.number(),
      status: z.string(),
      latency_ms: z.number(),
      cost_usd: z.number().nullable(),
      finish_reason: z.string().nullable(),
    }),
  ),
  messages: z.array(z.object({ role: z.string() }).loose()),
  messages_truncated: z.boolean(),
  cost_usd: z.number(),
});

describe("GET /v1/swarms/:id/tasks/:task_id", () => {
  it("shows a failed task's calls, its kept conversation with the tool call and result, and its error", async () => {
    const id = await createSwarm();
    await runWithOneFailure(id);
    const response = await callApi(`/v1/swarms/${id}/tasks/auth.py`);
    expect(response.status).toBe(200);
    const transcript = TranscriptSchema.parse(await response.json());
    expect(transcript).toMatchObject({
      task_id: "auth.py",
      state: "failed",
      attempts: 1,
      error: { class: "bad_request", message: "upstream refused the request" },
    });
    expect(transcript.calls.map((c) => [c.turn, c.status])).toEqual([
      [1, "ok"],
      [2, "error"],
    ]);
    expect(transcript.calls[0]?.call_id).toBe(`${id}:auth.py:1:1`);
    expect(transcript.messages.map((m) => m.role)).toEqual(["system", "user", "assistant", "tool"]);
  });

  it("shows a single-turn task as system, prompt and answer", async () => {
    const id = await createSwarm();
    await runWithOneFailure(id);
    const transcript = TranscriptSchema.parse(await (await callApi(`/v1/swarms/${id}/tasks/t00001`)).json());
    expect(transcript.messages).toEqual([
      { role: "system", content: "Be terse." },
      { role: "user", content: "Audit db.py." },
      { role: "assistant", content: "ok t00001" },
    ]);
    expect(transcript.cost_usd).toBeGreaterThan(0);
    expect(transcript.calls.map((c) => c.finish_reason)).toEqual(["stop"]);
  });

  it("answers 404 for an unknown task, and for another tenant's swarm", async () => {
    const id = await createSwarm();
    const missing = await callApi(`/v1/swarms/${id}/tasks/nope`);
    expect(missing.status).toBe(404);
    expect((await readErrorBody(missing)).message).toBe("this swarm has no such task");
    const other = await callApi(`/v1/swarms/${id}/tasks/auth.py`, { token: await otherTenant() });
    expect(other.status).toBe(404);
    expect((await readErrorBody(other)).message).toBe("swarm not found");
  });
});

const StatusSchema = z.object({ id: z.string(), tasks: z.number(), parent_id: z.string().nullable(), reruns: z.array(z.string()) }).loose();

describe("POST /v1/swarms/:id/rerun", () => {
  it("starts a new swarm of the failed tasks with the same spec; parent and child name each other", async () => {
    const id = await createSwarm();
    await runWithOneFailure(id);
    const response = await callApi(`/v1/swarms/${id}/rerun`, { json: { tasks: "failed" } });
    expect(response.status).toBe(202);
    const created = z.object({ id: z.string(), parent_id: z.string(), tasks: z.number() }).parse(await response.json());
    expect(created).toMatchObject({ parent_id: id, tasks: 1 });
    const child = StatusSchema.parse(await (await callApi(`/v1/swarms/${created.id}`)).json());
    expect(child).toMatchObject({ parent_id: id, tasks: 1, reruns: [] });
    const parent = StatusSchema.parse(await (await callApi(`/v1/swarms/${id}`)).json());
    expect(parent.reruns).toEqual([created.id]);
    // Same task id and prompt, same system prompt.
    const transcript = TranscriptSchema.parse(await (await callApi(`/v1/swarms/${created.id}/tasks/auth.py`)).json());
    expect(transcript.messages.slice(0, 2)).toEqual([
      { role: "system", content: "Be terse." },
      { role: "user", content: "Audit auth.py." },
    ]);
  });

  it("reruns a list of ids whatever their state", async () => {
    const id = await createSwarm();
    await runWithOneFailure(id);
    const response = await callApi(`/v1/swarms/${id}/rerun`, { json: { tasks: ["t00001", "t00002"] } });
    expect(response.status).toBe(202);
    expect(z.object({ tasks: z.number() }).parse(await response.json()).tasks).toBe(2);
  });

  it.each([
    { name: "a running swarm", run: false, body: { tasks: "failed" }, status: 409, code: "conflict" },
    { name: "not_succeeded after a failure", run: true, body: { tasks: "not_succeeded" }, status: 202, code: null },
    { name: "an unknown task id", run: true, body: { tasks: ["auth.py", "ghost"] }, status: 400, code: "invalid_request" },
    { name: "an unknown selection", run: true, body: { tasks: "all" }, status: 400, code: "invalid_request" },
    { name: "an empty list", run: true, body: { tasks: [] }, status: 400, code: "invalid_request" },
    { name: "an extra field", run: true, body: { tasks: "failed", spec: {} }, status: 400, code: "invalid_request" },
  ])("$name → $status", async ({ run, body, status, code }) => {
    const id = await createSwarm();
    if (run) await runWithOneFailure(id);
    const response = await callApi(`/v1/swarms/${id}/rerun`, { json: body });
    expect(response.status).toBe(status);
    if (code !== null) expect((await readErrorBody(response)).code).toBe(code);
  });

  it("refuses when no task matches, and for another tenant's swarm", async () => {
    const id = await createSwarm();
    const lane = { ticket: "lane-ok", slots: 10, final: false };
    const pulled = await room(id).pull({ ...lane, reports: [], want: 3 });
    const reports = pulled.granted.map(
      (t): TaskReport => ({ taskId: t.taskId, attempt: t.attempt, outcome: { kind: "succeeded", output: "ok", finishReason: "stop" }, calls: [] }),
    );
    await room(id).pull({ ...lane, reports, want: 0, final: true });
    const none = await callApi(`/v1/swarms/${id}/rerun`, { json: { tasks: "failed" } });
    expect(none.status).toBe(409);
    expect((await readErrorBody(none)).details.map((d) => d.path)).toEqual(["tasks"]);
    expect((await callApi(`/v1/swarms/${id}/rerun`, { json: { tasks: "failed" }, token: await otherTenant() })).status).toBe(404);
  });
});
