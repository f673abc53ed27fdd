// A lane executor: a Durable Object, hosted by the agent Worker, that runs the lane of one ticket
// from its own alarm. The queue consumer hands it the ticket and acks at once (consume-tasks.ts),
// so in-flight capacity never waits for Queues to scale consumers, and each lane has the
// connection budget of an invocation of its own:
// - "Simultaneous outgoing connections/request: 6 (same as Workers)" per Durable Object request,
//   an alarm included (developers.cloudflare.com/durable-objects/platform/limits/). Whether
//   concurrent requests to one object share them is not documented: one lane per object is safe
//   under either reading, and the alarm is its only long request.
// - An alarm runs for up to 15 minutes of wall time, like a queue consumer
//   (developers.cloudflare.com/workers/platform/limits/#duration): the lane keeps to the same
//   AGENT_PULL_FOR_S and 14-minute call bound as a consumer-hosted one.
// - Alarms are at-least-once and retried when the handler throws
//   (developers.cloudflare.com/durable-objects/api/alarms/): a lane the runtime killed mid-alarm runs
//   again under the same ticket; the room treats that as a duplicate delivery.
// It keeps one row (its ticket) while it runs and deletes its storage when the lane ends.
import { DurableObject } from "cloudflare:workers";
import { createLaneHostDeps } from "./composition.ts";
import { createInvocation, flushSpans, runTicketLane } from "./lane-invocation.ts";
import { backoffDelayMs } from "../../src/core/retry-policy.ts";
import { TicketSchema, type Ticket } from "../../src/core/ticket.ts";
import type { TaskPool } from "../../src/core/swarm-contract.ts";

/** The ticket an executor holds, and how often its lane failed to reach the room. */
interface HeldLane {
  ticket: Ticket;
  pool: TaskPool;
  /** Epoch ms of the hand-off. */
  since: number;
  /** Lanes that ended without reaching the room (it was unreachable): tried again after a back-off. */
  unreached: number;
}

/** A lane that never reached its room runs again this many times; then the room's ticket deadline re-issues it. */
const UNREACHED_MAX = 3;

const LANE_KEY = "lane";

/** Durable Object requests that start an executor's lane: the consumer's `start` and the alarm. */
const EXECUTOR_REQUESTS = 2;

export class LaneExecutor extends DurableObject<Env> {
  /** Takes the ticket and sets the alarm that runs its lane; a second start of the same ticket does nothing. */
  async start(ticket: Ticket, pool: TaskPool): Promise<{ started: boolean }> {
    const parsed = TicketSchema.parse(ticket);
    if ((await this.ctx.storage.get<HeldLane>(LANE_KEY)) !== undefined) return { started: false };
    const held: HeldLane = { ticket: parsed, pool, since: Date.now(), unreached: 0 };
    await this.ctx.storage.put(LANE_KEY, held);
    await this.ctx.storage.setAlarm(Date.now());
    return { started: true };
  }

  /**
   * Hands `ticket` to the executor `name` of this object's own namespace: the local stack's relay
   * into another agent process (lane-executors.ts, RELAY_NAME). It keeps nothing and runs no lane.
   */
  async startHere(name: string, ticket: Ticket, pool: TaskPool): Promise<{ started: boolean }> {
    return this.env.LANE_EXECUTOR.get(this.env.LANE_EXECUTOR.idFromName(name)).start(ticket, pool);
  }

  override async alarm(): Promise<void> {
    const held = await this.ctx.storage.get<HeldLane>(LANE_KEY);
    if (held === undefined) return;
    const invocation = createInvocation(createLaneHostDeps(this.env), held.pool, 1);
    // Its start RPC and this alarm are requests the swarm pays for: the room counts them.
    invocation.context.hostRequests = EXECUTOR_REQUESTS;
    let reached = false;
    try {
      reached = await runTicketLane(invocation, held.ticket);
    } finally {
      await invocation.journal.stop();
    }
    // Awaited inside the alarm (DurableObjectState.waitUntil does not extend an object's life), after
    // the lane's last pull: bounded by OTEL_EXPORTER_OTLP_TIMEOUT, a failure only counted.
    const spans = await flushSpans(invocation);
    console.log(
      JSON.stringify({
        event: "executor_lane",
        swarm_id: held.ticket.swarm_id,
        ticket: held.ticket.ticket,
        reached,
        waited_ms: invocation.started - held.since,
        ...invocation.tally,
        ...invocation.permitTally,
        ...spans,
        ms: Date.now() - invocation.started,
      }),
    );
    if (reached || held.unreached + 1 >= UNREACHED_MAX) {
      // Its work is over (or the room's ticket deadline will bring another lane): nothing is kept.
      await this.ctx.storage.deleteAll();
      return;
    }
    await this.ctx.storage.put(LANE_KEY, { ...held, unreached: held.unreached + 1 } satisfies HeldLane);
    await this.ctx.storage.setAlarm(Date.now() + backoffDelayMs(held.unreached + 1, null));
  }
}
