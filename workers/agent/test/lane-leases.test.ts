// A lane's heartbeats (lane-leases.ts): which leases a pull renews, when the next is due, and what
// the room's answer renews or takes away.
import { describe, expect, it } from "vitest";
import type { ClaimedTask } from "../../../src/core/swarm-contract.ts";
import { createLaneLeases } from "../lane-leases.ts";

const T0 = 1_000_000;

/** A granted task leased until `leaseUntil`, its calls bounded by `runUntil`. */
function task(taskId: string, leaseUntil: number, runUntil: number, attempt = 1): ClaimedTask {
  return { taskId, attempt, prompt: "p", model: "mock-1", timeoutS: 30, leaseUntil, runUntil, kind: "task", override: null, checkpoint: null };
}

describe("a lane's leases", () => {
  it("needs no renewal before the room has said how long a lease is", () => {
    const leases = createLaneLeases();
    leases.hold(task("t1", T0 + 10_000, T0 + 60_000));
    expect(leases.renewAt()).toBeNull();
    expect(leases.due(T0 + 9_999)).toBeUndefined();
  });

  it.each([
    // [what, lease ends, run bounds, now, due at, due now]
    ["one lease, more than half left", [T0 + 10_000], [T0 + 60_000], T0, T0 + 5_000, []],
    ["one lease, half left", [T0 + 10_000], [T0 + 60_000], T0 + 5_000, T0 + 5_000, ["t1"]],
    ["the earliest of two sets when", [T0 + 10_000, T0 + 8_000], [T0 + 60_000, T0 + 60_000], T0 + 3_000, T0 + 3_000, ["t2"]],
    ["a lease at its run bound cannot grow: no heartbeat", [T0 + 10_000], [T0 + 10_000], T0 + 9_000, null, []],
  ] as const)("%s", (_what, ends, bounds, now, dueAt, dueNow) => {
    const leases = createLaneLeases();
    leases.setLeaseMs(10_000);
    for (const [i, end] of ends.entries()) leases.hold(task(`t${i + 1}`, end, bounds[i] ?? end));
    expect(leases.renewAt()).toBe(dueAt);
    expect(leases.due(now)?.map((lease) => lease.taskId) ?? []).toEqual(dueNow);
  });

  it("keeps the new end of a renewed lease, and drops one the room did not renew (the task was handed out again)", () => {
    const leases = createLaneLeases();
    leases.setLeaseMs(10_000);
    leases.hold(task("t1", T0 + 10_000, T0 + 60_000));
    leases.hold(task("t2", T0 + 10_000, T0 + 60_000, 2));
    const asked = leases.due(T0 + 6_000);
    expect(asked).toEqual([
      { taskId: "t1", attempt: 1 },
      { taskId: "t2", attempt: 2 },
    ]);
    expect(leases.renewed(asked, [{ taskId: "t1", leaseUntil: T0 + 16_000 }])).toEqual(["t2"]);
    expect(leases.holds({ taskId: "t2", attempt: 2 })).toBe(false);
    expect(leases.renewAt()).toBe(T0 + 11_000);
    // A pull that asked nothing renews nothing and drops nothing.
    expect(leases.renewed(undefined, undefined)).toEqual([]);
    expect(leases.holds({ taskId: "t1", attempt: 1 })).toBe(true);
  });

  it("holds a lease by attempt, and forgets a task dropped", () => {
    const leases = createLaneLeases();
    leases.hold(task("t1", T0 + 10_000, T0 + 60_000, 3));
    expect(leases.holds({ taskId: "t1", attempt: 3 })).toBe(true);
    expect(leases.holds({ taskId: "t1", attempt: 4 })).toBe(false);
    leases.drop("t1");
    expect(leases.holds({ taskId: "t1", attempt: 3 })).toBe(false);
    leases.setLeaseMs(10_000);
    expect(leases.renewAt()).toBeNull();
  });
});
