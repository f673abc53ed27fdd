// One turn's call with its backup (limits.hedge, "The Tail at Scale"): when the call is still
// without its whole answer after the swarm's delay, a backup of the same request goes out (if the
// room grants one); the first answer wins and the other call is aborted. A failed call does not
// win: the other one is waited for. It never retries and never sends a call the room has not noted.
import type { ModelCallResult, ModelRequest } from "../../src/model/model-client.ts";

export interface HedgeContext {
  /** The delay in force (the lane's last pull said so), or null: no backups now. */
  afterMs(): number | null;
  /**
   * Resolves when the swarm's tail begins (a pull's answer says no task is left to hand out), where
   * the room spends its backups: a call refused before it asks again then, not only at its next
   * multiple of the delay. Absent: no such news.
   */
  tail?(): Promise<void>;
}

export interface BackupCall {
  /** The backup's request, with its own header slot, noted in the room. */
  request: ModelRequest;
  /** Sends it through its own key's client (its permit may be another key's); absent: as the first call. */
  send?: (request: ModelRequest) => Promise<ModelCallResult>;
  /** Hands back what the backup held (its key's permit; its header slot, if never sent) once it has ended, with its result (null: not sent). */
  done(result: ModelCallResult | null): Promise<void>;
}

export interface HedgedSend {
  send(request: ModelRequest): Promise<ModelCallResult>;
  hedge: HedgeContext | undefined;
  /**
   * Takes what a backup needs (a permit, a header slot, the room's grant and note) without waiting
   * for any of them: null when one is missing now, and then nothing was taken. `timeoutMs` is what
   * is left of the first call's: a backup never outlives the call it backs up (nor its task's lease).
   */
  prepareBackup(timeoutMs: number): Promise<BackupCall | null>;
  now?: () => number;
  /**
   * A call that ended on its own (not aborted by this module), as soon as it did: the backup with
   * whether its answer was the one kept. An aborted call is not reported: its room note bills it at
   * its worst case, marked estimated, since the upstream may have started on it.
   */
  onEnded(result: ModelCallResult, hedge?: "won" | "lost"): void;
  setTimer?: (fn: () => void, ms: number) => unknown;
  clearTimer?: (timer: unknown) => void;
}

/** A backup with less time than this left of its first call's deadline is not worth sending. */
export const BACKUP_MIN_MS = 1_000;

/**
 * When a call asks for its backup, in multiples of the delay: a refusal (the room keeps its backups
 * for the swarm's tail, or no slot or permit was free) is asked again later, when the call has
 * become a worse straggler, and only a few times (each ask may be a room RPC).
 */
const ASK_AT = [1, 2, 4] as const;

interface Running {
  readonly which: "primary" | "backup";
  readonly promise: Promise<ModelCallResult>;
  readonly abort: AbortController;
  ended: ModelCallResult | null;
}

function start(which: Running["which"], send: HedgedSend["send"], request: ModelRequest): Running {
  const abort = new AbortController();
  const run: Running = {
    which,
    abort,
    ended: null,
    promise: send({ ...request, signal: abort.signal }).then((result) => {
      run.ended = result;
      return result;
    }),
  };
  return run;
}

/** Sends the turn's call, and its backup when it is due and granted; resolves with the answer kept. */
export async function sendHedged(request: ModelRequest, io: HedgedSend): Promise<ModelCallResult> {
  const afterMs = io.hedge?.afterMs() ?? null;
  if (afterMs === null) {
    // No backup can come: the call goes as it is (no abort signal to carry).
    const result = await io.send(request);
    io.onEnded(result);
    return result;
  }
  const now = io.now ?? Date.now;
  const startedAt = now();
  const primary = start("primary", io.send, request);

  const setTimer = io.setTimer ?? ((fn, ms) => setTimeout(fn, ms));
  const clearTimer = io.clearTimer ?? ((timer) => clearTimeout(timer as ReturnType<typeof setTimeout>));
  let prepared: BackupCall | null = null;
  // The room keeps its backups for the swarm's tail (mayHedge): a call refused before the tail asks
  // again when it begins, once, whatever multiple of the delay comes next. A delay estimated high
  // put a straggler's next ask past its end (asks at 2.5 s and 5 s refused, 10 s after its 6.9 s answer).
  let tail = io.hedge?.tail?.().then(() => "tail" as const);
  let inTail = false;
  void tail?.then(() => {
    inTail = true;
  });
  for (const [i, multiple] of ASK_AT.entries()) {
    const waitMs = afterMs * multiple - (now() - startedAt);
    if (waitMs > 0) {
      let timer: unknown = null;
      const due = new Promise<"due">((resolve) => {
        timer = setTimer(() => resolve("due"), waitMs);
      });
      const waits: Promise<ModelCallResult | "due" | "tail">[] = [primary.promise, due];
      if (i > 0 && tail !== undefined) waits.push(tail);
      const first = await Promise.race(waits);
      if (first !== "due") clearTimer(timer);
      if (first === "tail") tail = undefined;
      else if (first !== "due") return reportAlone(primary, io);
    }
    // A later ask only while the room still offers backups (its pulls drop the delay once spent).
    if (primary.ended !== null || (i > 0 && (io.hedge?.afterMs() ?? null) === null)) break;
    // An ask in the tail already: the tail's beginning is no news to this call.
    if (inTail) tail = undefined;
    const leftMs = request.timeoutMs - (now() - startedAt);
    if (leftMs < BACKUP_MIN_MS) break;
    prepared = await io.prepareBackup(leftMs);
    if (prepared !== null) break;
  }
  if (prepared === null) return reportAlone(primary, io);
  if (primary.ended !== null) {
    // The call ended while its backup was being granted: the backup is not sent (its note bills it
    // at its worst case, marked estimated: a backup aborted before it left).
    await prepared.done(null);
    return reportAlone(primary, io);
  }
  const backup = start("backup", prepared.send ?? io.send, prepared.request);
  try {
    return await race(primary, backup, io);
  } finally {
    await prepared.done(backup.ended);
  }
}

async function reportAlone(primary: Running, io: HedgedSend): Promise<ModelCallResult> {
  const result = await primary.promise;
  io.onEnded(result);
  return result;
}

/** The first answer wins and the other call is aborted; when both fail, the primary's failure stands. */
async function race(primary: Running, backup: Running, io: HedgedSend): Promise<ModelCallResult> {
  const firstEnded = await Promise.race([primary.promise.then(() => primary), backup.promise.then(() => backup)]);
  const other = firstEnded === primary ? backup : primary;
  const firstResult = firstEnded.ended as ModelCallResult;
  if (firstResult.ok) {
    // The other may have ended in the same turn of the event loop: then it is reported as it ended.
    const otherEndedOnItsOwn = other.ended !== null;
    if (!otherEndedOnItsOwn) other.abort.abort();
    report(io, firstEnded, firstResult, true);
    if (otherEndedOnItsOwn) report(io, other, other.ended as ModelCallResult, false);
    else await other.promise;
    return firstResult;
  }
  report(io, firstEnded, firstResult, false);
  const otherResult = await other.promise;
  report(io, other, otherResult, otherResult.ok);
  if (otherResult.ok) return otherResult;
  // Both failed: the task's outcome is the primary's failure.
  return primary.ended as ModelCallResult;
}

function report(io: HedgedSend, run: Running, result: ModelCallResult, kept: boolean): void {
  if (run.which === "backup") io.onEnded(result, kept ? "won" : "lost");
  else io.onEnded(result);
}
