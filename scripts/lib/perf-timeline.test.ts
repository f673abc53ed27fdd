import { describe, expect, it } from "vitest";
import { formatPerfTimeline, perfTimeline } from "./perf-timeline.ts";
import { breakdownPerfScript, splitPerfScriptByPid } from "./perf-breakdown.ts";

/** One sample as `perf script -F comm,pid,tid,time,ip,sym` prints it with `-k CLOCK_REALTIME`. */
const sample = (thread: string, pid: number, tid: number, epochMs: number, ...frames: string[]): string =>
  [`${thread} ${pid}/${tid} ${(epochMs / 1_000).toFixed(6)}:`, ...frames.map((frame, i) => `\t    55d0${i}f00 ${frame}`)].join("\n");

const FROM = 1_796_505_836_477;
const ROOT = ["kj::_::waitImpl", "workerd_server::entry::serve"];

describe("the CPU of each process per interval", () => {
  const groups = [
    { name: "orchestrator", pids: [100, 101] },
    { name: "agent", pids: [200] },
  ];
  it.each([
    [
      "a sample in the first interval",
      [sample("workerd", 100, 100, FROM + 3, ...ROOT)],
      [
        [1, 0, 0],
        [0, 0, 0],
      ],
    ],
    [
      "a process's helper thread counts for its process",
      [sample("V8 DefaultWorke", 101, 107, FROM + 25, "v8::internal::Heap::Scavenge")],
      [
        [0, 1, 0],
        [0, 0, 0],
      ],
    ],
    [
      "an interval's end belongs to the next",
      [sample("workerd", 200, 200, FROM + 20)],
      [
        [0, 0, 0],
        [0, 1, 0],
      ],
    ],
    [
      "before the start and from the end on are left out",
      [sample("workerd", 100, 100, FROM - 1), sample("workerd", 200, 200, FROM + 60), sample("workerd", 200, 200, FROM + 59.5)],
      [
        [0, 0, 0],
        [0, 0, 1],
      ],
    ],
    [
      "a process in no group is left out",
      [sample("workerd", 300, 300, FROM + 5)],
      [
        [0, 0, 0],
        [0, 0, 0],
      ],
    ],
    [
      "several samples of several processes",
      [
        sample("workerd", 100, 100, FROM + 1),
        sample("workerd", 100, 100, FROM + 2),
        sample("workerd", 200, 200, FROM + 41),
        sample("workerd", 101, 101, FROM + 45),
      ],
      [
        [2, 0, 1],
        [0, 0, 1],
      ],
    ],
  ])("%s", (_, samples, expected) => {
    const timeline = perfTimeline(samples.join("\n\n"), { fromMs: FROM, untilMs: FROM + 60, bucketMs: 20, groups });
    expect(timeline.startsMs).toEqual([0, 20, 40]);
    expect(timeline.rows.map((row) => row.samples)).toEqual(expected);
    expect(timeline.rows.map((row) => row.name)).toEqual(["orchestrator", "agent"]);
  });

  it("a last interval cut short by the end is still an interval", () => {
    expect(perfTimeline("", { fromMs: 0, untilMs: 50, bucketMs: 20, groups }).startsMs).toEqual([0, 20, 40]);
  });

  it.each([[{ fromMs: 0, untilMs: 100, bucketMs: 0 }], [{ fromMs: 100, untilMs: 100, bucketMs: 10 }]])("refuses an empty range or interval: %o", (range) => {
    expect(() => perfTimeline("", { ...range, groups })).toThrow(RangeError);
  });

  it("prints a header of interval starts, then a row per group, aligned", () => {
    const lines = formatPerfTimeline({
      startsMs: [0, 20, 40],
      rows: [
        { name: "orchestrator", samples: [13, 19, 3] },
        { name: "agent", samples: [0, 4, 10] },
      ],
    });
    expect(lines).toEqual([`  ${" ".repeat(12)}    0  20  40`, "  orchestrator   13  19   3", "  agent           0   4  10"]);
  });

  it("the breakdown and the split by process read the same samples with their time", () => {
    const text = [
      sample("workerd", 100, 100, FROM + 1, "workerd::api::Headers::Headers", ...ROOT),
      sample("V8 DefaultWorke", 200, 201, FROM + 2, "v8::internal::Heap::Scavenge"),
    ].join("\n\n");
    expect(breakdownPerfScript(text).samples).toBe(2);
    expect(breakdownPerfScript(text).byKind.map((k) => k.kind)).toContain("V8 helper threads (concurrent GC, compilation)");
    expect([...splitPerfScriptByPid(text).keys()]).toEqual([100, 200]);
  });
});
