// Traces from the engine against the real SwarmRoom (auxiliary orchestrator Worker, which traces
// to the global setup's OTLP receiver), the mock model and real lane executors: every span of a
// swarm joins one trace across the queue, pull and executor hops; the chat spans sum to the
// ledger; content only when opted in; no secret in any exported byte; a dead collector costs the
// swarm nothing.
import {
  createExecutionContext,
  createMessageBatch,
  getQueueResult,
  runDurableObjectAlarm,
  runInDurableObject,
  type MessageBatchMessage,
} from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { TicketSchema, type Ticket } from "../../../src/core/ticket.ts";
import { formatTraceparent } from "../../../src/core/trace-context.ts";
import type { TraceSpan } from "../../../src/core/trace-span.ts";
import { createTaskDeps } from "../composition.ts";
import { consumeTasks } from "../consume-tasks.ts";
import { toExecutorName, toLaneExecutors } from "../lane-executors.ts";
import { ledgerRows, startNumberedSwarm, tickets, waitFor, type NumberedSwarm } from "./room-swarm.ts";

const TENANT = "tk_traces_test";
type ReceivedSpan = TraceSpan & { service: string };

const receiver = (): string => env.OTEL_EXPORTER_OTLP_ENDPOINT;

async function spansOf(swarmId: string): Promise<ReceivedSpan[]> {
  const response = await fetch(`${receiver()}/spans?swarm_id=${encodeURIComponent(swarmId)}`);
  return (await response.json()) as ReceivedSpan[];
}

/** The swarm's spans once `ready` holds of them (the room's root goes out after its ledger flush). */
async function spansWhen(swarmId: string, ready: (spans: ReceivedSpan[]) => boolean): Promise<ReceivedSpan[]> {
  let spans: ReceivedSpan[] = [];
  expect(
    await waitFor(async () => {
      spans = await spansOf(swarmId);
      return ready(spans);
    }, 20_000),
  ).toBe(true);
  return spans;
}

const byOperation = (spans: readonly ReceivedSpan[], operation: string): ReceivedSpan[] =>
  spans.filter((s) => s.attributes["gen_ai.operation.name"] === operation);

/** Delivers tickets to consumer-hosted lanes with the agent's settings plus `settings` (OTEL_* for one test). */
async function deliver(messages: MessageBatchMessage<unknown>[], settings: Record<string, string> = {}) {
  const batch = createMessageBatch("edgeswarm-tasks", messages);
  const ctx = createExecutionContext();
  await consumeTasks(batch, createTaskDeps({ ...env, AGENT_LANE_HOST: "consumer", ...settings }));
  return getQueueResult(batch, ctx);
}

/** A ticket of `swarm` carrying `traceparent`, as the room sends it when it traces. */
function tracedTicket(swarm: NumberedSwarm, traceparent: string): MessageBatchMessage<unknown> {
  const [message] = tickets(swarm.swarmId, 1);
  if (message === undefined) throw new Error("no ticket");
  return { ...message, body: { ...(message.body as Ticket), traceparent } };
}

async function scriptMock(script: string[]): Promise<void> {
  const response = await fetch(`${env.MOCK_MODEL_URL}/admin/scenario`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ script, retry_after_s: 0 }),
  });
  expect(response.status).toBe(200);
}

/** The ledger's calls less the room's estimates, and their tokens, against the chat spans. */
async function expectChatSpansMatchLedger(swarmId: string, spans: readonly ReceivedSpan[]): Promise<void> {
  const chats = byOperation(spans, "chat");
  const rows = (await ledgerRows(swarmId, chats.length)).filter((row) => row.status !== "unknown");
  expect(chats).toHaveLength(rows.length);
  expect(new Set(chats.map((s) => s.attributes["edgeswarm.call_id"]))).toEqual(new Set(rows.map((r) => r.call_id)));
  const sum = (values: unknown[]): number => values.reduce<number>((total, v) => total + (typeof v === "number" ? v : 0), 0);
  expect(sum(chats.map((s) => s.attributes["gen_ai.usage.input_tokens"]))).toBe(sum(rows.map((r) => r.prompt_tokens)));
  expect(sum(chats.map((s) => s.attributes["gen_ai.usage.input_tokens"])) + sum(chats.map((s) => s.attributes["gen_ai.usage.output_tokens"]))).toBe(
    sum(rows.map((r) => r.total_tokens)),
  );
}

afterEach(async () => {
  await scriptMock([]);
  vi.restoreAllMocks();
});

describe("one trace per swarm, across every hop", { timeout: 40_000 }, () => {
  it("executor lane from a ticket without a traceparent (the pull hands it over): root, invoke_agent and chat spans share the room's trace, and the chat spans equal the ledger", async () => {
    const swarm = await startNumberedSwarm("trace", TENANT, 6);
    const [message] = tickets(swarm.swarmId, 1);
    const ticket = TicketSchema.parse(message?.body);
    expect(ticket.traceparent).toBeUndefined();
    const stub = env.LANE_EXECUTOR.get(env.LANE_EXECUTOR.idFromName(toExecutorName(ticket)));
    expect(await toLaneExecutors(env.LANE_EXECUTOR).start(ticket, "short")).toEqual({ started: true });
    await runDurableObjectAlarm(stub);
    expect(await waitFor(async () => (await runInDurableObject(stub, async (_, state) => (await state.storage.list()).size)) === 0, 30_000)).toBe(true);
    expect((await swarm.status()).state).toBe("completed");

    const spans = await spansWhen(swarm.swarmId, (all) => all.some((s) => s.parentSpanId === null) && byOperation(all, "invoke_agent").length === 6);
    expect(new Set(spans.map((s) => s.traceId)).size).toBe(1);
    const root = spans.find((s) => s.parentSpanId === null);
    expect(root).toMatchObject({
      service: "edgeswarm-orchestrator",
      attributes: { "edgeswarm.swarm_id": swarm.swarmId, "edgeswarm.swarm.state": "completed" },
    });
    const attempts = byOperation(spans, "invoke_agent");
    expect(attempts.map((s) => s.name).sort()).toEqual(swarm.taskIds.map((id) => `invoke_agent ${id}`));
    for (const attempt of attempts) expect(attempt).toMatchObject({ parentSpanId: root?.spanId, service: "edgeswarm-agent" });
    const attemptIds = new Set(attempts.map((s) => s.spanId));
    const chats = byOperation(spans, "chat");
    for (const chat of chats) {
      expect(attemptIds.has(chat.parentSpanId ?? "")).toBe(true);
      expect(chat).toMatchObject({ name: "chat mock-1", kind: 3, attributes: { "gen_ai.provider.name": "openai", "gen_ai.request.model": "mock-1" } });
      expect(chat.attributes["gen_ai.usage.cost"]).toBeGreaterThan(0);
      // Content is off by default.
      expect(chat.attributes).not.toHaveProperty("gen_ai.input.messages");
      expect(chat.attributes).not.toHaveProperty("gen_ai.output.messages");
    }
    for (const span of spans) expect(span.attributes["edgeswarm.swarm_id"]).toBe(swarm.swarmId);
    await expectChatSpansMatchLedger(swarm.swarmId, spans);
  });

  it.each(["consumer", "executor"] as const)(
    "a ticket's traceparent reaches a %s-hosted lane through the queue: its spans join that trace, under that span",
    async (host) => {
      const swarm = await startNumberedSwarm("traceq", TENANT, 3);
      const parent = {
        traceId: "5ace0000000000000000000000000001".slice(0, 28) + Date.now().toString(16).slice(-4),
        spanId: "00f067aa0ba902b7",
        sampled: true,
      };
      const message = tracedTicket(swarm, formatTraceparent(parent));
      if (host === "consumer") {
        await deliver([message]);
      } else {
        const ticket = TicketSchema.parse(message.body);
        const batch = createMessageBatch("edgeswarm-tasks", [message]);
        await consumeTasks(batch, createTaskDeps({ ...env, AGENT_LANE_HOST: "executor" }));
        const stub = env.LANE_EXECUTOR.get(env.LANE_EXECUTOR.idFromName(toExecutorName(ticket)));
        await runDurableObjectAlarm(stub);
      }
      const spans = await spansWhen(swarm.swarmId, (all) => byOperation(all, "invoke_agent").length === 3);
      const agentSpans = spans.filter((s) => s.service === "edgeswarm-agent");
      expect(new Set(agentSpans.map((s) => s.traceId))).toEqual(new Set([parent.traceId]));
      for (const attempt of byOperation(spans, "invoke_agent")) expect(attempt.parentSpanId).toBe(parent.spanId);
    },
  );

  it("an unsampled traceparent: the lane records no span", async () => {
    const swarm = await startNumberedSwarm("traceu", TENANT, 2);
    const result = await deliver([
      tracedTicket(swarm, formatTraceparent({ traceId: "6b0000000000000000000000000000a1", spanId: "00f067aa0ba902b7", sampled: false })),
    ]);
    expect(result.explicitAcks).toHaveLength(1);
    expect((await swarm.results()).map((r) => r.state)).toEqual(["succeeded", "succeeded"]);
    expect((await spansOf(swarm.swarmId)).filter((s) => s.service === "edgeswarm-agent")).toEqual([]);
  });

  it("a retried attempt links to the attempt before it; the failed call's span has error.type", async () => {
    const swarm = await startNumberedSwarm("tracer", TENANT, 1, { max_attempts: 3 });
    await scriptMock(["500", "ok"]);
    const parent = { traceId: "7c000000000000000000000000000b01", spanId: "00f067aa0ba902b7", sampled: true };
    await deliver([tracedTicket(swarm, formatTraceparent(parent))]);
    expect((await swarm.results()).map((r) => [r.state, r.attempts])).toEqual([["succeeded", 2]]);
    const spans = await spansWhen(swarm.swarmId, (all) => byOperation(all, "invoke_agent").length === 2);
    const [first, second] = byOperation(spans, "invoke_agent").sort(
      (a, b) => Number(a.attributes["edgeswarm.attempt"]) - Number(b.attributes["edgeswarm.attempt"]),
    );
    expect(first?.attributes).toMatchObject({ "edgeswarm.attempt": 1, "error.type": "upstream_error" });
    expect(first?.links).toBeUndefined();
    expect(second?.links).toEqual([{ traceId: parent.traceId, spanId: first?.spanId, attributes: { "edgeswarm.link": "previous_attempt" } }]);
    const failed = byOperation(spans, "chat").find((s) => s.attributes["edgeswarm.attempt"] === 1);
    expect(failed).toMatchObject({ status: { code: 2 }, attributes: { "error.type": "upstream_error" } });
    await expectChatSpansMatchLedger(swarm.swarmId, spans);
  });
});

describe("what the spans carry, and what they never carry", { timeout: 40_000 }, () => {
  it("content goes out only with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true; no key or header value is in any exported byte", async () => {
    const swarm = await startNumberedSwarm("tracec", TENANT, 2);
    const parent = { traceId: "8d000000000000000000000000000c01", spanId: "00f067aa0ba902b7", sampled: true };
    await deliver([tracedTicket(swarm, formatTraceparent(parent))], {
      OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "true",
      OTEL_EXPORTER_OTLP_HEADERS: "Authorization=Basic%20c2VjcmV0LWhlYWRlci12YWx1ZQ==",
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
    });
    const spans = await spansWhen(swarm.swarmId, (all) => byOperation(all, "chat").length === 2);
    for (const chat of byOperation(spans, "chat")) {
      expect(String(chat.attributes["gen_ai.input.messages"])).toContain("Summarize item task-");
      expect(chat.attributes).toHaveProperty("gen_ai.output.messages");
    }
    const requests = (await (await fetch(`${receiver()}/requests`)).json()) as Array<{ contentType: string; headers: Record<string, string>; body: string }>;
    // The collector got the header it was given…
    expect(requests.some((r) => r.headers.authorization === "Basic c2VjcmV0LWhlYWRlci12YWx1ZQ==" && r.contentType === "application/json")).toBe(true);
    // …and no body of any test's export holds a key, the webhook secret or the header's value.
    const secrets = [env.MODEL_API_KEY, env.WEBHOOK_SECRET, "c2VjcmV0LWhlYWRlci12YWx1ZQ==", "secret-header-value"];
    for (const request of requests) {
      const bytes = atob(request.body);
      for (const secret of secrets) expect(bytes.includes(secret)).toBe(false);
    }
  });

  it("a dead collector costs the swarm nothing: every task succeeds and is billed once, the spans are dropped and counted", async () => {
    const swarm = await startNumberedSwarm("traced", TENANT, 4);
    const logs = vi.spyOn(console, "log");
    const warnings = vi.spyOn(console, "warn");
    const parent = { traceId: "9e000000000000000000000000000d01", spanId: "00f067aa0ba902b7", sampled: true };
    // Port 9 (discard) refuses connections on loopback.
    const result = await deliver([tracedTicket(swarm, formatTraceparent(parent))], {
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9",
      OTEL_EXPORTER_OTLP_TIMEOUT: "2000",
    });
    expect(result.explicitAcks).toHaveLength(1);
    expect((await swarm.results()).map((r) => r.state)).toEqual(["succeeded", "succeeded", "succeeded", "succeeded"]);
    expect(await ledgerRows(swarm.swarmId, 4)).toHaveLength(4);
    const batchLine = logs.mock.calls.map(([line]) => String(line)).find((line) => line.includes('"event":"task_batch"'));
    const tally = (JSON.parse(batchLine ?? "{}") as { spans?: { recorded: number; exported: number; dropped: number; failedPosts: number } }).spans;
    expect(tally).toEqual({ recorded: 8, exported: 0, dropped: 8, failedPosts: 1 });
    expect(warnings.mock.calls.some(([line]) => String(line).includes('"event":"trace_export_failed"'))).toBe(true);
  });
});

describe("tracing off: zero spans, zero cost", { timeout: 40_000 }, () => {
  it.each([
    ["no endpoint set", { OTEL_EXPORTER_OTLP_ENDPOINT: "" }],
    ["OTEL_SDK_DISABLED=true over an endpoint", { OTEL_SDK_DISABLED: "true" }],
  ])("%s: a lane handed a sampled traceparent makes no span recorder, no span and no export request", async (_, settings) => {
    const swarm = await startNumberedSwarm("traceoff", TENANT, 3);
    const logs = vi.spyOn(console, "log");
    // The exporter's fetch is the global one at the batch's start (readTracing's default): this spy.
    const fetches = vi.spyOn(globalThis, "fetch");
    const parent = { traceId: "af000000000000000000000000000e01", spanId: "00f067aa0ba902b7", sampled: true };
    const result = await deliver([tracedTicket(swarm, formatTraceparent(parent))], settings);
    expect(result.explicitAcks).toHaveLength(1);
    expect((await swarm.results()).map((r) => r.state)).toEqual(["succeeded", "succeeded", "succeeded"]);
    const toUrl = (input: unknown): string => (input instanceof Request ? input.url : String(input));
    expect(fetches.mock.calls.map(([input]) => toUrl(input)).filter((url) => url.startsWith(receiver()))).toEqual([]);
    // No recorder was made for the batch: its log line has no span tally (a traced one always has).
    const batchLine = logs.mock.calls.map(([line]) => String(line)).find((line) => line.includes('"event":"task_batch"'));
    expect(batchLine).toBeDefined();
    expect(JSON.parse(batchLine ?? "{}")).not.toHaveProperty("spans");
    expect((await spansOf(swarm.swarmId)).filter((s) => s.service === "edgeswarm-agent")).toEqual([]);
  });
});
