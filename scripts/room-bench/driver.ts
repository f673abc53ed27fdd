// The room bench's driver Worker: POST /run starts one swarm in its SwarmRoom and runs `lanes`
// pull loops against it — each granted task is reported at once as succeeded with one call — then
// answers the swarm's status. It measures nothing itself: the bench reads workerd's CPU around it.
import type { SwarmRoom } from "../../src/durable/swarm-room.ts";
import type { StartSwarmInput, TaskReport } from "../../src/core/swarm-contract.ts";

interface DriverEnv {
  SWARM_ROOM: DurableObjectNamespace<SwarmRoom>;
}

interface RunRequest {
  start: StartSwarmInput;
  lanes: number;
  /** Slots each lane asks for. */
  slots: number;
}

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
    const lane = async (n: number): Promise<void> => {
      const ticket = `room-bench-${n}`;
      let reports: TaskReport[] = [];
      for (;;) {
        const answer = await room.pull({ ticket, reports, want: run.slots, slots: run.slots, final: false });
        reports = answer.granted.map((task) => ({
          taskId: task.taskId,
          attempt: task.attempt,
          outcome: { kind: "succeeded", output: `ok ${task.taskId}`, finishReason: "stop" },
          calls: [{ turn: 1, model: task.model, usage: USAGE, latencyMs: 1, status: "ok", errorClass: null, startedAt: Date.now() }],
        }));
        if (reports.length === 0 && (answer.stop || answer.retryInMs === null)) break;
      }
      await room.pull({ ticket, reports: [], want: 0, slots: run.slots, final: true });
    };
    await Promise.all(Array.from({ length: run.lanes }, (_, i) => lane(i)));
    return Response.json(await room.getStatus(run.start.tenant));
  },
} satisfies ExportedHandler<DriverEnv>;
