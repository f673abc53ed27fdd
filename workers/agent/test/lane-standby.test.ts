// A lane's standby tasks (lane-standby.ts): held in grant order, each started in an ended one's
// place or taken by the window, handed back unstarted when the lane stops, and each listed to the
// room until a pull that carries it is answered.
import { describe, expect, it } from "vitest";
import type { ClaimedTask } from "../../../src/core/swarm-contract.ts";
import { createLaneStandby } from "../lane-standby.ts";

const T0 = 1_000_000;

function task(taskId: string, attempt = 1): ClaimedTask {
  return {
    taskId,
    attempt,
    prompt: "p",
    model: "mock-1",
    timeoutS: 30,
    leaseUntil: 1,
    runUntil: 2,
    kind: "task",
    override: null,
    checkpoint: null,
    standby: true,
  };
}

/** A lane holding t1..tn as standby, each with its run config named after it. */
function holding(n: number) {
  const standby = createLaneStandby<string>();
  for (let i = 1; i <= n; i += 1) standby.hold({ task: task(`t${i}`), run: `run-t${i}` });
  return standby;
}

describe("a lane's standby tasks", () => {
  it("lists nothing when it holds nothing", () => {
    const standby = createLaneStandby<string>();
    expect(standby.size()).toBe(0);
    expect(standby.promoteNext(T0)).toBeUndefined();
    expect(standby.pullFields()).toEqual({});
  });

  it("starts the first granted in an ended task's place, and tells the room when, until a pull saying so is answered", () => {
    const standby = holding(3);
    expect(standby.promoteNext(T0)).toEqual({ task: task("t1"), run: "run-t1" });
    const request = standby.pullFields();
    expect(request).toEqual({
      promoted: [{ taskId: "t1", attempt: 1, startedAt: T0 }],
      held: [
        { taskId: "t2", attempt: 1 },
        { taskId: "t3", attempt: 1 },
      ],
    });
    // Another one starts while the pull is on its way: the next pull lists both, the answer clears one.
    standby.promoteNext(T0 + 40);
    standby.answered(request);
    expect(standby.pullFields()).toEqual({ promoted: [{ taskId: "t2", attempt: 1, startedAt: T0 + 40 }], held: [{ taskId: "t3", attempt: 1 }] });
    expect(standby.size()).toBe(1);
  });

  it("gives the window a held task by id, and nothing for one it does not hold", () => {
    const standby = holding(3);
    expect(standby.take("t2")?.run).toBe("run-t2");
    expect(standby.take("t2")).toBeUndefined();
    expect(standby.pullFields()).toEqual({
      held: [
        { taskId: "t1", attempt: 1 },
        { taskId: "t3", attempt: 1 },
      ],
    });
  });

  it("hands every held task back, listed as released until a pull carrying them is answered", () => {
    const standby = holding(2);
    expect(standby.releaseAll().map((t) => t.taskId)).toEqual(["t1", "t2"]);
    expect(standby.size()).toBe(0);
    expect(standby.releasing()).toBe(2);
    const request = standby.pullFields();
    expect(request).toEqual({
      released: [
        { taskId: "t1", attempt: 1 },
        { taskId: "t2", attempt: 1 },
      ],
    });
    standby.answered(request);
    expect(standby.releasing()).toBe(0);
    expect(standby.pullFields()).toEqual({});
  });
});
