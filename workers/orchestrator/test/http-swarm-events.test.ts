// Live events against the real SwarmRoom: GET /v1/swarms/:id/events (SSE) and /live (WebSocket)
// are pushed by the room as tasks change, coalesced, with ids; a reconnect with Last-Event-ID
// resumes after the last event seen, and a stale one gets a snapshot.
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { LiveTask } from "../../../src/core/live-events.ts";
import type { TaskReport } from "../../../src/core/swarm-contract.ts";
import { callApi, createTenantKey, validSpec } from "./call-api.ts";

/** A key of a second tenant, for the isolation checks. */
const otherTenant = (): Promise<string> => createTenantKey({ name: "other tenant" }).then((k) => k.key);
import { readErrorBody } from "./error-body.ts";

const CreatedSchema = z.object({ id: z.string() });

async function createSwarm(spec: Record<string, unknown> = validSpec()): Promise<string> {
  const response = await callApi("/v1/swarms", { json: spec });
  expect(response.status).toBe(202);
  return CreatedSchema.parse(await response.json()).id;
}

const room = (swarmId: string) => env.SWARM_ROOM.get(env.SWARM_ROOM.idFromName(swarmId));

interface SseEvent {
  id: number;
  event: string;
  data: unknown;
}

/** Reads events until `until` says stop (the reader is cancelled: the client drops the connection) or the stream ends. */
async function readEvents(response: Response, until: (events: SseEvent[]) => boolean): Promise<{ events: SseEvent[]; ended: boolean }> {
  const body = response.body;
  if (body === null) throw new Error("no body");
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  const events: SseEvent[] = [];
  let buffer = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return { events, ended: true };
    buffer += value;
    for (let end = buffer.indexOf("\n\n"); end !== -1; end = buffer.indexOf("\n\n")) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const id = /^id: (.*)$/m.exec(block)?.[1];
      const event = /^event: (.*)$/m.exec(block)?.[1];
      const data = /^data: (.*)$/m.exec(block)?.[1];
      if (event === undefined || data === undefined) continue;
      events.push({ id: Number(id), event, data: JSON.parse(data) });
      if (until(events)) {
        await reader.cancel();
        return { events, ended: false };
      }
    }
  }
}

/** Plays a lane by hand: pulls `want` tasks, and reports the given ones as succeeded (or failed). */
async function pullTasks(swarmId: string, want: number): Promise<{ taskId: string; attempt: number }[]> {
  const pulled = await room(swarmId).pull({ ticket: "lane-x", slots: 10, final: false, reports: [], want });
  return pulled.granted.map((t) => ({ taskId: t.taskId, attempt: t.attempt }));
}

async function reportTasks(swarmId: string, tasks: { taskId: string; attempt: number }[], kind: "succeeded" | "failed" = "succeeded"): Promise<void> {
  const reports: TaskReport[] = tasks.map(
    (t): TaskReport => ({
      taskId: t.taskId,
      attempt: t.attempt,
      outcome:
        kind === "succeeded"
          ? { kind, output: `done ${t.taskId}`, finishReason: "stop" }
          : { kind, class: "bad_request", message: "refused", retryable: false, retryAfterMs: null },
      calls: [],
    }),
  );
  await room(swarmId).pull({ ticket: "lane-x", slots: 10, final: false, reports, want: 0 });
}

const tasksOf = (events: SseEvent[]): LiveTask[] =>
  events.flatMap((e) =>
    e.event === "snapshot" ? (e.data as { tasks: LiveTask[] }).tasks : e.event === "tasks" ? (e.data as { tasks: LiveTask[] }).tasks : [],
  );

describe("GET /v1/swarms/:id/events", () => {
  it("opens with a snapshot of every task, then pushes task changes and progress, and ends with done", async () => {
    const id = await createSwarm();
    const response = await callApi(`/v1/swarms/${id}/events`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const reading = readEvents(response, () => false);
    // The snapshot is written when the socket is accepted; a pull after it is pushed.
    const granted = await pullTasks(id, 3);
    await reportTasks(id, granted);
    const { events, ended } = await reading;
    expect(ended).toBe(true);
    expect(events[0]?.event).toBe("snapshot");
    const snapshot = events[0]?.data as { status: { id: string; state: string }; tasks: LiveTask[] };
    expect(snapshot.status).toMatchObject({ id, state: "running" });
    expect(snapshot.tasks.map((t) => t[0])).toEqual(["auth.py", "t00001", "t00002"]);
    expect(events.at(-1)?.event).toBe("done");
    expect(events.at(-1)?.data).toMatchObject({ id, state: "completed" });
    // Ids increase; the last word on every task is succeeded.
    const ids = events.map((e) => e.id);
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
    const last = new Map(tasksOf(events).map((t) => [t[0], t[1]]));
    expect(Object.fromEntries(last)).toEqual({ "auth.py": "succeeded", t00001: "succeeded", t00002: "succeeded" });
    const done = events.at(-1)?.data as { status: { counts: { succeeded: number } } };
    expect(done.status.counts.succeeded).toBe(3);
  });

  it("resumes after a dropped connection with Last-Event-ID: the events missed are replayed, nothing twice", async () => {
    const id = await createSwarm(validSpec({ tasks: Array.from({ length: 6 }, (_, i) => ({ id: `t${i}`, prompt: `p${i}` })) }));
    const first = await callApi(`/v1/swarms/${id}/events`);
    const reading = readEvents(first, (events) => events.some((e) => e.event === "tasks"));
    const granted = await pullTasks(id, 6);
    const { events: before } = await reading;
    const lastSeen = before.at(-1)?.id ?? 0;
    // Another listener keeps the room writing events while the first is away.
    const other = await callApi(`/v1/swarms/${id}/events`);
    const otherReading = readEvents(other, () => false);
    await reportTasks(id, granted.slice(0, 3), "failed");
    await reportTasks(id, granted.slice(3));
    const resumed = await callApi(`/v1/swarms/${id}/events`, { headers: { "last-event-id": String(lastSeen) } });
    const { events: after } = await readEvents(resumed, () => false);
    await otherReading;
    expect(after[0]?.event).not.toBe("snapshot");
    expect(after.every((e) => e.id > lastSeen)).toBe(true);
    const states = Object.fromEntries([...tasksOf(before), ...tasksOf(after)].map((t) => [t[0], t[1]]));
    expect(states).toEqual({ t0: "failed", t1: "failed", t2: "failed", t3: "succeeded", t4: "succeeded", t5: "succeeded" });
    expect(after.at(-1)?.data).toMatchObject({ state: "completed_with_failures" });
  });

  it("sends a fresh snapshot to a Last-Event-ID the log cannot replay (changes happened while nobody listened)", async () => {
    const id = await createSwarm();
    const first = await callApi(`/v1/swarms/${id}/events`);
    const { events } = await readEvents(first, (e) => e.length >= 1);
    const granted = await pullTasks(id, 3);
    await reportTasks(id, granted.slice(0, 1));
    const resumed = await callApi(`/v1/swarms/${id}/events?last_event_id=${events[0]?.id}`);
    const { events: after } = await readEvents(resumed, (e) => e.length >= 1);
    expect(after[0]?.event).toBe("snapshot");
    expect(after[0]?.id).toBeGreaterThan(events[0]?.id ?? 0);
    const states = Object.fromEntries(tasksOf(after).map((t) => [t[0], t[1]]));
    expect(states).toEqual({ "auth.py": "succeeded", t00001: "running", t00002: "running" });
  });

  it("coalesces: many task changes within one interval reach the client as one tasks event", async () => {
    const tasks = Array.from({ length: 60 }, (_, i) => ({ id: `c${i}`, prompt: `p${i}` }));
    const id = await createSwarm(validSpec({ tasks, limits: { concurrency: 60 } }));
    const response = await callApi(`/v1/swarms/${id}/events`);
    const reading = readEvents(response, () => false);
    const granted = await pullTasks(id, 60);
    for (let i = 0; i < 60; i += 5) await reportTasks(id, granted.slice(i, i + 5));
    const { events } = await reading;
    // 13 pulls changed tasks; the room pushed at most one tasks event per interval, plus the final one.
    const taskEvents = events.filter((e) => e.event === "tasks");
    expect(taskEvents.length).toBeLessThan(13);
    expect(
      new Set(
        tasksOf(events)
          .filter((t) => t[1] === "succeeded")
          .map((t) => t[0]),
      ).size,
    ).toBe(60);
  });

  it("pushes what the alarm changes: a task whose lease ran out shows as retry_wait", async () => {
    const id = await createSwarm(validSpec({ limits: { max_attempts: 3 } }));
    const response = await callApi(`/v1/swarms/${id}/events`);
    const reading = readEvents(response, (events) => tasksOf(events).some((t) => t[0] === "auth.py" && t[1] === "retry_wait"));
    await pullTasks(id, 3);
    await runInDurableObject(room(id), async (instance, state) => {
      state.storage.sql.exec("UPDATE tasks SET deadline = ? WHERE id = 'auth.py'", Date.now() - 1);
      // Past the push interval, so the alarm's push goes out at once.
      (instance as unknown as { live: { lastFlushAt: number } }).live.lastFlushAt = 0;
      await instance.alarm();
    });
    const { events, ended } = await reading;
    expect(ended).toBe(false);
    expect(
      tasksOf(events)
        .filter((t) => t[0] === "auth.py")
        .map((t) => t[1]),
    ).toEqual(["pending", "running", "retry_wait"]);
  });

  it("pushes a cancel as a fresh snapshot; a resume from before it gets a snapshot too, never the stale states", async () => {
    const id = await createSwarm();
    const first = await callApi(`/v1/swarms/${id}/events`);
    const reading = readEvents(first, (events) => events.filter((e) => e.event === "snapshot").length === 2);
    await pullTasks(id, 1);
    expect((await callApi(`/v1/swarms/${id}/cancel`, { method: "POST" })).status).toBe(200);
    const { events } = await reading;
    const second = events.filter((e) => e.event === "snapshot")[1]?.data as { tasks: LiveTask[] };
    expect(Object.fromEntries(second.tasks.map((t) => [t[0], t[1]]))).toEqual({ "auth.py": "running", t00001: "cancelled", t00002: "cancelled" });
    const beforeCancel = events.find((e) => e.event === "tasks")?.id ?? events[0]?.id ?? 0;
    const resumed = await callApi(`/v1/swarms/${id}/events`, { headers: { "last-event-id": String(beforeCancel) } });
    const { events: after } = await readEvents(resumed, (e) => e.length >= 1);
    expect(after[0]?.event).toBe("snapshot");
  });

  it("a snapshot carries the adaptive window's history", async () => {
    const id = await createSwarm();
    const response = await callApi(`/v1/swarms/${id}/events`);
    const { events } = await readEvents(response, (e) => e.length >= 1);
    const history = (events[0]?.data as { window_history: [number, number][] } | undefined)?.window_history ?? [];
    expect(history.length).toBeGreaterThanOrEqual(1);
    expect(history[0]?.[1]).toBeGreaterThan(0);
  });

  it("answers 404 for another tenant's swarm and 400 for a malformed Last-Event-ID", async () => {
    const id = await createSwarm();
    const other = await callApi(`/v1/swarms/${id}/events`, { token: await otherTenant() });
    expect(other.status).toBe(404);
    expect((await readErrorBody(other)).code).toBe("not_found");
    const bad = await callApi(`/v1/swarms/${id}/events`, { headers: { "last-event-id": "abc" } });
    expect(bad.status).toBe(400);
    expect((await readErrorBody(bad)).code).toBe("invalid_request");
  });
});

describe("GET /v1/swarms/:id/live", () => {
  it("upgrades to a WebSocket that receives the snapshot and the room's pushes", async () => {
    const id = await createSwarm();
    const response = await callApi(`/v1/swarms/${id}/live`, { headers: { upgrade: "websocket" } });
    expect(response.status).toBe(101);
    const socket = response.webSocket;
    if (socket === null) throw new Error("no socket");
    const received: { type: string; data: unknown }[] = [];
    const closed = new Promise<void>((resolve) => socket.addEventListener("close", () => resolve()));
    socket.addEventListener("message", (event) => received.push(JSON.parse(String(event.data))));
    socket.accept();
    await reportTasks(id, await pullTasks(id, 3));
    await closed;
    expect(received[0]?.type).toBe("snapshot");
    expect(received.at(-1)).toMatchObject({ type: "done", data: { state: "completed" } });
  });

  it("refuses a plain GET with 400 and another tenant with 404", async () => {
    const id = await createSwarm();
    expect((await callApi(`/v1/swarms/${id}/live`)).status).toBe(400);
    expect((await callApi(`/v1/swarms/${id}/live`, { token: await otherTenant(), headers: { upgrade: "websocket" } })).status).toBe(404);
  });
});
