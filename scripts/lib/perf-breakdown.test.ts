import { describe, expect, it } from "vitest";
import { breakdownPerfScript, comparePerfSides, formatPerfBreakdown, formatPerfSides, splitPerfScriptByPid } from "./perf-breakdown.ts";

/** One sample as `perf script -F comm,tid,ip,sym` prints it: the thread, then frames innermost first. */
const sample = (thread: string, ...frames: string[]): string => [`${thread} 1405`, ...frames.map((frame, i) => `\t    55d0${i}f00 ${frame}`)].join("\n");

const ROOT = ["kj::_::waitImpl", "workerd_server::entry::serve"];
const RPC_IN = "workerd::IoContext::runSingle<workerd::IoContext::run<workerd::api::JsRpcTargetBase::JsRpcTargetBase(workerd::IoContext&)::{lambda}>";
const FETCH_BACK =
  "workerd::IoContext::runSingle<workerd::IoContext::resumeAfterIo<kj::HttpClient::Response, kj::Maybe<kj::Rc<workerd::InputGate::CriticalSection> >>";
const CHUNK_BACK =
  "workerd::IoContext::runSingle<workerd::IoContext::resumeAfterIo<kj::Array<unsigned char>, kj::Maybe<kj::Rc<workerd::InputGate::CriticalSection> >>";
const HTTP_IN =
  "workerd::IoContext::runSingle<workerd::IoContext::run<workerd::(anonymous namespace)::WorkerEntrypoint::requestImpl(kj::HttpMethod, kj::StringPtr)::{lambda}>";

describe("perf samples by the event workerd ran", () => {
  it.each([
    [
      "an RPC into a Durable Object, its SQL inside",
      sample("workerd", "sqlite3VdbeExec", "workerd::api::SqlStorage::exec", RPC_IN, ...ROOT),
      "RPC into a Durable Object or Worker (JS RPC)",
      1,
    ],
    [
      "a fetch's response",
      sample("workerd", "workerd::api::Headers::Headers", FETCH_BACK, ...ROOT),
      "a fetch's response headers arrived (fetch, then the code after it)",
      0,
    ],
    [
      "a body chunk",
      sample("workerd", "v8::internal::JsonParser<unsigned char>::Parse", CHUNK_BACK, ...ROOT),
      "a body chunk arrived (stream reads, then the code after them)",
      0,
    ],
    [
      "an incoming request",
      sample("workerd", "workerd::api::ServiceWorkerGlobalScope::request", HTTP_IN, ...ROOT),
      "an incoming HTTP request (D1, the API, miniflare's outbound interceptor when kept)",
      0,
    ],
    [
      "a commit outside any event",
      sample("workerd", "fsync", "workerd::ActorSqlite::startImplicitTxnImpl", ...ROOT),
      "SQLite commits (Durable Objects, D1)",
      1,
    ],
    [
      "a minor GC outside any event",
      sample("workerd", "v8::internal::Scavenger::ScavengePage", "v8::internal::Heap::CollectGarbage", ...ROOT),
      "garbage collection (main thread)",
      0,
    ],
    ["V8's helper thread", sample("V8 DefaultWorke", "v8::internal::ConcurrentMarking::Run"), "V8 helper threads (concurrent GC, compilation)", 0],
    ["socket work", sample("workerd", "__send", "kj::AsyncIoStream::write", ...ROOT), "the event loop, sockets and HTTP outside any event", 0],
  ])("%s", (_, text, kind, sqlite) => {
    const gc = kind.startsWith("garbage") ? 1 : 0;
    expect(breakdownPerfScript(text)).toEqual({ samples: 1, byKind: [{ kind, share: 1 }], sqlite, gc });
  });

  it("garbage collection inside an event counts under the event, and in the GC share beside", () => {
    const breakdown = breakdownPerfScript(
      sample("workerd", "v8::internal::Scavenger::ScavengePage", "v8::internal::Heap::CollectGarbage", CHUNK_BACK, ...ROOT),
    );
    expect(breakdown.byKind).toEqual([{ kind: "a body chunk arrived (stream reads, then the code after them)", share: 1 }]);
    expect(breakdown.gc).toBe(1);
  });

  it("an event inside another's microtasks counts as the innermost one", () => {
    const nested = sample("workerd", "workerd::api::fetchImpl", FETCH_BACK, "v8::internal::MicrotaskQueue::RunMicrotasks", RPC_IN, ...ROOT);
    expect(breakdownPerfScript(nested).byKind).toEqual([{ kind: "a fetch's response headers arrived (fetch, then the code after it)", share: 1 }]);
  });

  it("shares add up over samples, largest first, and print with CPU per task", () => {
    const text = [sample("workerd", RPC_IN), sample("workerd", RPC_IN), sample("workerd", RPC_IN), sample("workerd", CHUNK_BACK)].join("\n\n");
    const breakdown = breakdownPerfScript(`${text}\n\n`);
    expect(breakdown.samples).toBe(4);
    expect(breakdown.byKind.map((k) => k.share)).toEqual([0.75, 0.25]);
    expect(formatPerfBreakdown(breakdown, 0.8)).toEqual([
      "   75.0%  0.600 ms/task  RPC into a Durable Object or Worker (JS RPC)",
      "   25.0%  0.200 ms/task  a body chunk arrived (stream reads, then the code after them)",
      "  (in whatever event: SQLite 0.0%  0.000 ms/task, garbage collection 0.0%  0.000 ms/task)",
    ]);
  });

  it("no samples: an empty breakdown, not a division by zero", () => {
    expect(breakdownPerfScript("")).toEqual({ samples: 0, byKind: [], sqlite: 0, gc: 0 });
  });
});

describe("perf samples by process", () => {
  /** A sample as `perf script -F comm,pid,tid,ip,sym` prints it. */
  const of = (thread: string, pid: number, tid: number, frame: string): string => `${thread} ${pid}/${tid}\n\t    55d00f00 ${frame}`;
  it.each([
    ["one process", [of("workerd", 10, 10, "a")], { 10: 1 }],
    [
      "two processes, a helper thread with a space in its name",
      [of("workerd", 10, 10, "a"), of("V8 DefaultWorke", 10, 12, "b"), of("workerd", 20, 20, "c")],
      { 10: 2, 20: 1 },
    ],
    ["a header without a pid is left out", ["workerd 1405\n\t    55d00f00 a", of("workerd", 20, 20, "c")], { 20: 1 }],
    ["nothing", [], {}],
  ])("%s", (_name, samples, expected) => {
    const split = splitPerfScriptByPid(samples.join("\n\n"));
    expect(Object.fromEntries([...split].map(([pid, text]) => [pid, breakdownPerfScript(text).samples]))).toEqual(expected);
  });

  it("keeps each sample whole, so its breakdown is the process's own", () => {
    const split = splitPerfScriptByPid(
      [of("workerd", 10, 10, "workerd::api::SqlStorage::exec"), of("workerd", 20, 20, "v8::internal::Heap::Scavenge")].join("\n\n"),
    );
    expect(breakdownPerfScript(split.get(10) ?? "").sqlite).toBe(1);
    expect(breakdownPerfScript(split.get(20) ?? "").sqlite).toBe(0);
  });
});

describe("the agent's CPU by kind, traced against untraced swarms", () => {
  it("averages each side's swarms, counts a kind a swarm never ran as 0, and sorts by the difference", () => {
    const rows = comparePerfSides(
      [
        [
          { kind: "fetch", msPerTask: 0.4 },
          { kind: "gc", msPerTask: 0.1 },
        ],
        [{ kind: "fetch", msPerTask: 0.6 }],
      ],
      [
        [
          { kind: "fetch", msPerTask: 0.45 },
          { kind: "(gc inside)", msPerTask: 0.3 },
        ],
        [{ kind: "gc", msPerTask: 0.02 }],
      ],
    );
    expect(rows.map((r) => r.kind)).toEqual(["fetch", "gc", "(gc inside)", "in all"]);
    expect(rows[0]?.on).toBeCloseTo(0.5);
    expect(rows[0]?.off).toBeCloseTo(0.225);
    expect(rows[0]?.diff).toBeCloseTo(0.275);
    expect(rows[1]?.diff).toBeCloseTo(0.05 - 0.01);
    // The kind in parentheses is part of the others: not in the total.
    expect(rows[3]?.diff).toBeCloseTo(0.315);
    expect(formatPerfSides(rows)[3]).toContain("in all");
  });
});
