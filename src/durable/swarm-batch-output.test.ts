// A batch swarm's output and error parts, written while it runs (src/durable/swarm-batch-output.ts),
// through the real SwarmRoom and local R2, playing the agent's lane by hand: lines are in R2 before
// the swarm ends, each line in exactly one part under a retried task, a redelivered outcome, a
// room evicted mid-way and a part whose put outlived its record, and cancel mid-way.
import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { toLineRef } from "../core/batch-line.ts";
import { toBatchFilePrefix, toBatchPartKey, toBatchPartKeys } from "../core/batch-parts.ts";
import { toBatchSpec } from "../core/batch-request.ts";
import type { PullRequest, StartSwarmInput, TaskOutcome, TaskReport } from "../core/swarm-contract.ts";
import { taskReport } from "./task-report-fixture.ts";

const TENANT = "tk_parts";
let counter = 0;

const ok = (text: string): TaskOutcome => ({ kind: "succeeded", output: text, finishReason: "stop" });
const upstream500: TaskOutcome = { kind: "failed", class: "upstream_error", retryable: true, retryAfterMs: null, message: "500 Internal Server Error" };
const unauthorized: TaskOutcome = { kind: "failed", class: "auth", retryable: false, retryAfterMs: null, message: "401 Unauthorized" };

/** A batch swarm of `lines` lines whose input file is in R2, as POST /v1/batches starts one. */
async function newBatchSwarm(lines: number) {
  counter += 1;
  const swarmId = `sw_parts${Date.now().toString(36)}${counter}`;
  const inputKey = `files/${TENANT}/file-parts${counter}`;
  const texts = Array.from({ length: lines }, (_, i) =>
    JSON.stringify({ custom_id: `req-${i + 1}`, method: "POST", url: "/v1/chat/completions", body: { model: "mock-1", messages: [] } }),
  );
  await env.FILES_BUCKET.put(inputKey, `${texts.join("\n")}\n`);
  let offset = 0;
  const tasks = texts.map((text, i) => {
    const ref = toLineRef({ offset, length: new TextEncoder().encode(text).byteLength });
    offset += new TextEncoder().encode(text).byteLength + 1;
    return { id: `l${i + 1}`, prompt: ref };
  });
  const input: StartSwarmInput = {
    swarmId,
    tenant: TENANT,
    spec: toBatchSpec({ batchId: `batch_${counter}`, model: "mock-1", maxUsd: null, maxOutputTokens: 100 }),
    tasks,
    createdAt: Date.now(),
    origin: { kind: "api" },
    batchInput: inputKey,
  };
  const stub = env.SWARM_ROOM.get(env.SWARM_ROOM.idFromName(swarmId));
  expect(await stub.start(input)).toMatchObject({ created: true });
  return { swarmId, stub };
}

type Stub = Awaited<ReturnType<typeof newBatchSwarm>>["stub"];

function pull(stub: Stub, reports: TaskReport[], want: number) {
  const request: PullRequest = { ticket: "lane-1", reports, want, slots: 100, final: false };
  return stub.pull(request);
}

/** Every line of a file's parts as R2 holds them now, part after part (counted or not, as far as they exist). */
async function linesInR2(swarmId: string, kind: "output" | "error"): Promise<string[]> {
  const listed = await env.FILES_BUCKET.list({ prefix: `${toBatchFilePrefix(TENANT, swarmId, kind)}/` });
  const lines: string[] = [];
  for (const object of listed.objects.sort((a, b) => a.key.localeCompare(b.key))) {
    const body = await env.FILES_BUCKET.get(object.key);
    lines.push(...((await body?.text()) ?? "").split("\n").filter((line) => line !== ""));
  }
  return lines;
}

const idsOf = (lines: readonly string[]) => lines.map((line) => (JSON.parse(line) as { custom_id?: string; id?: string }).custom_id ?? line);

describe("batch parts", () => {
  it("writes lines to R2 while the swarm runs, each once, however often its outcome is delivered or its task retried", async () => {
    const { swarmId, stub } = await newBatchSwarm(4);
    const first = await pull(stub, [], 4);
    expect(first.granted.map((g) => g.taskId)).toEqual(["l1", "l2", "l3", "l4"]);
    // l1 succeeds; l2's first attempt fails and is retried.
    await pull(stub, [taskReport("l1", 1, ok('{"custom_id":"req-1","response":{}}')), taskReport("l2", 1, upstream500)], 0);
    await runDurableObjectAlarm(stub);
    // The swarm still runs, and l1's line is in R2.
    expect((await stub.getStatus(TENANT))?.state).toBe("running");
    expect(idsOf(await linesInR2(swarmId, "output"))).toEqual(["req-1"]);
    // l2 waits out its back-off; held an hour off so that a slow run cannot let it come due here.
    await runInDurableObject(stub, (_instance, state) => {
      state.storage.sql.exec("UPDATE tasks SET retry_at = ? WHERE state = 'retry_wait'", Date.now() + 3_600_000);
    });
    // The same outcome again (a pull whose answer was lost), and l3 failing for good.
    const again = await pull(stub, [taskReport("l1", 1, ok('{"custom_id":"req-1","response":{}}')), taskReport("l3", 1, unauthorized)], 4);
    await runDurableObjectAlarm(stub);
    expect(idsOf(await linesInR2(swarmId, "output"))).toEqual(["req-1"]);
    expect((await linesInR2(swarmId, "error")).map((line) => JSON.parse(line))).toEqual([
      { id: "batch_req_l3", custom_id: "req-3", response: null, error: { code: "auth", message: "401 Unauthorized" } },
    ]);
    expect(again.granted).toEqual([]);
    // l2's retry comes due and succeeds: one output line, no error line for its failed first attempt.
    await runInDurableObject(stub, (_instance, state) => {
      state.storage.sql.exec("UPDATE tasks SET retry_at = ? WHERE state = 'retry_wait'", Date.now() - 1);
    });
    const retried = (await pull(stub, [], 4)).granted;
    expect(retried.map((g) => [g.taskId, g.attempt])).toEqual([["l2", 2]]);
    await pull(stub, [taskReport("l2", 2, ok('{"custom_id":"req-2","response":{}}')), taskReport("l4", 1, ok('{"custom_id":"req-4","response":{}}'))], 0);
    await pull(stub, [taskReport("l2", 2, ok('{"custom_id":"req-2","response":{}}'))], 0);
    const summary = await stub.finishBatchOutput(TENANT, "batch_cancelled");
    expect(summary).toMatchObject({ ready: true, output: { lines: 3 }, error: { lines: 1, parts: 1 } });
    expect(idsOf(await linesInR2(swarmId, "output")).sort()).toEqual(["req-1", "req-2", "req-4"]);
    // Asked again, nothing more is written.
    expect(await stub.finishBatchOutput(TENANT, "batch_cancelled")).toEqual(summary);
    expect(await linesInR2(swarmId, "output")).toHaveLength(3);
  });

  it("is not ready while a line runs; cancel mid-way keeps the output and writes the rest as batch_cancelled", async () => {
    const { swarmId, stub } = await newBatchSwarm(5);
    await pull(stub, [], 2);
    await pull(stub, [taskReport("l1", 1, ok('{"custom_id":"req-1","response":{}}'))], 0);
    await runDurableObjectAlarm(stub);
    expect(await stub.cancel(TENANT)).toMatchObject({ changed: true });
    // l2 still runs: its call finishes and is recorded after the cancel.
    expect(await stub.finishBatchOutput(TENANT, "batch_cancelled")).toEqual({ ready: false });
    await runDurableObjectAlarm(stub);
    // Cancelled lines wait for the end, which says why they were cancelled.
    expect(await linesInR2(swarmId, "error")).toEqual([]);
    await pull(stub, [taskReport("l2", 1, ok('{"custom_id":"req-2","response":{}}'))], 0);
    const summary = await stub.finishBatchOutput(TENANT, "batch_cancelled");
    expect(summary).toMatchObject({ ready: true, output: { lines: 2 }, error: { lines: 3 } });
    expect(idsOf(await linesInR2(swarmId, "output"))).toEqual(["req-1", "req-2"]);
    expect((await linesInR2(swarmId, "error")).map((line) => JSON.parse(line))).toEqual(
      [3, 4, 5].map((n) => ({ id: `batch_req_l${n}`, custom_id: `req-${n}`, response: null, error: { code: "batch_cancelled", message: expect.any(String) } })),
    );
  });

  it("a room evicted mid-way, and a part put whose record was lost, still give each line once", async () => {
    const { swarmId, stub } = await newBatchSwarm(3);
    await pull(stub, [], 3);
    await pull(stub, [taskReport("l1", 1, ok('{"custom_id":"req-1","response":{}}'))], 0);
    await runDurableObjectAlarm(stub);
    // The room restarts: its in-memory state (the flush's due time, the flush in progress) is gone.
    await evictDurableObject(stub);
    await pull(stub, [taskReport("l2", 1, ok('{"custom_id":"req-2","response":{}}'))], 0);
    // As if a flush had put part 2 with l2 and died before counting it: the next flush writes part 2 again.
    const outputPrefix = toBatchFilePrefix(TENANT, swarmId, "output");
    await env.FILES_BUCKET.put(toBatchPartKey(outputPrefix, 2), '{"custom_id":"req-2","stale":true}\n');
    await evictDurableObject(stub);
    await pull(stub, [taskReport("l3", 1, ok('{"custom_id":"req-3","response":{}}'))], 0);
    await runDurableObjectAlarm(stub);
    const summary = await stub.finishBatchOutput(TENANT, "batch_cancelled");
    if (summary === null || !summary.ready) throw new Error("expected the batch's parts");
    expect(summary.output).toMatchObject({ parts: 2, lines: 3 });
    const lines: string[] = [];
    for (const key of toBatchPartKeys({ prefix: summary.output.prefix, count: summary.output.parts })) {
      lines.push(...((await (await env.FILES_BUCKET.get(key))?.text()) ?? "").split("\n").filter((line) => line !== ""));
    }
    expect(lines.map((line) => JSON.parse(line))).toEqual(["req-1", "req-2", "req-3"].map((id) => ({ custom_id: id, response: {} })));
  });
});
