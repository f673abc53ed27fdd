// consumeDeadLetters against fake SwarmRooms: each dead ticket is closed in its swarm's room (which
// issues another while work is left), acked once recorded, retried when the room can't be reached
// (acking then would leave the ticket's capacity counted); a body that is no ticket is acked.
import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { consumeDeadLetters } from "../consume-dead-letters.ts";
import { FakeRoom, roomsOf, ticketMessage } from "./fake-room.ts";

describe("consumeDeadLetters", () => {
  it("closes each dead ticket in its swarm's room, acks what was recorded and retries what was not, with no pull", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    const a = new FakeRoom("sw_a", { tasks: ["t1"] });
    const b = new FakeRoom("sw_b", { tasks: ["t1"] });
    const recordDeadTicket = b.recordDeadTicket.bind(b);
    b.recordDeadTicket = async (ticket) => {
      await recordDeadTicket(ticket);
      throw new Error("Durable Object storage operation exceeded timeout");
    };
    const batch = createMessageBatch("edgeswarm-tasks-dlq", [
      ticketMessage("m1", "sw_a", "tk-a1", 13),
      ticketMessage("m2", "sw_b", "tk-b1", 13),
      ticketMessage("m3", "sw_a", "tk-a2", 13),
      // A task packet of the earlier dispatch is a ticket named after its message.
      { id: "m4", timestamp: new Date(), attempts: 13, body: { v: 1, swarm_id: "sw_a", task_ids: ["t1"] } },
      { id: "junk", timestamp: new Date(), attempts: 13, body: "not a ticket" },
    ]);
    const ctx = createExecutionContext();

    await consumeDeadLetters(batch, roomsOf(a, b));
    const result = await getQueueResult(batch, ctx);

    expect(a.deadTickets.sort()).toEqual(["m:m4", "tk-a1", "tk-a2"]);
    expect(b.deadTickets).toEqual(["tk-b1"]);
    expect(result.explicitAcks.sort()).toEqual(["junk", "m1", "m3", "m4"]);
    expect(result.retryMessages.map((m) => m.msgId)).toEqual(["m2"]);
    // A dead ticket ends no task: its leases bring back what its lanes held.
    expect(a.pulls).toEqual([]);
    expect(a.states()).toEqual({ t1: ["pending", 0] });
    vi.restoreAllMocks();
  });
});
