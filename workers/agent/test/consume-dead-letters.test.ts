// consumeDeadLetters against a fake SwarmRoom: one RPC per swarm, ack on success, retry when the
// SwarmRoom can't be reached (acking then would leave the tasks open).
import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import type { MessageBatchMessage } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { consumeDeadLetters } from "../consume-dead-letters.ts";
import type { SwarmRoomRpc } from "../swarm-rooms.ts";

function message(id: string, swarmId: string, taskIds: string[]): MessageBatchMessage<unknown> {
  return { id, timestamp: new Date(), attempts: 13, body: { v: 1, swarm_id: swarmId, task_ids: taskIds } };
}

function fakeRoom(fail: boolean) {
  const deadLettered: string[][] = [];
  const room: SwarmRoomRpc = {
    claim: () => Promise.reject(new Error("a dead letter is never claimed")),
    recordResults: () => Promise.reject(new Error("a dead letter records no results")),
    recordCalls: () => Promise.reject(new Error("a dead letter records no calls")),
    scratchpad: () => Promise.reject(new Error("a dead letter uses no scratchpad")),
    async recordDeadLetter(taskIds) {
      deadLettered.push(taskIds);
      if (fail) throw new Error("Durable Object storage operation exceeded timeout");
    },
  };
  return { room, deadLettered };
}

describe("consumeDeadLetters", () => {
  it("sends each swarm's task ids in one RPC, acks what was recorded and retries what was not", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    const a = fakeRoom(false);
    const b = fakeRoom(true);
    const batch = createMessageBatch("edgeswarm-tasks-dlq", [
      message("m1", "sw_a", ["t1", "t2"]),
      message("m2", "sw_b", ["t1"]),
      message("m3", "sw_a", ["t3"]),
      { id: "junk", timestamp: new Date(), attempts: 13, body: "not a packet" },
    ]);
    const ctx = createExecutionContext();

    await consumeDeadLetters(batch, (swarmId) => (swarmId === "sw_a" ? a.room : b.room));
    const result = await getQueueResult(batch, ctx);

    expect(a.deadLettered).toEqual([["t1", "t2", "t3"]]);
    expect(b.deadLettered).toEqual([["t1"]]);
    expect(result.explicitAcks.sort()).toEqual(["junk", "m1", "m3"]);
    expect(result.retryMessages.map((m) => m.msgId)).toEqual(["m2"]);
  });
});
