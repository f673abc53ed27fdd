// SwarmRoom: one SQLite-backed Durable Object per swarm, the swarm's single source of truth. The
// class is a thin RPC shell: it composes the modules that own the room's tables (docs/architecture.md
// §2), moves the swarm through its phases to completion, and owns the one alarm, set at the earliest
// time any module says it needs. It never calls a model (a Durable Object is single-threaded and
// billed for wall time) and awaits no D1 write or queue send on an agent's path.
import { DurableObject } from "cloudflare:workers";
import { admitSwarm } from "../core/admit-swarm.ts";
import { readRoomSettings, type RoomSettings } from "../core/env-settings.ts";
import { readTraceSettings, type OtelSettingName, type TraceSettings } from "../core/otel-settings.ts";
import type { ErrorDetail } from "../core/errors.ts";
import { toModelMix } from "../core/route-model.ts";
import { PlannerSpecSchema } from "../core/spec-schema.ts";
import type {
  CallStart,
  CallsReport,
  HedgeGrant,
  PlanView,
  PullRequest,
  PullResponse,
  ResultsPage,
  ScratchpadRequest,
  ScratchpadResponse,
  StartSwarmInput,
  StatusRead,
  SwarmStatusWire,
  TaskPool,
} from "../core/swarm-contract.ts";
import { ifNoneMatchHits } from "../core/entity-tag.ts";
import { parseLastEventId } from "../core/live-events.ts";
import { toPublicStatus } from "../core/public-status.ts";
import type { RerunSelection } from "../core/rerun-request.ts";
import type { TaskTranscript } from "../core/task-transcript.ts";
import { capOfTenant } from "../core/tenant-budget.ts";
import type { BatchCancelCode } from "../core/batch-parts.ts";
import { SwarmBatchOutput, type BatchOutputSummary } from "./swarm-batch-output.ts";
import { SwarmBudget } from "./swarm-budget.ts";
import { SwarmCircuits } from "./swarm-circuits.ts";
import { SwarmDispatch } from "./swarm-dispatch.ts";
import { SwarmHedges } from "./swarm-hedges.ts";
import { SwarmFailFast } from "./swarm-fail-fast.ts";
import { SwarmWarmup } from "./swarm-warmup.ts";
import { FLUSH_RETRY_MS, SwarmLedger, toStartedIds } from "./swarm-ledger.ts";
import { SwarmLineage, type RerunInput } from "./swarm-lineage.ts";
import { SwarmLive } from "./swarm-live.ts";
import { SwarmTranscripts } from "./swarm-transcripts.ts";
import { SwarmWindowHistory } from "./swarm-window-history.ts";
import { SwarmMeters } from "./swarm-meters.ts";
import { advancePhase, toSwarmEnd, type PhaseRoom } from "./swarm-phases.ts";
import type { SwarmRow } from "./swarm-room-rows.ts";
import { migrateSwarmRoom } from "./swarm-room-schema.ts";
import { SwarmRouting } from "./swarm-routing.ts";
import { runScratchpad } from "./swarm-scratchpad.ts";
import { SwarmStore } from "./swarm-store.ts";
import { SwarmTasks } from "./swarm-tasks.ts";
import { SwarmTickets } from "./swarm-tickets.ts";
import { SwarmTotals } from "./swarm-totals.ts";
import { toPullPaceMs } from "../core/lane-sizing.ts";
import { SwarmViews } from "./swarm-views.ts";
import type { TenantBudget } from "./tenant-budget.ts";
import { SwarmTrace } from "./swarm-trace.ts";

/** How soon a lane that found the window full asks again (at least; the room's pace may be longer). */
const WINDOW_FULL_WAIT_MS = 100;

/** The bindings and settings the SwarmRoom reads; the orchestrator's Env provides them. */
export interface SwarmRoomEnv {
  LEDGER_DB: D1Database;
  TASK_QUEUE: Queue;
  /** The long-chain pool: tasks flagged `long` go here (TASK_QUEUE when unbound). */
  LONG_TASK_QUEUE?: Queue;
  LANE_SLOTS?: string;
  MODEL_PRICES?: string;
  GATEWAY_CONFIG?: string;
  TENANT_BUDGETS?: string;
  /** Monthly caps per tenant (absent: none are enforced). */
  TENANT_BUDGET?: DurableObjectNamespace<TenantBudget>;
  LEASE_S?: string;
  LEASE_GRACE_S?: string;
  TICKET_PULL_DEADLINE_S?: string;
  TOOL_TURN_LEASE_S?: string;
  LEDGER_FLUSH_MS?: string;
  BATCH_FLUSH_MS?: string;
  /** A batch swarm's output and error parts are written here as its lines end. */
  FILES_BUCKET?: R2Bucket;
}

/** The room's spans go out under this service.name unless OTEL_SERVICE_NAME says otherwise. */
export const ROOM_SERVICE_NAME = "edgeswarm-orchestrator";

/**
 * A lane renews its leases when half is left, so one silent for a whole lease plus this margin
 * (a slow RPC, a GC pause) has died: its ticket closes and the room issues another.
 */
const LANE_SILENCE_MARGIN_MS = 5_000;

/** An alarm this far past due has not run and will not (see wake). */
const STALE_ALARM_MS = 5_000;

type StartResult = { created: boolean; refused?: ErrorDetail[]; code?: "invalid_spec" | "budget_exceeded" };

export class SwarmRoom extends DurableObject<SwarmRoomEnv> {
  private readonly sql: SqlStorage;
  private readonly settings: RoomSettings;
  /** The alarm time this instance last set; null = unknown (read it from storage). */
  private alarmAt: number | null = null;
  private readonly meters: SwarmMeters;
  private readonly store: SwarmStore;
  private readonly totals: SwarmTotals;
  private readonly tickets: SwarmTickets;
  private readonly circuits: SwarmCircuits;
  private readonly routing: SwarmRouting;
  private readonly budget: SwarmBudget;
  private readonly tasks: SwarmTasks;
  private readonly ledger: SwarmLedger;
  private readonly dispatch: SwarmDispatch;
  private readonly failFast: SwarmFailFast;
  private readonly warmup: SwarmWarmup;
  private readonly views: SwarmViews;
  private readonly live: SwarmLive;
  private readonly lineage: SwarmLineage;
  private readonly transcripts: SwarmTranscripts;
  private readonly windowHistory: SwarmWindowHistory;
  private readonly hedges: SwarmHedges;
  private readonly batchOutput: SwarmBatchOutput;

  private readonly trace: SwarmTrace;

  constructor(ctx: DurableObjectState, env: SwarmRoomEnv & Partial<Record<OtelSettingName, string>>) {
    super(ctx, env);
    migrateSwarmRoom(ctx.storage.sql);
    SwarmTickets.migrate(ctx.storage.sql);
    SwarmMeters.migrate(ctx.storage.sql);
    SwarmStore.migrate(ctx.storage.sql);
    SwarmLive.migrate(ctx.storage.sql);
    SwarmLineage.migrate(ctx.storage.sql);
    SwarmTranscripts.migrate(ctx.storage.sql);
    SwarmWindowHistory.migrate(ctx.storage.sql);
    SwarmHedges.migrate(ctx.storage.sql);
    this.meters = new SwarmMeters(ctx.storage.sql);
    // Every module writes through the store's SqlStorage: metered, and a write to the swarm row drops its read.
    this.store = new SwarmStore(this.meters.sql);
    this.sql = this.store.sql;
    this.settings = readRoomSettings(env);
    this.trace = new SwarmTrace(ctx.storage.kv, readRoomTracing(env));
    this.totals = new SwarmTotals(this.sql);
    this.tickets = new SwarmTickets(this.sql, {
      defaultSlots: this.settings.laneSlots,
      pullDeadlineMs: this.settings.ticketPullDeadlineMs,
      laneSilenceMs: this.settings.leaseMs + LANE_SILENCE_MARGIN_MS,
    });
    this.circuits = new SwarmCircuits(this.sql);
    this.routing = new SwarmRouting(this.sql, this.store, this.totals, this.circuits, this.settings);
    this.budget = new SwarmBudget(this.sql, this.store, this.totals, this.routing, this.settings.prices, env.TENANT_BUDGET);
    this.tasks = new SwarmTasks(this.sql, this.store, this.totals);
    this.failFast = new SwarmFailFast(this.sql, this.store, this.totals);
    this.warmup = new SwarmWarmup(this.sql, this.store);
    this.ledger = new SwarmLedger(this.sql, this.store, this.totals, this.routing, this.meters, this.settings, env.LEDGER_DB, () =>
      this.tickets.measuredLanes(),
    );
    this.dispatch = new SwarmDispatch({
      sql: this.sql,
      store: this.store,
      totals: this.totals,
      tickets: this.tickets,
      routing: this.routing,
      budget: this.budget,
      tasks: this.tasks,
      ledger: this.ledger,
      meters: this.meters,
      failFast: this.failFast,
      warmup: this.warmup,
      leases: this.settings,
      queues: { short: env.TASK_QUEUE, long: env.LONG_TASK_QUEUE ?? env.TASK_QUEUE },
      trace: this.trace,
    });
    this.lineage = new SwarmLineage(this.sql);
    this.transcripts = new SwarmTranscripts(this.sql);
    this.windowHistory = new SwarmWindowHistory(this.sql);
    this.hedges = new SwarmHedges(this.sql, this.store, this.totals, this.ledger, this.settings.prices);
    this.batchOutput = new SwarmBatchOutput(this.sql, env.FILES_BUCKET, this.settings.batchFlushMs);
    this.views = new SwarmViews(
      this.sql,
      this.store,
      this.totals,
      this.routing,
      this.budget,
      this.ledger,
      this.meters,
      this.lineage,
      this.tickets,
      this.hedges,
    );
    // Listeners read the status as the API serves it (the wire form exists only for RPC).
    this.live = new SwarmLive(
      this.sql,
      ctx,
      (swarm) => toPublicStatus(this.views.toStatus(swarm)),
      () => this.windowHistory.read(),
    );
  }

  // ── RPC: orchestrator ──────────────────────────────────────────────────────────────────────

  /** Stores the swarm and its tasks and starts dispatch. Idempotent by swarm id. */
  async start(input: StartSwarmInput): Promise<StartResult> {
    return this.serve(() => this.startSwarm(input));
  }

  private async startSwarm(input: StartSwarmInput): Promise<StartResult> {
    if (this.store.swarm() !== null) return { created: false };
    const { spec } = input;
    const mix = toModelMix(spec.model);
    const cap = input.tenantCap !== undefined ? input.tenantCap : capOfTenant(this.settings.tenantBudgets, input.tenant);
    // The orchestrator admitted the spec before this call; the room asks again, with the same rules and words.
    const admitted = admitSwarm(spec, { gateway: this.settings.gateway, prices: this.settings.prices, tenantCap: cap });
    if (!admitted.ok) return { created: false, refused: admitted.error };
    const reserved = await this.budget.reserveTenant(input, mix, cap);
    if (!reserved.ok) return reserved.refused;
    const { budget, tenantMonth } = reserved;
    // The tenant reservation awaited: a concurrent start of the same id may have won meanwhile.
    if (this.store.swarm() !== null) return { created: false };
    const planner = spec.goal === undefined ? null : PlannerSpecSchema.parse(spec.planner ?? {});
    this.store.insertSwarm(input, { mix, budget, tenantMonth, planner });
    const stored = this.store.swarm();
    // A planner's swarm has no tasks yet: its lanes are sized on the prior's steady state.
    this.tickets.usePrior(input.lanePrior ?? null, stored === null ? undefined : { tasks: stored.task_count, window: stored.window });
    this.trace.begin();
    this.lineage.record(input);
    if (stored !== null) this.warmup.begin(stored);
    if (stored !== null) this.batchOutput.begin(stored);
    this.totals.invalidate();
    // The tickets and the index row (the swarm is listed at once; if D1 is down the alarm retries)
    // go together, not one after the other: on the local stack sendBatch answered 210–560 ms after
    // the send, once the agent had handed the tickets to their executors, so a write after it met
    // the first lanes' pulls, the warm-up's among them (docs/benchmarks.md).
    await Promise.all([
      this.dispatch.issueTickets(Date.now()),
      this.flush().catch((error: unknown) => console.error(`swarm ${input.swarmId}: index write failed, retrying from the alarm`, error)),
    ]);
    const started = this.store.swarm();
    if (started !== null) await this.planAlarm(started, Date.now());
    return { created: true };
  }

  async getStatus(tenant: string): Promise<SwarmStatusWire | null> {
    this.begin();
    const swarm = this.store.swarmOf(tenant);
    return swarm === null ? null : this.views.toStatus(swarm);
  }

  /**
   * The status, unless `ifNoneMatch` names its current tag (an ended swarm's; SwarmViews.statusTag):
   * then only the tag goes back, and the orchestrator answers 304 without moving the status, whose
   * output can be 1 MB. null: no such swarm for this tenant.
   */
  async readStatus(tenant: string, ifNoneMatch: string | null): Promise<StatusRead<SwarmStatusWire> | null> {
    this.begin();
    const swarm = this.store.swarmOf(tenant);
    if (swarm === null) return null;
    const status = this.views.toStatus(swarm);
    const etag = await this.views.statusTag(swarm, status);
    if (etag !== null && ifNoneMatchHits(ifNoneMatch, etag)) return { kind: "not_modified", etag };
    return { kind: "status", status, etag };
  }

  async getResults(tenant: string, cursor: string | null, limit: number): Promise<ResultsPage | null> {
    this.begin();
    const swarm = this.store.swarmOf(tenant);
    return swarm === null ? null : this.views.readResults(swarm.id, cursor, limit);
  }

  // ── RPC: agent Worker (continuous pull: each pull records outcomes and fills free slots) ─────

  /**
   * A lane's pull: records its finished outcomes (idempotent by task and attempt), then hands it up
   * to `want` tasks for its free slots, within the window, the budget and the circuits. It awaits
   * no D1 write and no queue send: tickets and flushes go out from the alarm.
   */
  async pull(request: PullRequest): Promise<PullResponse> {
    await this.waitForWarmup(request);
    return this.serve(async () => {
      const swarm = this.store.swarm();
      if (swarm === null) {
        return {
          config: null,
          granted: [],
          actions: request.reports.map((r) => ({ taskId: r.taskId, action: "ack", delaySeconds: 0 })),
          stop: true,
          retryInMs: null,
        };
      }
      const now = Date.now();
      // Heartbeats first: a lease renewed here cannot lapse while the reports below are recorded.
      const renewed = request.renew !== undefined && request.renew.length > 0 ? this.tasks.renewLeases(request.renew, now, this.settings.leaseMs) : [];
      this.transcripts.keep(request.reports);
      // A lane that names itself lists the grant-noted calls it started: the others never started.
      let started: Set<string> | undefined;
      if (request.lane !== undefined && request.sentAt !== undefined) {
        started = toStartedIds(swarm.id, request.started);
        if (request.startedPartial !== true) this.ledger.dropUnstartedNotes(request.lane, request.sentAt, started);
      }
      // Standby tasks started in ended tasks' places take those places before the ends free them.
      if (request.promoted !== undefined && request.promoted.length > 0) {
        this.dispatch.promote(request.promoted);
        this.hedges.started(swarm, request.promoted, now);
      }
      const actions = request.reports.length > 0 ? this.dispatch.recordReports(swarm, request.reports, now, started) : [];
      const releasedEnded = request.released !== undefined && request.released.length > 0 && this.dispatch.release(swarm, request.released, now);
      this.live.noteTasks(request.reports.map((report) => report.taskId));
      let ended = request.reports.length > 0 || releasedEnded;
      // The warm-up call's headers, else a recorded call (its answer or failure), release the tasks held for the cache.
      if (request.warmed === true) this.warmup.warmed(this.store.swarm() ?? swarm);
      if (request.reports.some((report) => report.calls.length > 0)) this.warmup.callsRecorded(this.store.swarm() ?? swarm);
      const current = this.store.swarm() ?? swarm;
      // Fail fast stopped the swarm: no sub-task waits to be handed out, and no held one starts.
      const halted = this.failFast.stopped(current);
      if (halted && this.failFast.skipWaiting(now)) {
        this.live.noteAll();
        ended = true;
      }
      const pool: TaskPool = request.pool ?? "short";
      // Whether the swarm still has tasks to hand out as this lane reports: what its lanes measure
      // then is the next swarm's prior (SwarmTickets.measuredLanes); in its tail only slow calls end.
      const handingOut = this.totals.waiting() > 0;
      // A pull sent again after its answer was lost gets that answer's tasks again, as far as
      // they are still leased to it under the same attempt; nothing new (it asked for these slots).
      const repeated = this.tickets.repeatedGrants(request.ticket, request.lane, request.seq);
      // Standby tasks the lane holds enter a window with room first: it has them already.
      const run =
        repeated === null && !request.final && !halted && request.held !== undefined && request.held.length > 0
          ? this.dispatch.runHeld(current, request.held, request.want)
          : [];
      this.hedges.started(current, run, now);
      const want = request.want - run.length;
      if (!request.final) this.tickets.noteRunning(request.ticket, request.running ?? 0);
      // Before the grant: the lanes it lets the room send are the ones to run what this lane is not given.
      if (request.firstHeadersMs !== undefined) this.tickets.noteFirstHeaders(request.firstHeadersMs);
      // Other lanes carry all the swarm can run: this one gets nothing more and ends (the lanes
      // that run the fewest tasks go first).
      const retire =
        repeated === null &&
        !request.final &&
        run.length === 0 &&
        this.dispatch.isSurplus(current, request.ticket, pool, now, request.timing !== undefined, {
          running: request.running ?? 0,
          // What it carried until this pull: its calls may all have just ended (a header-bound round's end).
          ended: request.reports.length,
          slots: request.slots,
        });
      const grant =
        repeated !== null
          ? { granted: this.tasks.stillLeased(repeated), ended: false, blocked: false }
          : request.final || retire || (want <= 0 && (request.standby ?? 0) <= 0)
            ? { granted: [], ended: false, blocked: false }
            : this.dispatch.grantTasks(
                current,
                Math.max(0, want),
                now,
                pool,
                request.endBy ?? null,
                request.lane === undefined
                  ? undefined
                  : {
                      id: request.lane,
                      ticket: request.ticket,
                      standby: request.standby ?? 0,
                      running: (request.running ?? 0) + run.length,
                      // Those of its held tasks that just entered the window run now.
                      held: Math.max(0, (request.held?.length ?? 0) - run.length),
                    },
              );
      this.tickets.rememberGrants(request.ticket, request.lane, request.seq, grant.granted, request.final);
      this.live.noteTasks(grant.granted.map((task) => task.taskId));
      if (grant.ended) this.live.noteAll();
      ended ||= grant.ended;
      if (ended) this.afterTasksEnded();
      const after = this.store.swarm() ?? current;
      const leaseUntil = grant.granted.reduce((max, t) => Math.max(max, t.leaseUntil), 0);
      const finished = after.finished_at !== null || after.state === "cancelled";
      if (request.timing !== undefined) this.tickets.noteTiming(request.timing, handingOut);
      if (
        this.tickets.pulled(
          request.ticket,
          request.slots,
          now,
          leaseUntil,
          request.final || finished,
          pool,
          request.draining === true,
          request.timing !== undefined,
          handingOut,
        ).delivered
      ) {
        this.meters.add("queue_received");
      }
      // An executor's start and alarm are requests of its own, made for this swarm (bounded: a lane
      // cannot inflate the bill).
      if (request.hostRequests !== undefined && request.hostRequests > 0) this.meters.add("do_requests", Math.min(request.hostRequests, 10));
      const waiting = this.totals.waiting();
      const paceMs = toPullPaceMs(this.tickets.openCount());
      const dueRetryInMs = grant.granted.length === 0 && !finished ? this.tasks.nextRetryIn(now, pool) : null;
      // A lane that asked and got nothing only because the window is full (others' tasks fill it)
      // is still needed: it asks again soon rather than ending, so the room need not send another
      // lane the moment a slot frees (a lane that is not needed is told to retire instead).
      const windowFullWait =
        grant.granted.length === 0 &&
        run.length === 0 &&
        (request.running ?? 0) === 0 &&
        !finished &&
        !retire &&
        !request.final &&
        request.want > 0 &&
        waiting > 0 &&
        (this.totals.inFlight() >= Math.min(after.window, this.failFast.inFlightCap(after) ?? after.window) || this.warmup.holding(after))
          ? Math.max(WINDOW_FULL_WAIT_MS, paceMs)
          : null;
      const retryInMs = dueRetryInMs === null ? windowFullWait : windowFullWait === null ? dueRetryInMs : Math.min(dueRetryInMs, windowFullWait);
      if (retire) this.tickets.retire(request.ticket, (request.running ?? 0) + (request.held?.length ?? 0));
      const stop = grant.granted.length === 0 && run.length === 0 && (finished || grant.blocked || (waiting === 0 && retryInMs === null));
      // A lane told to stop that runs and holds nothing is done: its ticket closes with this answer
      // rather than with one more (final) pull.
      const closed = stop && !request.final && (request.running ?? 0) === 0 && (request.held?.length ?? 0) === 0;
      if (closed) this.tickets.close(request.ticket, request.lane, request.seq);
      await this.planAlarm(after, now);
      // More tasks run than the window allows (it shrank): no standby task takes an ended one's place.
      // Nor after fail fast: the lane hands its standby tasks back, and they end skipped.
      const transfer = !finished && !halted && this.totals.inFlight() <= after.window;
      const traceparent = this.trace.traceparent();
      return {
        config: this.store.toRunConfig(after),
        ...(traceparent === undefined ? {} : { traceparent }),
        granted: grant.granted,
        actions,
        stop,
        retryInMs,
        waiting,
        leaseMs: this.settings.leaseMs,
        renewed,
        transfer,
        ...(run.length > 0 ? { run } : {}),
        ...(retire ? { retire } : {}),
        ...(closed ? { closed } : {}),
        ...(this.tickets.isGateBound() ? { gateBound: true } : {}),
        paceMs,
        ...this.hedgeAfter(after, now),
      };
    });
  }

  /**
   * A lane with nothing to report, run or hold, asking while the warm-up holds the swarm's tasks,
   * waits in its pull for the release (at most until the hold's end) instead of being told to ask
   * again: it starts its tasks the moment the upstream has the prefix, not a back-off later.
   */
  private async waitForWarmup(request: PullRequest): Promise<void> {
    const idle = request.reports.length === 0 && (request.running ?? 0) === 0 && (request.held?.length ?? 0) === 0;
    if (!idle || request.final || request.want <= 0 || request.warmed === true) return;
    this.store.begin();
    const swarm = this.store.swarm();
    const ms = swarm === null ? 0 : this.warmup.waitMs(swarm, Date.now());
    if (ms > 0) await this.warmup.waitForRelease(ms);
  }

  /**
   * Records calls as soon as they end, before their task's outcome is known, so a consumer that dies
   * mid-batch loses no usage the upstream billed. Idempotent by call id; changes no task state (the
   * outcome comes later with recordResults, whose repeated call rows are then ignored).
   */
  async recordCalls(reports: CallsReport[]): Promise<void> {
    return this.serve(async () => {
      const swarm = this.store.swarm();
      if (swarm === null) return;
      const now = Date.now();
      this.dispatch.adaptWindow(swarm, { ...this.ledger.insertCalls(swarm, reports, now), now });
      if (reports.some((report) => report.calls.length > 0)) this.warmup.callsRecorded(this.store.swarm() ?? swarm);
      this.transcripts.keep(reports);
      for (const report of reports) {
        if (report.checkpoint !== undefined) this.tasks.saveCheckpoint(report.taskId, report.attempt, report.checkpoint);
      }
      await this.planAlarm(this.store.swarm() ?? swarm, now);
    });
  }

  /**
   * Notes calls about to be sent, before their requests leave: a call whose outcome never arrives
   * (its lane died) is billed as `unknown` when its lease ends. Idempotent by call id.
   */
  async startCalls(starts: CallStart[]): Promise<void> {
    return this.serve(() => {
      const swarm = this.store.swarm();
      if (swarm !== null && starts.length > 0) this.ledger.noteStarts(swarm, starts);
    });
  }

  /**
   * A lane's call has run past the swarm's hedge delay without its whole answer: may it send the
   * backup? Granted, the backup is noted (billed whatever happens next) and its worst case reserved.
   */
  async hedgeCall(start: CallStart): Promise<HedgeGrant> {
    return this.serve(() => {
      const swarm = this.store.swarm();
      if (swarm === null) return { granted: false, reason: "off" };
      return this.hedges.grant(swarm, start, Date.now());
    });
  }

  /** A pull's `hedgeAfterMs`: present only while the swarm may send a backup. */
  private hedgeAfter(swarm: SwarmRow, now: number): Pick<PullResponse, "hedgeAfterMs"> {
    const afterMs = this.hedges.afterMsForPull(swarm, now);
    return afterMs === null ? {} : { hedgeAfterMs: afterMs };
  }

  /**
   * A shared key/value scratchpad for the swarm's agents (the scratchpad_* tools). Values are text;
   * a put replaces. Bounded: SCRATCHPAD_LIMITS (src/core/scratchpad.ts).
   */
  async scratchpad(request: ScratchpadRequest): Promise<ScratchpadResponse> {
    return this.serve(() => {
      if (this.store.swarm() === null) return { ok: false, error: "the swarm does not exist" };
      return runScratchpad(this.sql, request, Date.now());
    });
  }

  /** One task's transcript: its attempts, calls and messages as far as kept. null: no such swarm for the tenant, or no such task. */
  async getTranscript(tenant: string, taskId: string): Promise<TaskTranscript | null> {
    this.begin();
    const swarm = this.store.swarmOf(tenant);
    return swarm === null ? null : this.transcripts.read(swarm, taskId);
  }

  /** The spec and tasks a rerun of this swarm starts with. null: no such swarm for the tenant. */
  async rerunInput(tenant: string, selection: RerunSelection): Promise<RerunInput | null> {
    this.begin();
    const swarm = this.store.swarmOf(tenant);
    return swarm === null ? null : this.lineage.rerunInput(swarm.finished_at !== null, selection);
  }

  /** A rerun of this swarm started: its status lists it. */
  async addRerun(swarmId: string): Promise<void> {
    return this.serve(() => {
      if (this.store.swarm() !== null) this.lineage.addRerun(swarmId);
    });
  }

  /** A goal's plan in full (status shows its size only). null when the swarm is not the tenant's. */
  async getPlan(tenant: string): Promise<(PlanView & { tasks: { id: string; prompt: string }[] }) | null> {
    this.begin();
    const swarm = this.store.swarmOf(tenant);
    return swarm === null ? null : this.views.readPlan(swarm);
  }

  /**
   * The queue gave up on a ticket (its lanes kept dying): the ticket closes, and the alarm issues
   * another while work is left. Tasks it leased end or return through their leases, as ever.
   */
  async recordDeadTicket(ticket: string): Promise<void> {
    return this.serve(async () => {
      const swarm = this.store.swarm();
      if (swarm === null) return;
      this.tickets.pulled(ticket, 0, Date.now(), 0, true, "short");
      await this.setAlarmNoLaterThan(Date.now());
    });
  }

  /**
   * Stops dispatch at once and ends every task that is not running `cancelled`; running tasks finish
   * and are recorded (their calls are paid for). null when the swarm is not the tenant's.
   */
  async cancel(tenant: string): Promise<{ status: SwarmStatusWire; changed: boolean } | null> {
    return this.serve(() => this.cancelSwarm(tenant));
  }

  private async cancelSwarm(tenant: string): Promise<{ status: SwarmStatusWire; changed: boolean } | null> {
    const swarm = this.store.swarmOf(tenant);
    if (swarm === null) return null;
    if (swarm.finished_at !== null || swarm.state === "cancelled") return { status: this.views.toStatus(swarm), changed: false };
    const now = Date.now();
    this.sql.exec("UPDATE swarm SET state = 'cancelled', reason = 'cancelled by request', index_dirty = 1");
    this.tasks.cancelWaiting(now);
    this.live.noteAll();
    // Lanes get nothing more; their running tasks still record (and are paid for).
    this.tickets.closeAll();
    this.afterTasksEnded();
    const after = this.store.swarm();
    if (after !== null) await this.planAlarm(after, now);
    return after === null ? null : { status: this.views.toStatus(after), changed: true };
  }

  /**
   * A batch swarm whose lines have all ended: writes the lines not yet in a part (cancelled ones
   * with `cancelCode`) and returns its files' parts. null when the swarm is not the tenant's batch.
   */
  async finishBatchOutput(tenant: string, cancelCode: BatchCancelCode): Promise<BatchOutputSummary | null> {
    return this.serve(async () => {
      const swarm = this.store.swarmOf(tenant);
      return swarm === null || swarm.batch_input === null ? null : this.batchOutput.finish(swarm, cancelCode);
    });
  }

  /**
   * Cron's wake-up: a swarm with work left gets its alarm back if it has none, or one that is past
   * due and never ran (a local `wrangler dev` keeps no alarm across a restart: workers-sdk#7781,
   * and may report a stale one: workerd#3138). `woken` when it set one.
   */
  async wake(): Promise<{ woken: boolean }> {
    // Read-only as a rule (cron asks every unfinished swarm, locally every 5 s): its count is
    // stored with the room's next write, as a status read's is.
    this.begin();
    const swarm = this.store.swarm();
    if (swarm === null || (swarm.finished_at !== null && swarm.index_dirty === 0 && this.totals.unflushed() === 0)) return { woken: false };
    const now = Date.now();
    const stored = await this.ctx.storage.getAlarm();
    // An alarm that should have run a while ago did not: this instance is fresh after a restart.
    if (stored !== null && stored > now - STALE_ALARM_MS) return { woken: false };
    await this.ctx.storage.setAlarm(now);
    this.alarmAt = now;
    return { woken: true };
  }

  // ── Live progress: hibernatable WebSockets (the orchestrator forwards /live and bridges /events) ──

  /**
   * The orchestrator forwards an authenticated upgrade with the tenant in `x-edgeswarm-tenant`
   * and the resume point in `x-last-event-id`; another tenant's swarm is 404 like an unknown one.
   */
  override async fetch(request: Request): Promise<Response> {
    this.begin();
    if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") return new Response("expected a WebSocket upgrade", { status: 426 });
    const swarm = this.store.swarmOf(request.headers.get("x-edgeswarm-tenant") ?? "");
    if (swarm === null) return new Response("swarm not found", { status: 404 });
    const pair = new WebSocketPair();
    try {
      this.live.accept(pair[1], swarm, parseLastEventId(request.headers.get("x-last-event-id")));
    } finally {
      this.meters.save();
    }
    return new Response(null, { status: 101, webSocket: pair[0] });
  }

  /** Listeners send nothing the room needs; a message is ignored (a client's keep-alive). */
  override async webSocketMessage(): Promise<void> {}

  override async webSocketClose(socket: WebSocket, code: number): Promise<void> {
    // 1005/1006 mean no code was sent; close() accepts neither.
    socket.close(code === 1005 || code === 1006 ? 1000 : code, "closed");
  }

  // ── Alarm: lease and delivery deadlines, window refill, ledger flush ─────────────────────────

  override async alarm(): Promise<void> {
    this.alarmAt = null;
    // The alarm looks at all the modules noted for it; planAlarm asks them again at its end.
    this.tasks.forgetNoted();
    this.ledger.forgetNoted();
    await this.serve(async () => {
      const swarm = this.store.swarm();
      if (swarm === null) return;
      const now = Date.now();
      this.live.noteOverdue(now);
      // A lease that ended with no outcome: the calls its attempt sent are billed, as unknown.
      for (const lapsed of this.tasks.expireLeases(swarm, now)) this.ledger.settleOpenCalls(swarm, lapsed.taskId, lapsed.attempt, now);
      this.ledger.settleOrphanCalls(this.store.swarm() ?? swarm, now);
      this.tickets.expire(now);
      this.warmup.releaseIfDue(this.store.swarm() ?? swarm, now);
      if (this.tickets.sizedByPrior() && this.warmup.topUpDue(this.store.swarm() ?? swarm, now)) this.tickets.sizeForRelease();
      this.afterTasksEnded();
      await this.dispatch.issueTickets(now);
      await this.batchOutput.flushIfDue(this.store.swarm() ?? swarm, now);
      try {
        await this.flush();
      } catch (error) {
        console.error(`swarm ${swarm.id}: ledger flush failed, retrying in ${FLUSH_RETRY_MS} ms`, error);
        this.ledger.flushFailed(Date.now());
      }
      const after = this.store.swarm();
      if (after !== null) await this.planAlarm(after, Date.now(), { exactDeadline: true });
    });
  }

  // ── internals ─────────────────────────────────────────────────────────────────────────────

  /** A request (an RPC or the alarm) begins: it is counted, and it reads the swarm row afresh. */
  private begin(): void {
    // A read-only request's count is stored with the next write.
    this.meters.add("do_requests");
    this.store.begin();
  }

  /** A request that may write: the meters are stored with its writes, whatever happens. */
  private async serve<T>(work: () => Promise<T> | T): Promise<T> {
    this.begin();
    try {
      return await work();
    } finally {
      this.meters.save();
    }
  }

  /**
   * After outcomes land: move the swarm through its phases (planning → running → reducing), and
   * finish it when nothing is left open. Dispatch is pulled by lanes; tickets go out from the alarm.
   */
  private afterTasksEnded(): void {
    const before = this.store.swarm();
    if (before === null || before.finished_at !== null) return;
    // A stopped swarm's sub-tasks that went back to wait (a retry, a lapsed lease) are skipped too.
    if (this.failFast.stopped(before) && this.failFast.skipWaiting(Date.now())) this.live.noteAll();
    advancePhase(this.phaseRoom(), before);
    const swarm = this.store.swarm();
    if (swarm === null) return;
    // A phase that moved inserted its engine tasks (or the plan's): count them.
    if (swarm.state !== before.state || swarm.plan_attempts !== before.plan_attempts || swarm.reduction !== before.reduction) {
      this.totals.invalidate();
      this.dispatch.tasksInserted();
      this.live.noteAll();
    }
    const end = toSwarmEnd(swarm, this.totals.open(), this.totals.counts());
    if (end === null) {
      if (swarm.index_dirty === 0) this.sql.exec("UPDATE swarm SET index_dirty = 1");
      return;
    }
    this.sql.exec("UPDATE swarm SET state = ?, finished_at = ?, reason = ?, index_dirty = 1", end.state, Date.now(), end.reason);
    this.tickets.closeAll();
    this.ledger.flushSoon(Date.now());
  }

  /** What the phases (planning, llm reduction) read of the room. */
  private phaseRoom(): PhaseRoom {
    return {
      sql: this.sql,
      counts: () => this.totals.counts(),
      succeededOutputs: () => this.views.succeededOutputs(),
      limits: (swarm) => this.store.limits(swarm),
      gatewayContext: this.routing.gatewayContext,
    };
  }

  /** What D1 and the tenant's month must hear: a finished swarm's settlement, then the ledger rows and the index row. */
  private async flush(): Promise<void> {
    const swarm = this.store.swarm();
    if (swarm === null) return;
    await this.budget.settleTenant(swarm);
    await this.ledger.flush(swarm);
    // The root span, once, when the swarm has ended; not awaited: a dead collector delays nothing.
    const exported = this.trace.end(swarm, () => this.totals.usage().cost_usd);
    if (exported !== null) this.ctx.waitUntil(exported);
  }

  /**
   * Keeps one alarm at the earliest moment something is due: a lease, a ticket's deadline, a ledger
   * flush, a retry nobody is there to pull, the window needing more tickets, a circuit half-opening.
   * Each owner says when it needs it; this only takes the minimum (no aggregate over the swarm,
   * except the exact lease minimum when the alarm itself asks).
   */
  private async planAlarm(swarm: SwarmRow, now: number, options: { exactDeadline?: boolean } = {}): Promise<void> {
    this.windowHistory.note(swarm, now);
    this.live.flush(swarm, now);
    const times = [
      this.live.nextAlarm(),
      this.tasks.nextAlarm({ exact: options.exactDeadline === true }),
      this.ledger.nextAlarm(swarm, now),
      this.dispatch.nextAlarm(swarm, now),
      this.warmup.nextAlarm(swarm, this.tickets.sizedByPrior()),
      this.batchOutput.nextAlarm(swarm, now),
    ].filter((at): at is number => at !== null);
    if (times.length > 0) await this.setAlarmNoLaterThan(Math.min(...times));
  }

  private async setAlarmNoLaterThan(at: number): Promise<void> {
    if (this.alarmAt === null) this.alarmAt = await this.ctx.storage.getAlarm();
    if (this.alarmAt !== null && this.alarmAt <= at) return;
    await this.ctx.storage.setAlarm(at);
    this.alarmAt = at;
  }
}

/** OTEL_* for the room: a bad setting is logged and the swarm runs untraced (tracing never stops a swarm). */
function readRoomTracing(env: Partial<Record<OtelSettingName, string>>): TraceSettings | null {
  const settings = readTraceSettings(env, ROOM_SERVICE_NAME);
  if (settings.ok) return settings.value;
  console.error(JSON.stringify({ event: "tracing_off", error: settings.error }));
  return null;
}
