// The room bench's driver Worker: POST /run starts one swarm in its SwarmRoom and runs `lanes`
// pull loops against it — each granted task is reported at once as succeeded with one call — then
// answers the swarm's status. It measures nothing itself: the bench reads workerd's CPU around it.
// Two shapes of lane:
// - "plain": an anonymous lane that asks for its slots and reports what it got in the next pull.
// - "executor": a lane as workers/agent/run-lane.ts pulls — named (so its grants note their first
//   calls), holding standby tasks it starts in the places of its ended ones (`promoted`), listing
//   its started calls, and handing back what it holds when it stops. Each pull reports every task
//   it runs as ended, so the room sees the rows and statements of a real swarm's pulls.
import type { SwarmRoom } from "../../src/durable/swarm-room.ts";
import type { ClaimedTask, PullRequest, PullResponse, StartSwarmInput, TaskReport } from "../../src/core/swarm-contract.ts";

interface DriverEnv {
  SWARM_ROOM: DurableObjectNamespace<SwarmRoom>;
}

export type LaneShape = "plain" | "executor";

interface RunRequest {
  start: StartSwarmInput;
  lanes: number;
  /** Slots each lane asks for. */
  slots: number;
  /** Absent: "plain". */
  shape?: LaneShape;
}

type Room = DurableObjectStub<SwarmRoom>;

const USAGE = { prompt_tokens: 20, cached_tokens: 0, completion_tokens: 10, reasoning_tokens: 0, total_tokens: 30 };

export default {
  async fetch(request, env): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === "/healthz") return new Response("ok");
    if (url.pathname !== "/run" || request.method !== "POST") return new Response("not found", { status: 404 });
    const run = (await request.json()) as RunRequest;
    const room = env.SWARM_ROOM.get(env.SWARM_ROOM.idFromName(run.start.swarmId));
    const started = await room.start(run.start);
    if (!started.created) return Response.json({ error: started }, { status: 500 });
    const lane = run.shape === "executor" ? executorLane : plainLane;
    await Promise.all(Array.from({ length: run.lanes }, (_, i) => lane(room, i, run.slots)));
    return Response.json(await room.getStatus(run.start.tenant));
  },
} satisfies ExportedHandler<DriverEnv>;

/** Each task ended at once, succeeded, with one call. */
function succeeded(task: ClaimedTask): TaskReport {
  return {
    taskId: task.taskId,
    attempt: task.attempt,
    outcome: { kind: "succeeded", output: `ok ${task.taskId}`, finishReason: "stop" },
    calls: [{ turn: 1, model: task.model, usage: USAGE, latencyMs: 1, status: "ok", errorClass: null, startedAt: Date.now() }],
  };
}

const idOf = (task: ClaimedTask): { taskId: string; attempt: number } => ({ taskId: task.taskId, attempt: task.attempt });

/** The swarm is over for a lane that holds nothing and was given nothing. */
const over = (answer: PullResponse): boolean => answer.stop || answer.retryInMs === null;

async function plainLane(room: Room, n: number, slots: number): Promise<void> {
  const ticket = `room-bench-${n}`;
  let reports: TaskReport[] = [];
  for (;;) {
    const answer = await room.pull({ ticket, reports, want: slots, slots, final: false });
    reports = answer.granted.map(succeeded);
    if (reports.length === 0 && over(answer)) break;
  }
  await room.pull({ ticket, reports: [], want: 0, slots, final: true });
}

async function executorLane(room: Room, n: number, slots: number): Promise<void> {
  const ticket = `room-bench-${n}`;
  const lane = `room-bench-lane-${n}`;
  let seq = 0;
  let running: ClaimedTask[] = [];
  const standby: ClaimedTask[] = [];
  for (;;) {
    // Every running task ended; standby tasks take their places, as many as there are.
    const reports = running.map(succeeded);
    const promotedTasks = standby.splice(0, running.length);
    running = promotedTasks;
    seq += 1;
    const request: PullRequest = {
      ticket,
      lane,
      seq,
      reports,
      want: Math.max(0, slots - running.length),
      slots,
      final: false,
      standby: slots,
      running: running.length,
      started: running.map((task) => ({ ...idOf(task), turn: 1 })),
      sentAt: Date.now(),
      ...(promotedTasks.length > 0 ? { promoted: promotedTasks.map(idOf) } : {}),
      ...(standby.length > 0 ? { held: standby.map(idOf) } : {}),
    };
    const answer = await room.pull(request);
    // Held tasks the window now has room for start at once; granted ones start or wait in standby.
    for (const { taskId } of answer.run ?? []) {
      const index = standby.findIndex((task) => task.taskId === taskId);
      if (index >= 0) running.push(...standby.splice(index, 1));
    }
    for (const task of answer.granted) (task.standby === true ? standby : running).push(task);
    if (running.length === 0 && standby.length === 0) {
      if (over(answer)) break;
      // Nothing to run yet: ask again when the room says, as a lane does.
      await new Promise((resolve) => setTimeout(resolve, answer.retryInMs ?? 0));
    }
    if (answer.stop) {
      // Retired: what it runs is reported with the last pull, what it holds goes back.
      await room.pull({ ticket, lane, seq: seq + 1, reports: running.map(succeeded), want: 0, slots, final: true, released: standby.map(idOf) });
      return;
    }
  }
  await room.pull({ ticket, lane, seq: seq + 1, reports: [], want: 0, slots, final: true });
}
