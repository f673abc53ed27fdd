// Where workerd's CPU went, from Linux `perf` samples of its native stacks (`perf script` output):
// each sample is put under the event the runtime was running — an RPC into a Durable Object, a
// fetch's response, a body chunk, an incoming HTTP request, a timer, an alarm — by the innermost
// `IoContext::run…` frame of its stack (workerd ships its symbols), or under the runtime's own
// work around events (garbage collection, SQLite commits, V8's helper threads, the event loop and
// sockets). Unlike the inspector's profiles, a sample belongs to the one isolate that ran: perf
// samples the thread, not an isolate. SQLite's share across all events is given beside. Pure.

/** One kind of work and its share of the samples (0–1). */
export interface PerfShare {
  kind: string;
  share: number;
}

export interface PerfBreakdown {
  samples: number;
  /** Every sample is in exactly one kind; largest first. */
  byKind: PerfShare[];
  /** Samples with SQLite (a statement or a commit) anywhere in their stack, whatever the event. */
  sqlite: number;
  /** Samples in V8's garbage collector, whatever the event (main thread; the helper threads are a kind). */
  gc: number;
}

/** Stack frames (innermost first) → the kind of work; the first rule that matches wins. */
const EVENT_RULES: ReadonlyArray<{ kind: string; frame: RegExp }> = [
  { kind: "RPC into a Durable Object or Worker (JS RPC)", frame: /IoContext::run<workerd::api::JsRpcTargetBase/ },
  { kind: "a fetch's response headers arrived (fetch, then the code after it)", frame: /IoContext::resumeAfterIo<kj::HttpClient::Response/ },
  { kind: "a body chunk arrived (stream reads, then the code after them)", frame: /IoContext::resumeAfterIo<kj::Array<unsigned char>/ },
  { kind: "an RPC's answer arrived (the caller's code after it)", frame: /IoContext::resumeAfterIo<capnp::Response/ },
  {
    kind: "an incoming HTTP request (D1, the API, miniflare's outbound interceptor when kept)",
    frame: /IoContext::run<workerd::(?:\(anonymous namespace\)::)?WorkerEntrypoint::requestImpl/,
  },
  { kind: "a timer fired", frame: /TimeoutManagerImpl::setTimeoutImpl/ },
  { kind: "an alarm", frame: /ServiceWorkerGlobalScope::runAlarm/ },
];

const GC_FRAME = /v8::internal::Heap::CollectGarbage|MinorGCJob|ScavengerCollector/;

const AROUND_RULES: ReadonlyArray<{ kind: string; frame: RegExp }> = [
  { kind: "SQLite commits (Durable Objects, D1)", frame: /ActorSqlite::startImplicitTxnImpl|ActorSqlite::commitImpl/ },
  { kind: "garbage collection (main thread)", frame: GC_FRAME },
];

/** A thread that is not workerd's event loop (V8's platform workers: concurrent GC, compilation). */
const HELPER_THREAD = /^V8 |DefaultWorke/;
const EVENT_ENTRY = /IoContext::runSingle<|IoContext::run<|IoContext::resumeAfterIo</;
const SQLITE_FRAME = /\bsqlite3|SqlStorage::|SqliteDatabase::|ActorSqlite::/;

/**
 * Parses `perf script -F comm,pid,tid,ip,sym` output: samples are blocks separated by blank lines,
 * a header line (the thread's name first) and then one frame per line, innermost first.
 */
export function breakdownPerfScript(text: string): PerfBreakdown {
  const counts = new Map<string, number>();
  let samples = 0;
  let sqlite = 0;
  let gc = 0;
  for (const block of text.split(/\n\s*\n/)) {
    const lines = block.split("\n").filter((line) => line.trim() !== "");
    const header = lines[0];
    if (header === undefined) continue;
    samples += 1;
    const frames = lines.slice(1).map((line) => line.trim().replace(/^[0-9a-f]+\s+/, ""));
    if (frames.some((frame) => SQLITE_FRAME.test(frame))) sqlite += 1;
    if (!HELPER_THREAD.test(header) && frames.some((frame) => GC_FRAME.test(frame))) gc += 1;
    const kind = kindOf(header.trim(), frames);
    counts.set(kind, (counts.get(kind) ?? 0) + 1);
  }
  const byKind = [...counts].map(([kind, n]) => ({ kind, share: n / Math.max(1, samples) })).sort((a, b) => b.share - a.share);
  return { samples, byKind, sqlite: sqlite / Math.max(1, samples), gc: gc / Math.max(1, samples) };
}

function kindOf(header: string, frames: readonly string[]): string {
  if (HELPER_THREAD.test(header)) return "V8 helper threads (concurrent GC, compilation)";
  // The innermost event frame: an event that another one's microtasks ran inside counts as itself.
  const entry = frames.find((frame) => EVENT_ENTRY.test(frame));
  if (entry !== undefined) {
    const rule = EVENT_RULES.find((r) => r.frame.test(entry));
    return rule?.kind ?? "other events (queue deliveries, blockConcurrencyWhile, …)";
  }
  const around = AROUND_RULES.find((rule) => frames.some((frame) => rule.frame.test(frame)));
  return around?.kind ?? "the event loop, sockets and HTTP outside any event";
}

/** A sample's header: `comm pid/tid`, then its time in seconds and a colon when `-F` has `time`. */
const SAMPLE_HEADER = /\s(\d+)\/\d+(?:\s+(\d+\.\d+):)?(?=\s|$)/;

/**
 * The pid and, when the sample has one, the time (ms, as perf's clock reads it) of a sample's
 * header line; null for any other line. Shared by the breakdown's split and perf-timeline.ts.
 */
export function readPerfSampleHeader(line: string): { pid: number; atMs: number | null } | null {
  const match = SAMPLE_HEADER.exec(line);
  if (match === null) return null;
  return { pid: Number(match[1]), atMs: match[2] === undefined ? null : Number(match[2]) * 1_000 };
}

/**
 * The samples of each process, by the pid in their header (`comm pid/tid`), as `perf script` text
 * again: the local stack runs a workerd per Worker, and each is broken down on its own. Samples
 * without a pid (`-F` without `pid`) are left out.
 */
export function splitPerfScriptByPid(text: string): Map<number, string> {
  const blocks = new Map<number, string[]>();
  for (const block of text.split(/\n\s*\n/)) {
    const header = block.split("\n").find((line) => line.trim() !== "");
    const pid = header === undefined ? undefined : readPerfSampleHeader(header)?.pid;
    if (pid === undefined) continue;
    const list = blocks.get(pid) ?? [];
    list.push(block);
    blocks.set(pid, list);
  }
  return new Map([...blocks].map(([pid, list]) => [pid, list.join("\n\n")]));
}

/** The breakdown as lines: share, then its CPU per task when the total is known. */
export function formatPerfBreakdown(breakdown: PerfBreakdown, cpuMsPerTask: number | null): string[] {
  const per = (share: number) => (cpuMsPerTask === null ? "" : `  ${(share * cpuMsPerTask).toFixed(3)} ms/task`);
  return [
    ...breakdown.byKind.map(({ kind, share }) => `  ${(share * 100).toFixed(1).padStart(5)}%${per(share)}  ${kind}`),
    `  (in whatever event: SQLite ${(breakdown.sqlite * 100).toFixed(1)}%${per(breakdown.sqlite)}, garbage collection ${(breakdown.gc * 100).toFixed(1)}%${per(breakdown.gc)})`,
  ];
}

/** A kind of work and its CPU, ms a task, in one swarm. */
export interface PerfKindCost {
  kind: string;
  msPerTask: number;
}

/** A kind's mean CPU on each side and their difference (ms a task). */
export interface PerfSideRow {
  kind: string;
  on: number;
  off: number;
  diff: number;
}

/**
 * `--trace --workerd-perf`: each kind's mean over the swarms of each side (a kind a swarm never ran
 * counts as 0 there) and traced − untraced, largest difference first, then the total (of the kinds
 * not in parentheses).
 */
export function comparePerfSides(on: ReadonlyArray<readonly PerfKindCost[]>, off: ReadonlyArray<readonly PerfKindCost[]>): PerfSideRow[] {
  const meanOf = (swarms: ReadonlyArray<readonly PerfKindCost[]>, kind: string): number =>
    swarms.length === 0 ? 0 : swarms.reduce((sum, costs) => sum + costs.filter((c) => c.kind === kind).reduce((s, c) => s + c.msPerTask, 0), 0) / swarms.length;
  const kinds = [...new Set([...on, ...off].flat().map((c) => c.kind))];
  const rows = kinds.map((kind) => {
    const [a, b] = [meanOf(on, kind), meanOf(off, kind)];
    return { kind, on: a, off: b, diff: a - b };
  });
  rows.sort((x, y) => y.diff - x.diff);
  // A kind in parentheses is a part of the others (GC inside whatever event): not added again.
  const total: PerfSideRow = { kind: "in all", on: 0, off: 0, diff: 0 };
  for (const row of rows.filter((r) => !r.kind.startsWith("("))) {
    total.on += row.on;
    total.off += row.off;
    total.diff += row.diff;
  }
  return [...rows, total];
}

export function formatPerfSides(rows: readonly PerfSideRow[]): string[] {
  const ms = (v: number) => v.toFixed(3).padStart(6);
  return rows.map(
    (row) =>
      `  traced ${ms(row.on)}  untraced ${ms(row.off)}  diff ${row.diff >= 0 ? "+" : "−"}${ms(Math.abs(row.diff)).trim().padStart(5)} ms/task  ${row.kind}`,
  );
}
