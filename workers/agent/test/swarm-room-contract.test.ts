// The pull contract (swarm-room-contract.ts) against both of its implementations: the real
// SwarmRoom (the agent project's auxiliary orchestrator Worker) and the tests' FakeRoom.
import { env } from "cloudflare:workers";
import { LimitsSchema } from "../../../src/core/spec-schema.ts";
import { toSwarmRooms } from "../swarm-rooms.ts";
import { FakeRoom } from "./fake-room.ts";
import { startRoomSwarm } from "./room-swarm.ts";
import { describeSwarmRoomContract } from "./swarm-room-contract.ts";

const TENANT = "tk_contract_test";
let counter = 0;

describeSwarmRoomContract("the real SwarmRoom", {
  async start({ tasks, window, maxAttempts }) {
    counter += 1;
    const swarmId = `sw_contract${Date.now().toString(36)}${counter}`;
    const taskIds = Array.from({ length: tasks }, (_, i) => `task-${i + 1}`);
    const swarm = await startRoomSwarm({
      swarmId,
      tenant: TENANT,
      // timeout_s 1 and the test project's LEASE_GRACE_S 1: a lease of 2 s.
      spec: { name: `contract ${counter}`, model: "mock-1", limits: LimitsSchema.parse({ concurrency: window, max_attempts: maxAttempts, timeout_s: 1 }) },
      tasks: taskIds.map((id) => ({ id, prompt: `Summarize ${id}.` })),
      createdAt: Date.now(),
      origin: { kind: "api" },
    });
    return {
      room: toSwarmRooms(env.SWARM_ROOM)(swarmId),
      taskIds,
      async cancel() {
        await swarm.stub.cancel(TENANT);
      },
      async task(taskId) {
        const result = (await swarm.results()).find((r) => r.task_id === taskId);
        if (result === undefined) throw new Error(`no task ${taskId}`);
        return { state: result.state, attempts: result.attempts };
      },
      async calls() {
        return (await swarm.status()).usage.calls;
      },
    };
  },
  missing: () => toSwarmRooms(env.SWARM_ROOM)(`sw_contract_never_started_${Date.now().toString(36)}`),
});

describeSwarmRoomContract("the tests' FakeRoom", {
  async start({ tasks, window, maxAttempts }) {
    counter += 1;
    const taskIds = Array.from({ length: tasks }, (_, i) => `task-${i + 1}`);
    const room = new FakeRoom(`sw_fake${counter}`, { tasks: taskIds, window, maxAttempts, timeoutS: 1, leaseMs: 400 });
    return {
      room,
      taskIds,
      async cancel() {
        room.cancel();
      },
      async task(taskId) {
        const { state, attempts } = room.task(taskId);
        return { state, attempts };
      },
      async calls() {
        return room.ledger.size;
      },
    };
  },
  missing: () => new FakeRoom("sw_fake_never_started", { exists: false }),
});
