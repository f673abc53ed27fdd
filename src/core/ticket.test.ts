import { describe, expect, it } from "vitest";
import { SEND_BATCH_MAX_MESSAGES, toSendBatches, toTicket } from "./ticket.ts";

describe("ticket messages", () => {
  it.each([
    ["a ticket", { v: 2, swarm_id: "sw_a", ticket: "t1" }, { ok: true, value: { v: 2, swarm_id: "sw_a", ticket: "t1" } }],
    [
      "a v1 packet is a ticket named after its message",
      { v: 1, swarm_id: "sw_a", task_ids: ["x"] },
      { ok: true, value: { v: 2, swarm_id: "sw_a", ticket: "m:msg-1" } },
    ],
  ])("reads %s", (_label, body, expected) => {
    expect(toTicket(body, "msg-1")).toEqual(expected);
  });

  it.each([
    ["null", null],
    ["a string", "go"],
    ["no ticket", { v: 2, swarm_id: "sw_a" }],
    ["an empty swarm id", { v: 2, swarm_id: "", ticket: "t" }],
    ["an unknown version", { v: 3, swarm_id: "sw_a", ticket: "t" }],
    ["extra fields", { v: 2, swarm_id: "sw_a", ticket: "t", tasks: [] }],
    ["a v1 packet without tasks", { v: 1, swarm_id: "sw_a", task_ids: [] }],
  ])("refuses %s and says where", (_label, body) => {
    const read = toTicket(body, "msg-1");
    expect(read.ok).toBe(false);
    if (!read.ok) expect(read.issues.length).toBeGreaterThan(0);
  });

  it("splits sends at the queue's 100 messages a call", () => {
    const ids = Array.from({ length: 250 }, (_, i) => `t${i}`);
    expect(toSendBatches(ids).map((b) => b.length)).toEqual([SEND_BATCH_MAX_MESSAGES, SEND_BATCH_MAX_MESSAGES, 50]);
    expect(toSendBatches([])).toEqual([]);
  });
});
