// One task's model call through the gateway: route its model to an upstream, take a permit from one
// of that upstream's keys (waiting a bounded time), call, and always hand the permit back. It never
// retries a call: a task that gets no permit is handed back to the SwarmRoom, deferred, unpaid.
import type { ErrorClass } from "../../src/core/error-class.ts";
import { estimateConversationTokens, type ChatMessage } from "../../src/core/agent-conversation.ts";
import { resolveModelRoute } from "../../src/core/gateway-config.ts";
import type { GatewayConfig, ModelRoute, UpstreamKey } from "../../src/core/gateway-config.ts";
import type { AcquireResponse, KeyLimits, PermitOutcome, ReleaseRequest } from "../../src/core/key-pool-contract.ts";
import { orderKeys } from "../../src/core/order-keys.ts";
import type { ResponseFormat } from "../../src/core/spec-schema.ts";
import type { CallStart, ClaimedTask, TaskOutcome, TaskRunConfig } from "../../src/core/swarm-contract.ts";
import type { ChatCompletionTool } from "openai/resources/chat/completions";
import type { ModelCallResult, ModelClient, ModelRequest } from "../../src/model/model-client.ts";
import { takeHeaderSlot, type MeasuredHeaderGate } from "./header-gate.ts";
import { sendHedged, type BackupCall, type HedgeContext } from "./hedged-call.ts";
import type { KeyPools } from "./key-pools.ts";
import { isUnbilledError } from "../../src/core/budget.ts";
import { toErrorMessage } from "../../src/core/error-message.ts";

export interface ModelGateway {
  config: GatewayConfig;
  /** The client that calls with key `keyId`; key ids are unique across upstreams, so it names the upstream too. */
  clientFor(keyId: string): ModelClient;
  keyPools: KeyPools;
  /** The longest one call waits for a permit, in all, before its task is handed back. */
  permitWaitMaxMs: number;
}

type Denial = Extract<AcquireResponse, { granted: false }>;
type DenialReason = Denial["reason"];

/**
 * Denials a KeyPool gave during this batch that hold for any call on the key, whatever its size
 * (rpm, in flight, cooldown, quarantine): key id → until when (epoch ms; Infinity = quarantined).
 * The batch's other calls wait on them without asking again, so N waiting calls cost the KeyPool
 * one RPC per key and retry time, not N (one KeyPool serves every isolate and is single-threaded).
 */
export type KeyDenials = Map<string, { until: number; reason: DenialReason }>;

export interface PermitTally {
  /** Sleeps waiting for a permit, and their total length. */
  permitWaits: number;
  permitWaitMs: number;
  /** acquire or release RPCs that threw. */
  keyPoolErrors: number;
}

export interface PermitContext {
  gateway: ModelGateway;
  /** Shared by the whole batch. */
  denials: KeyDenials;
  /** Epoch ms by which every call of the batch must be over (the inline budget's end). */
  callsEndBy: number;
  now: () => number;
  sleep: (ms: number) => Promise<void>;
  /** Jitter for permit waits, in [0, 1); tests pass a fixed one. */
  random: () => number;
  tally: PermitTally;
  /** The lane's connections waiting for headers (production: 6 per invocation); absent = unbounded. */
  headerGate?: MeasuredHeaderGate;
  /**
   * Notes the call in its SwarmRoom before the request leaves (the lane's swarm): false = it could
   * not be noted, and the call is not sent. Absent: calls are not noted (unit tests of the gateway).
   */
  noteStart?: (start: CallStart) => Promise<boolean>;
  /** A call the grant noted starts without a note of its own: the lane lists it in its next pulls. */
  markStarted?: (start: { taskId: string; attempt: number; turn: number }) => void;
  /** limits.hedge: the delay in force and the room's grant of a backup (absent: no backups). */
  hedge?: HedgeContext & { grant(start: CallStart): Promise<boolean> };
  /**
   * A sent call of `task` has its response headers, or ended without them: called once per call, the
   * moment the model client frees its header slot (the upstream has processed the prompt by then),
   * with the time since it was sent, ms.
   */
  onHeaders?: (task: ClaimedTask, elapsedMs: number) => void;
  /** A call of `task` is sent now (its time to headers counts from here; onHeaders follows once). */
  onSent?: (task: ClaimedTask) => void;
  /** A sent call of `task` (or its backup) has answered, or failed: called the moment it does. */
  onEnded?: (task: ClaimedTask) => void;
}

/** One turn's call: the conversation so far and what this call may do. */
export interface TurnRequest {
  /** The turn's number in the task's loop (its call id's last part). */
  turn: number;
  messages: readonly ChatMessage[];
  tools: readonly ChatCompletionTool[] | null;
  maxOutputTokens: number;
  responseFormat: ResponseFormat | null;
  /** A batch line's own request body, sent as it is (its messages replace `messages`); see ModelRequest. */
  passthrough?: { body: Record<string, unknown>; promptTokens: number };
}

/** The prompt's token estimate a permit and the room's note reserve for. */
function promptTokensOf(turn: TurnRequest): number {
  return turn.passthrough?.promptTokens ?? estimateConversationTokens(turn.messages, turn.tools);
}

export type PermitCallResult =
  | { kind: "called"; result: ModelCallResult }
  /** No model call was made: the task's outcome as it stands (deferred, or failed for good). */
  | { kind: "not_called"; outcome: TaskOutcome };

/** A permit outlives the call's own timeout by this much before the KeyPool reclaims it. */
const LEASE_MARGIN_MS = 30_000;
/** When every KeyPool RPC threw: they are usually back within a couple of seconds. */
const KEY_POOL_DOWN_RETRY_MS = 2_000;
/** When every key is quarantined: nothing frees it but an operator, so look again now and then. */
const QUARANTINED_RETRY_MS = 5_000;
/**
 * Waiters whose keys free up at the same moment would all ask at that moment; a little jitter
 * (up to half the wait, at most this much) spreads them out.
 */
const MAX_JITTER_MS = 250;

/** Token-independent reasons: true of the key for any call, so the batch may share them. */
const SHARED_REASONS: ReadonlySet<DenialReason> = new Set<DenialReason>(["rpm", "in_flight", "cooldown", "quarantined"]);

/**
 * Runs one model call of the task (one turn of its loop), with its backup when limits.hedge says
 * so (hedged-call.ts). Throws only if the model client throws (a bug), and then only after the
 * permit is released. `onCallEnded` sees each call's result as soon as the upstream answers (a
 * backup's with whether it was kept), before the permit's release RPC, so the call can be
 * journaled without waiting for it; with the route it took (its upstream, for the call's span).
 */
export async function callWithPermit(
  config: TaskRunConfig,
  task: ClaimedTask,
  turn: TurnRequest,
  ctx: PermitContext,
  onCallEnded: (result: ModelCallResult, route: ModelRoute, hedge?: "won" | "lost") => void = () => {},
): Promise<PermitCallResult> {
  const route = resolveModelRoute(ctx.gateway.config, task.model);
  if (route === null) return notCalled(permanentFailure("not_found", `model ${task.model} is not served by the gateway`));
  // Each sent call's end (a backup's too): the lane hears it, then the caller journals it.
  const ended = (result: ModelCallResult, hedge?: "won" | "lost"): void => {
    ctx.onEnded?.(task);
    onCallEnded(result, route, hedge);
  };
  const request: ModelRequest = {
    // The upstream's own id; the CallRecord keeps the gateway name, which prices and reports use.
    model: route.upstreamModel,
    messages: turn.messages,
    tools: turn.tools,
    parallelToolCalls: turn.tools === null ? null : config.parallelToolCalls,
    maxOutputTokens: turn.maxOutputTokens,
    timeoutMs: task.timeoutS * 1_000,
    responseFormat: turn.responseFormat,
    ...(turn.passthrough === undefined ? {} : { passthrough: turn.passthrough.body }),
  };
  // A wait (for a permit, for a header slot) must leave the call its whole timeout inside both the
  // invocation's time and the task's run bound (its lease is renewed by heartbeats meanwhile).
  const latestStart = Math.min(ctx.callsEndBy, task.runUntil) - request.timeoutMs;

  const only = route.keys[0];
  if (route.keys.length === 1 && only !== undefined && !hasLimits(only)) {
    // One key without limits (the default config): a KeyPool would have nothing to count and no
    // other key to turn to, so its two RPCs per call would buy nothing. A 429 still shrinks the
    // swarm's window and is retried after its Retry-After by the SwarmRoom, as before the gateway.
    const ready = await readyToSend(task, turn, request, ctx, latestStart);
    if ("outcome" in ready) return notCalled(ready.outcome);
    const client = ctx.gateway.clientFor(only.id);
    const result = await sendHedged(ready.request, {
      send: (r) => client.complete(r),
      hedge: ctx.hedge,
      now: ctx.now,
      prepareBackup: (timeoutMs) => prepareBackup(task, turn, { ...request, timeoutMs }, ctx, null),
      onEnded: ended,
    });
    return { kind: "called", result };
  }

  const permitRequest: PermitRequest = {
    tokens: promptTokensOf(turn) + turn.maxOutputTokens,
    leaseMs: request.timeoutMs + LEASE_MARGIN_MS,
    latestStart,
  };
  const keys = orderKeys(route.keys, config.swarmId, task.taskId, task.attempt);
  const permit = await acquirePermit(route, keys, permitRequest, ctx);
  if (permit.kind === "none") return notCalled(permit.outcome);

  let result: ModelCallResult | null = null;
  let called = false;
  try {
    const ready = await readyToSend(task, turn, request, ctx, latestStart);
    if ("outcome" in ready) return notCalled(ready.outcome);
    called = true;
    const client = ctx.gateway.clientFor(permit.keyId);
    result = await sendHedged(ready.request, {
      send: (r) => client.complete(r),
      hedge: ctx.hedge,
      now: ctx.now,
      prepareBackup: (timeoutMs) => prepareBackup(task, turn, { ...request, timeoutMs }, ctx, { route, keys, permitRequest }),
      onEnded: ended,
    });
    return { kind: "called", result };
  } finally {
    await releasePermit(permit.keyId, toReleaseRequest(permit.permitId, result, called), ctx);
  }
}

/** What a permit goes back with: the call's tokens and outcome (`called` false: it was never made). */
function toReleaseRequest(permitId: string, result: ModelCallResult | null, called: boolean): ReleaseRequest {
  return {
    permitId,
    // An HTTP error answered before generation bills nothing, and a call never made nothing at
    // all: give its reservation back at once.
    tokens: !called ? 0 : (result?.usage?.total_tokens ?? (result !== null && !result.ok && isUnbilledError(result.error.class) ? 0 : null)),
    outcome: toPermitOutcome(result),
    retryAfterMs: result === null || result.ok ? null : result.error.retryAfterMs,
  };
}

/** How a call ended, as far as its key is concerned; null = the client threw. */
export function toPermitOutcome(result: ModelCallResult | null): PermitOutcome {
  if (result === null) return "error";
  if (result.ok) return "ok";
  switch (result.error.class) {
    case "rate_limited":
      return "rate_limited";
    case "auth":
    case "quota_exceeded":
      return "key_rejected";
    default:
      return "error";
  }
}

function hasLimits(key: UpstreamKey): boolean {
  return key.rpm !== undefined || key.tpm !== undefined || key.max_in_flight !== undefined;
}

function toKeyLimits(key: UpstreamKey): KeyLimits {
  return { rpm: key.rpm ?? null, tpm: key.tpm ?? null, maxInFlight: key.max_in_flight ?? null };
}

type PermitAttempt = { kind: "granted"; keyId: string; permitId: string } | { kind: "none"; outcome: TaskOutcome };

interface PermitRequest {
  tokens: number;
  leaseMs: number;
  /** Epoch ms after which no wait may end. */
  latestStart: number;
}

/**
 * Asks the keys in order; the first grant wins. While none grants, waits for the soonest key the
 * KeyPools named, as long as the total wait stays within PERMIT_WAIT_MAX_S and `latestStart`.
 * Cost: a call with a permit makes two KeyPool RPCs (acquire, release), plus one acquire per key
 * asked in vain; a KeyPool takes ~500-1,000 RPCs/s, i.e. a few hundred calls/s per key.
 */
async function acquirePermit(route: ModelRoute, keys: readonly UpstreamKey[], request: PermitRequest, ctx: PermitContext): Promise<PermitAttempt> {
  const startedAt = ctx.now();
  for (;;) {
    const now = ctx.now();
    let soonestMs: number | null = null;
    let unreachable = 0;
    let tooLarge = 0;
    let quarantined = 0;
    const reasons = new Set<string>();
    for (const key of keys) {
      const known = ctx.denials.get(key.id);
      let denial: Denial;
      if (known !== undefined && known.until > now) {
        denial = { granted: false, reason: known.reason, retryAfterMs: known.until === Infinity ? null : known.until - now };
      } else {
        const answer = await askKeyPool(route, key, request, ctx);
        if (answer === null) {
          unreachable += 1;
          reasons.add("KeyPool unreachable");
          continue;
        }
        if (answer.granted) return { kind: "granted", keyId: key.id, permitId: answer.permitId };
        denial = answer;
        if (SHARED_REASONS.has(denial.reason)) {
          ctx.denials.set(key.id, { until: denial.retryAfterMs === null ? Infinity : now + denial.retryAfterMs, reason: denial.reason });
        }
      }
      reasons.add(denial.reason);
      if (denial.reason === "too_large") tooLarge += 1;
      if (denial.reason === "quarantined") quarantined += 1;
      // null: not before an operator acts (quarantined, or too large for the key): skip the key.
      if (denial.retryAfterMs !== null) soonestMs = Math.min(soonestMs ?? Infinity, denial.retryAfterMs);
    }

    const why = `no key of upstream ${route.upstream} had a permit: ${[...reasons].join(", ")}`;
    if (soonestMs === null) {
      if (tooLarge > 0 && tooLarge === keys.length) {
        return {
          kind: "none",
          outcome: permanentFailure(
            "bad_request",
            `the call reserves ${request.tokens} tokens (prompt estimate + max_output_tokens), more than the tpm of any key of upstream ${route.upstream}`,
          ),
        };
      }
      if (quarantined > 0 && quarantined === keys.length) {
        // Only an operator can bring a rejected key back; deferring would cycle to the dead-letter queue.
        return {
          kind: "none",
          outcome: permanentFailure(
            "auth",
            `every key of upstream ${route.upstream} is quarantined (the upstream rejected them with 401/403/insufficient_quota): put new keys under new key ids`,
          ),
        };
      }
      return deferred(unreachable > 0 ? KEY_POOL_DOWN_RETRY_MS : QUARANTINED_RETRY_MS, why);
    }
    const waitMs = Math.ceil(soonestMs + ctx.random() * Math.min(soonestMs / 2, MAX_JITTER_MS));
    if (now - startedAt + waitMs > ctx.gateway.permitWaitMaxMs || now + waitMs > request.latestStart) return deferred(soonestMs, why);
    ctx.tally.permitWaits += 1;
    ctx.tally.permitWaitMs += waitMs;
    await ctx.sleep(waitMs);
  }
}

/** The KeyPool's answer, or null when the RPC failed (counted as no permit from that key). */
async function askKeyPool(route: ModelRoute, key: UpstreamKey, request: PermitRequest, ctx: PermitContext): Promise<AcquireResponse | null> {
  try {
    return await ctx.gateway.keyPools(key.id).acquire({ limits: toKeyLimits(key), tokens: request.tokens, leaseMs: request.leaseMs });
  } catch (error) {
    ctx.tally.keyPoolErrors += 1;
    console.error(JSON.stringify({ event: "key_pool_rpc_failed", rpc: "acquire", upstream: route.upstream, key_id: key.id, error: toErrorMessage(error) }));
    return null;
  }
}

/** Never fatal: a permit that is not released is reclaimed when its lease ends. */
async function releasePermit(keyId: string, request: ReleaseRequest, ctx: PermitContext): Promise<void> {
  // A call that ended frees an in-flight slot: the batch's other calls may ask again at once.
  if (ctx.denials.get(keyId)?.reason === "in_flight") ctx.denials.delete(keyId);
  try {
    await ctx.gateway.keyPools(keyId).release(request);
  } catch (error) {
    ctx.tally.keyPoolErrors += 1;
    console.error(JSON.stringify({ event: "key_pool_rpc_failed", rpc: "release", key_id: keyId, outcome: request.outcome, error: toErrorMessage(error) }));
  }
}

/**
 * What a backup needs, each taken without waiting, in the order a first call takes them: a permit
 * of the route's keys (a backup is a request like any other: it never pushes a key past its rpm
 * or in-flight limits; with one key without limits there is no KeyPool to ask), a free header slot
 * (a backup never queues for one: the lane's calls need them), then the room's grant, which notes
 * it. null when any is missing, with whatever was taken handed back.
 */
async function prepareBackup(
  task: ClaimedTask,
  turn: TurnRequest,
  request: ModelRequest,
  ctx: PermitContext,
  keyed: { route: ModelRoute; keys: readonly UpstreamKey[]; permitRequest: PermitRequest } | null,
): Promise<BackupCall | null> {
  const hedge = ctx.hedge;
  if (hedge === undefined) return null;
  const now = ctx.now();
  let permit: Extract<PermitAttempt, { kind: "granted" }> | null = null;
  if (keyed !== null) {
    const attempt = await acquirePermit(keyed.route, keyed.keys, { ...keyed.permitRequest, latestStart: now }, ctx);
    if (attempt.kind === "none") return null;
    permit = attempt;
  }
  const releasePermitOf = async (result: ModelCallResult | null, called: boolean): Promise<void> => {
    if (permit === null) return;
    await releasePermit(permit.keyId, toReleaseRequest(permit.permitId, result, called), ctx);
  };
  const slotted = await withHeaderSlot(request, ctx, now);
  if (slotted === null) {
    await releasePermitOf(null, false);
    return null;
  }
  const granted = await hedge.grant({ ...toCallStart(task, turn, ctx.now()), hedge: true });
  if (!granted) {
    slotted.headerSlot?.release();
    await releasePermitOf(null, false);
    return null;
  }
  const client = permit === null ? null : ctx.gateway.clientFor(permit.keyId);
  return {
    request: slotted,
    ...(client === null ? {} : { send: (r: ModelRequest) => client.complete(r) }),
    done: (result) => {
      // A backup never sent (its first call answered while the room granted it) still holds its
      // header slot, which only a sent request's headers free: kept, the invocation had one fewer
      // for good. Freeing a slot is idempotent, so a sent backup's is not freed twice.
      slotted.headerSlot?.release();
      return releasePermitOf(result, result !== null);
    },
  };
}

function deferred(retryAfterMs: number, reason: string): PermitAttempt {
  return { kind: "none", outcome: { kind: "deferred", retryAfterMs: Math.max(0, Math.ceil(retryAfterMs)), reason } };
}

/**
 * No connection slot came before the call's latest start: starting it later could outlast its
 * task's lease while the room hands the task to another lane. Nothing was sent, so the task is
 * handed back at once (a deferral spends no attempt) for a lane with room.
 */
const NO_HEADER_SLOT: TaskOutcome = {
  kind: "deferred",
  retryAfterMs: 0,
  reason: "no connection slot for the call before its latest start (the lane's header gate was full)",
};

/**
 * The room could not note the call's start (it was unreachable): a call it cannot bill is not
 * made. Nothing was sent, so the task is handed back (a deferral spends no attempt).
 */
const START_NOT_NOTED: TaskOutcome = {
  kind: "deferred",
  retryAfterMs: 1_000,
  reason: "the call's start could not be noted in the SwarmRoom, so it was not sent",
};

/**
 * What every request passes right before it leaves, in this order: a header slot of the lane's
 * gate (by `latestStart`), then its note in the SwarmRoom. Either missing, nothing is sent and the
 * task's outcome says why.
 */
async function readyToSend(
  task: ClaimedTask,
  turn: TurnRequest,
  request: ModelRequest,
  ctx: PermitContext,
  latestStart: number,
): Promise<{ request: ModelRequest } | { outcome: TaskOutcome }> {
  const slotted = await withHeaderSlot(request, ctx, latestStart);
  if (slotted === null) return { outcome: NO_HEADER_SLOT };
  if (!(await noteStart(task, turn, slotted, ctx))) return { outcome: START_NOT_NOTED };
  return { request: withHeadersHook(slotted, task, ctx) };
}

/**
 * The request, its header slot's release also telling `ctx.onHeaders` (once): the model client frees
 * the slot when the headers arrive, or when the call ends without them. Without a gate, a slot of
 * its own carries the hook.
 */
function withHeadersHook(request: ModelRequest, task: ClaimedTask, ctx: PermitContext): ModelRequest {
  const onHeaders = ctx.onHeaders;
  if (onHeaders === undefined) return request;
  const slot = request.headerSlot;
  // Noted and sent at once from here (callWithPermit): the time to its headers counts from now.
  const sentAt = Date.now();
  ctx.onSent?.(task);
  let told = false;
  const release = (): void => {
    slot?.release();
    if (told) return;
    told = true;
    onHeaders(task, Date.now() - sentAt);
  };
  return { ...request, headerSlot: { release } };
}

/**
 * Notes the call in its SwarmRoom, everything else that could stop it (the permit, the header
 * slot) already settled: once noted it is sent at once, so the room bills it whatever happens next.
 * When it cannot be noted, its header slot goes back.
 */
async function noteStart(task: ClaimedTask, turn: TurnRequest, request: ModelRequest, ctx: PermitContext): Promise<boolean> {
  if (ctx.noteStart === undefined) return true;
  // The grant noted this call already, and it starts in time: no RPC, only a line in the next pulls.
  if (ctx.markStarted !== undefined && task.notedTurn === turn.turn && task.notedUntil !== undefined && ctx.now() <= task.notedUntil) {
    ctx.markStarted({ taskId: task.taskId, attempt: task.attempt, turn: turn.turn });
    return true;
  }
  const noted = await ctx.noteStart(toCallStart(task, turn, ctx.now()));
  if (!noted) request.headerSlot?.release();
  return noted;
}

/** The room's note of the turn's call about to leave: what bills it if its outcome is lost. */
function toCallStart(task: ClaimedTask, turn: TurnRequest, startedAt: number): CallStart {
  return {
    taskId: task.taskId,
    attempt: task.attempt,
    turn: turn.turn,
    model: task.model,
    promptTokens: promptTokensOf(turn),
    maxTokens: turn.maxOutputTokens,
    startedAt,
  };
}

/** The request with a header slot of the lane's gate taken for it; null when none came by `latestStart`. */
async function withHeaderSlot(request: ModelRequest, ctx: PermitContext, latestStart: number): Promise<ModelRequest | null> {
  if (ctx.headerGate === undefined) return request;
  const slot = await takeHeaderSlot(ctx.headerGate.until(latestStart, ctx.now));
  return slot === null ? null : { ...request, headerSlot: slot };
}

function notCalled(outcome: TaskOutcome): PermitCallResult {
  return { kind: "not_called", outcome };
}

/** An outcome that is never retried. */
export function permanentFailure(errorClass: ErrorClass, message: string): Extract<TaskOutcome, { kind: "failed" }> {
  return { kind: "failed", class: errorClass, retryable: false, retryAfterMs: null, message };
}
