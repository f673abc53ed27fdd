import { describe, expect, it } from "vitest";
import { callIdRange, isHedgeCallId, isScheduleId, isSwarmId, newScheduleId, newSwarmId, toCallId } from "./ids.ts";

/** Returns `pattern` repeated to the asked length, recording the lengths asked for. */
function fixedBytes(pattern: string, asked: number[] = []): (n: number) => Uint8Array {
  return (n) => {
    asked.push(n);
    return Uint8Array.from({ length: n }, (_, i) => pattern.charCodeAt(i % pattern.length));
  };
}

describe("newSwarmId / newScheduleId", () => {
  // RFC 4648 test vector: base32("fooba") = "MZXW6YTB"
  it.each([
    ["swarm", newSwarmId, "sw_mzxw6ytbmzxw6ytbmzxw", 13],
    ["schedule", newScheduleId, "sch_mzxw6ytbmzxw6ytb", 10],
  ])("%s id is the lower-case base32 of the random bytes", (_kind, make, expected, bytes) => {
    const asked: number[] = [];
    expect(make(fixedBytes("fooba", asked))).toBe(expected);
    expect(asked).toEqual([bytes]);
  });

  it.each([
    [0x00, "sw_aaaaaaaaaaaaaaaaaaaa", "sch_aaaaaaaaaaaaaaaa"],
    [0xff, "sw_77777777777777777777", "sch_7777777777777777"],
  ])("all bytes 0x%s", (byte, swarm, schedule) => {
    const random = (n: number): Uint8Array => new Uint8Array(n).fill(byte);
    expect(newSwarmId(random)).toBe(swarm);
    expect(newScheduleId(random)).toBe(schedule);
  });

  it("gives distinct, valid ids from varied bytes", () => {
    // xorshift32: deterministic stand-in for crypto.getRandomValues (core tests use no host globals)
    let state = 0x9e3779b9;
    const random = (n: number): Uint8Array =>
      Uint8Array.from({ length: n }, () => {
        state ^= state << 13;
        state ^= state >>> 17;
        state ^= state << 5;
        return state & 0xff;
      });
    const swarms = new Set(Array.from({ length: 500 }, () => newSwarmId(random)));
    expect(swarms.size).toBe(500);
    for (const id of swarms) expect(isSwarmId(id)).toBe(true);
    expect(isScheduleId(newScheduleId(random))).toBe(true);
  });

  it("throws on a random source that returns too few bytes (a programming error)", () => {
    expect(() => newSwarmId(() => new Uint8Array(4))).toThrow(RangeError);
  });
});

describe("isSwarmId / isScheduleId", () => {
  it.each<[string, boolean, boolean]>([
    ["sw_abcdefghijklmnopqrst", true, false],
    ["sw_234567abcdefghijklmn", true, false],
    ["sw_abcdefghijklmnopqrs", false, false], // 19 chars
    ["sw_abcdefghijklmnopqrstu", false, false], // 21 chars
    ["sw_ABCDEFGHIJKLMNOPQRST", false, false], // upper case
    ["sw_abcdefghijklmnopqrs1", false, false], // 1 is not base32
    ["sch_abcdefghijklmnop", false, true],
    ["sch_abcdefghijklmno", false, false],
    ["sch_abcdefghijklmnop0", false, false],
    ["xsw_abcdefghijklmnopqrst", false, false],
    ["", false, false],
  ])("%s → swarm %s, schedule %s", (id, swarm, schedule) => {
    expect([isSwarmId(id), isScheduleId(id)]).toEqual([swarm, schedule]);
  });
});

describe("toCallId", () => {
  it.each([
    ["sw_abcdefghijklmnopqrst", "t00001", 1, 1, "sw_abcdefghijklmnopqrst:t00001:1:1"],
    ["sw_abcdefghijklmnopqrst", "intro-para", 3, 2, "sw_abcdefghijklmnopqrst:intro-para:3:2"],
  ])("%s %s %i %i → %s", (swarm, task, attempt, turn, expected) => {
    expect(toCallId(swarm, task, attempt, turn)).toBe(expected);
    expect(isHedgeCallId(expected)).toBe(false);
  });

  it("a turn's backup call has an id of its own, marked as a backup's", () => {
    const id = toCallId("sw_abcdefghijklmnopqrst", "t1", 2, 3, true);
    expect(id).toBe("sw_abcdefghijklmnopqrst:t1:2:3:h");
    expect(isHedgeCallId(id)).toBe(true);
  });
});

describe("callIdRange", () => {
  const swarm = "sw_abcdefghijklmnopqrst";
  const range = callIdRange(swarm, "t1", 1);
  const inRange = (id: string): boolean => id >= range.from && id < range.to;
  it.each([
    ["turn 1 of the attempt", toCallId(swarm, "t1", 1, 1), true],
    ["turn 12 of the attempt", toCallId(swarm, "t1", 1, 12), true],
    ["a backup of turn 1", toCallId(swarm, "t1", 1, 1, true), true],
    ["attempt 10 (shares the digit)", toCallId(swarm, "t1", 10, 1), false],
    ["attempt 2", toCallId(swarm, "t1", 2, 1), false],
    // Task ids never contain ":" (spec-schema.ts), so the stem cannot run into another task's.
    ["task t10 (shares the prefix)", toCallId(swarm, "t10", 1, 1), false],
    ["another swarm", toCallId("sw_bbcdefghijklmnopqrst", "t1", 1, 1), false],
  ])("%s: %s → %s", (_label, id, expected) => {
    expect(inRange(id)).toBe(expected);
  });

  const task = callIdRange(swarm, "t1");
  const inTask = (id: string): boolean => id >= task.from && id < task.to;
  it.each([
    ["attempt 1", toCallId(swarm, "t1", 1, 1), true],
    ["attempt 10, turn 3", toCallId(swarm, "t1", 10, 3), true],
    ["a backup", toCallId(swarm, "t1", 2, 1, true), true],
    ["task t10 (shares the prefix)", toCallId(swarm, "t10", 1, 1), false],
    ["task t (a prefix of t1)", toCallId(swarm, "t", 1, 1), false],
    ["another swarm", toCallId("sw_bbcdefghijklmnopqrst", "t1", 1, 1), false],
  ])("every attempt of the task, %s: %s → %s", (_label, id, expected) => {
    expect(inTask(id)).toBe(expected);
  });
});
