// One invocation's lanes: what they share (the clock, the header gate, the permits, the call
// journal, the CPU allowance) and the tally it logs. A queue batch (lanes hosted by the consumer)
// and a lane executor's alarm (lane-executor.ts) are each one invocation: each gets the limits
// Cloudflare gives an invocation, no more (header-gate.ts).
import type { BatchLineReader } from "./run-batch-line.ts";
import type { ModelGateway } from "./call-with-permit.ts";
import { CALL_FLUSH_MS, createCallJournal, type CallJournal, type Schedule } from "./call-journal.ts";
import { createCallStarts } from "./call-starts.ts";
import { createHeaderGate, createToolSlots } from "./header-gate.ts";
import { runLane, type LaneContext, type LaneTally } from "./run-lane.ts";
import type { SwarmRooms } from "./swarm-rooms.ts";
import { DEFAULT_TOOL_SETTINGS, toToolEnvironment, type ToolEnvironment } from "./tools/swarm-tools.ts";
import type { TaskPool } from "../../src/core/swarm-contract.ts";
import type { Ticket } from "../../src/core/ticket.ts";
import { toErrorMessage } from "../../src/core/error-message.ts";
import type { TraceSettings } from "../../src/core/otel-settings.ts";
import type { PriceTable } from "../../src/core/pricing.ts";
import { createSpanRecorder, type ExportTally } from "../../src/telemetry/span-exporter.ts";
import type { LaneTracing } from "./task-trace.ts";

/** Tracing as the composition root read it: where spans go, and the ledger's prices for their cost. */
export interface TracingSetup {
  settings: TraceSettings;
  prices: PriceTable;
  fetch: typeof fetch;
}

/** What an invocation's lanes run with: settings and ports, read once by the composition root. */
export interface LaneHostDeps {
  rooms: SwarmRooms;
  gateway: ModelGateway;
  /** Tasks one lane runs at once at most. */
  concurrency: number;
  /** Connections waiting for headers per invocation (production allows 6); 0 = no gate. */
  headerSlots: number;
  /** Lanes stop pulling new tasks this long after the invocation started. */
  pullForMs: number;
  /** Every call of the invocation must be over this long after it started (inside its wall time). */
  callsWithinMs: number;
  /** Tasks one invocation may start (its CPU allowance, across its lanes). */
  maxTasks: number;
  /** A lane waits at most this long for a retry to come due when it has nothing running. */
  idleWaitMaxMs: number;
  /** What the agents' tools reach besides the scratchpad (default: the global fetch, no webhook secret). */
  tools?: Omit<ToolEnvironment, "scratchpad">;
  /** Reads batch tasks' lines (FILES_BUCKET); absent: batch tasks fail as unreadable. */
  batchLines?: BatchLineReader;
  /** Coalescing of outcomes into pulls (default: 5 ms — or 10% of the mean call latency, see coalesceMs — or 32 outcomes). */
  coalesce?: { ms: number; outcomes: number };
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
  random?: () => number;
  schedule?: Schedule;
  /** OTEL_* set: each invocation records and exports its spans. Absent or null: no span is made. */
  tracing?: TracingSetup | null;
}

export const DEFAULT_COALESCE = { ms: 5, outcomes: 32 };

/**
 * Header slots of an invocation tool requests (http_fetch, webhooks, MCP) never take: the model's
 * calls always find these. One:
 * with half the slots for tools, a 50 ms MCP tool cost 1.9× a built-in one at W = 100; with all but
 * one, 1.5×; with all, 1.4× (one noisy run each, docs/benchmarks.md "MCP tools").
 */
export const MODEL_RESERVED_HEADER_SLOTS = 1;

/** What a pull's round trip may take beyond the lane's wait before the journal sends the calls itself. */
const PULL_MARGIN_MS = 100;

export type InvocationTally = LaneTally & {
  tickets: number;
  callFlushes: number;
  callFlushErrors: number;
  startNotes: number;
  startNoteErrors: number;
};

export interface Invocation {
  context: LaneContext;
  journal: CallJournal;
  tally: InvocationTally;
  /** The permits' own tally (waits for a key's permit, KeyPool errors). */
  permitTally: { permitWaits: number; permitWaitMs: number; keyPoolErrors: number };
  started: number;
  /** The invocation's spans (null: not traced); its host flushes them when its lanes end. */
  tracing: LaneTracing | null;
}

/** Posts the invocation's spans (bounded by the export timeout, never throws); their tally for the host's log line. */
export async function flushSpans(invocation: Invocation): Promise<{ spans?: ExportTally }> {
  if (invocation.tracing === null) return {};
  await invocation.tracing.spans.flush();
  return { spans: invocation.tracing.spans.tally };
}

/** The shared state of an invocation that runs `lanes` lanes of `pool`. */
export function createInvocation(deps: LaneHostDeps, pool: TaskPool, lanes: number): Invocation {
  const now = deps.now ?? Date.now;
  const started = now();
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const tally: InvocationTally = {
    tickets: lanes,
    pulls: 0,
    pullErrors: 0,
    granted: 0,
    ok: 0,
    failed: 0,
    deferred: 0,
    threw: 0,
    lost: 0,
    promoted: 0,
    released: 0,
    ended: {},
    slots: 0,
    ttfbMs: null,
    latencyMs: null,
    callFlushes: 0,
    callFlushErrors: 0,
    startNotes: 0,
    startNoteErrors: 0,
  };
  const callStarts = createCallStarts(deps.rooms, tally);
  const pace = { ms: 0 };
  const journal = createCallJournal({
    rooms: deps.rooms,
    ...(deps.schedule === undefined ? {} : { schedule: deps.schedule }),
    now,
    tally,
    // A call's usage waits for its lane's pull, unless that pull is later than the journal's own flush.
    flushAfterMs: () => Math.max(CALL_FLUSH_MS, pace.ms + PULL_MARGIN_MS),
  });
  // Every call of the invocation ends by then: permit waits, header-slot waits and grants keep to it.
  const callsEndBy = started + deps.callsWithinMs;
  const permitTally = { permitWaits: 0, permitWaitMs: 0, keyPoolErrors: 0 };
  // One gate for the whole invocation: Cloudflare counts connections per invocation, so the
  // lanes of one queue batch share its 6 (header-gate.ts quotes the limit). Every tool request
  // (tools/slotted-fetch.ts) takes its slot through a share of all but MODEL_RESERVED_HEADER_SLOTS,
  // so tool calls never hold every connection the model needs.
  const headerGate = createHeaderGate(deps.headerSlots);
  const toolSlot = deps.headerSlots > 0 ? createToolSlots(headerGate, deps.headerSlots - MODEL_RESERVED_HEADER_SLOTS) : null;
  const tools = deps.tools ?? toToolEnvironment(DEFAULT_TOOL_SETTINGS, fetch);
  const setup = deps.tracing ?? null;
  const tracing: LaneTracing | null =
    setup === null
      ? null
      : { spans: createSpanRecorder({ settings: setup.settings, fetch: setup.fetch }), captureContent: setup.settings.captureContent, prices: setup.prices };
  const context: LaneContext = {
    rooms: deps.rooms,
    permits: { gateway: deps.gateway, denials: new Map(), callsEndBy, now, sleep, random: deps.random ?? Math.random, tally: permitTally },
    journal,
    callStarts,
    tools: { ...tools, toolSlot },
    ...(deps.batchLines === undefined ? {} : { batchLines: deps.batchLines }),
    concurrency: deps.concurrency,
    headerGate,
    headerSlots: deps.headerSlots,
    lanes,
    pace,
    pool,
    pullUntil: started + deps.pullForMs,
    callsEndBy,
    allowance: { tasks: deps.maxTasks },
    coalesce: deps.coalesce ?? DEFAULT_COALESCE,
    idleWaitMaxMs: deps.idleWaitMaxMs,
    now,
    sleep,
    tally,
    tracing,
  };
  return { context, journal, tally, permitTally, started, tracing };
}

/**
 * Runs one lane of the invocation for `ticket`; returns whether the room heard from it (if not,
 * the ticket should come again). A lane that throws is a bug, not an upstream failure: it is
 * logged, and the leases bring back whatever it had started.
 */
export async function runTicketLane(invocation: Invocation, ticket: Ticket): Promise<boolean> {
  try {
    const sized = ticket.slots === undefined ? {} : { assumedSlots: ticket.slots };
    const prior = ticket.latency_ms === undefined ? {} : { priorLatencyMs: ticket.latency_ms };
    const { reached } = await runLane(ticket, { ...invocation.context, ...sized, ...prior });
    return reached;
  } catch (error) {
    console.error(JSON.stringify({ event: "lane_threw", swarm_id: ticket.swarm_id, ticket: ticket.ticket, error: toErrorMessage(error) }));
    return false;
  }
}
