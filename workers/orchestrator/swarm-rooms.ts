// The orchestrator's door to SwarmRoom Durable Objects (one per swarm, named by the swarm id).
// Takes only the SWARM_ROOM namespace; all swarm state lives in the room, never here.
import type { BatchCancelCode } from "../../src/core/batch-parts.ts";
import type { ErrorDetail } from "../../src/core/errors.ts";
import { toPublicStatus } from "../../src/core/public-status.ts";
import type { PlanView, ResultsPage, StartSwarmInput, StatusRead, SwarmStatus } from "../../src/core/swarm-contract.ts";
import type { RerunSelection } from "../../src/core/rerun-request.ts";
import type { TaskTranscript } from "../../src/core/task-transcript.ts";
import type { BatchOutputSummary } from "../../src/durable/swarm-batch-output.ts";
import type { RerunInput } from "../../src/durable/swarm-lineage.ts";
import type { SwarmRoom } from "../../src/durable/swarm-room.ts";

export interface SwarmRooms {
  start(input: StartSwarmInput): Promise<{ created: boolean; refused?: ErrorDetail[]; code?: "invalid_spec" | "budget_exceeded" }>;
  /** null: no such swarm, or it belongs to another tenant (the caller answers 404 either way). */
  getStatus(swarmId: string, tenant: string): Promise<SwarmStatus | null>;
  /** The status, or not_modified when `ifNoneMatch` names an ended swarm's current tag; null: no such swarm for this tenant. */
  readStatus(swarmId: string, tenant: string, ifNoneMatch: string | null): Promise<StatusRead<SwarmStatus> | null>;
  getResults(swarmId: string, tenant: string, cursor: string | null, limit: number): Promise<ResultsPage | null>;
  /** A goal's plan with every planned task; null: no such swarm for this tenant, or it has no goal. */
  getPlan(swarmId: string, tenant: string): Promise<(PlanView & { tasks: { id: string; prompt: string }[] }) | null>;
  /** null: no such swarm for this tenant. `changed` is false when it had already ended or been cancelled. */
  cancel(swarmId: string, tenant: string): Promise<{ status: SwarmStatus; changed: boolean } | null>;
  /** A batch swarm whose lines have all ended writes the rest of its parts; null: no such batch swarm for this tenant. */
  finishBatchOutput(swarmId: string, tenant: string, cancelCode: BatchCancelCode): Promise<BatchOutputSummary | null>;
  /** Makes sure the swarm's alarm is set if it has work left (after a restart that lost it). */
  wake(swarmId: string): Promise<{ woken: boolean }>;
  getTranscript(swarmId: string, tenant: string, taskId: string): Promise<TaskTranscript | null>;
  rerunInput(swarmId: string, tenant: string, selection: RerunSelection): Promise<RerunInput | null>;
  addRerun(parentId: string, childId: string): Promise<void>;
  /** The room's live WebSocket (an upgraded Response, status 101); null: no such swarm for this tenant. */
  openLive(swarmId: string, tenant: string, lastEventId: number | null): Promise<Response | null>;
}

export function createSwarmRooms(namespace: DurableObjectNamespace<SwarmRoom>): SwarmRooms {
  const room = (swarmId: string): DurableObjectStub<SwarmRoom> => namespace.get(namespace.idFromName(swarmId));
  return {
    start: (input) => room(input.swarmId).start(input),
    getStatus: async (swarmId, tenant) => {
      const status = await room(swarmId).getStatus(tenant);
      return status === null ? null : toPublicStatus(status);
    },
    readStatus: async (swarmId, tenant, ifNoneMatch) => {
      const read = await room(swarmId).readStatus(tenant, ifNoneMatch);
      if (read === null || read.kind === "not_modified") return read;
      return { ...read, status: toPublicStatus(read.status) };
    },
    getResults: (swarmId, tenant, cursor, limit) => room(swarmId).getResults(tenant, cursor, limit),
    getPlan: (swarmId, tenant) => room(swarmId).getPlan(tenant),
    cancel: async (swarmId, tenant) => {
      const result = await room(swarmId).cancel(tenant);
      return result === null ? null : { status: toPublicStatus(result.status), changed: result.changed };
    },
    finishBatchOutput: (swarmId, tenant, cancelCode) => room(swarmId).finishBatchOutput(tenant, cancelCode),
    wake: (swarmId) => room(swarmId).wake(),
    getTranscript: (swarmId, tenant, taskId) => room(swarmId).getTranscript(tenant, taskId),
    rerunInput: (swarmId, tenant, selection) => room(swarmId).rerunInput(tenant, selection),
    addRerun: (parentId, childId) => room(parentId).addRerun(childId),
    openLive: async (swarmId, tenant, lastEventId) => {
      const headers = new Headers({ upgrade: "websocket", "x-edgeswarm-tenant": tenant });
      if (lastEventId !== null) headers.set("x-last-event-id", String(lastEventId));
      const response = await room(swarmId).fetch("https://swarm-room/live", { headers });
      return response.status === 101 ? response : null;
    },
  };
}
