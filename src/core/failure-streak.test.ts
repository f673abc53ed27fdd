import { describe, expect, it } from "vitest";
import {
  extendsRun,
  toRunInFlightCap,
  NO_STREAK,
  noteTaskEnd,
  parseFailureStreak,
  toStreakReason,
  type FailureStreak,
  type TaskEnd,
} from "./failure-streak.ts";
import type { TaskOutcome } from "./swarm-contract.ts";

const ok: TaskEnd = { kind: "succeeded" };
const invalid: TaskEnd = { kind: "failed", errorClass: "invalid_output", message: "the answer does not match response_format" };
const auth: TaskEnd = { kind: "failed", errorClass: "auth", message: "401 bad key" };
const timeout: TaskEnd = { kind: "failed", errorClass: "upstream_timeout", message: "timed out" };
const tooLong: TaskEnd = { kind: "failed", errorClass: "context_length", message: "too long" };
const unclassed: TaskEnd = { kind: "failed", errorClass: null, message: "?" };

/** The streak after these ends, from none. */
const streakAfter = (ends: readonly TaskEnd[], limit: number): FailureStreak => ends.reduce((streak, end) => noteTaskEnd(streak, end, limit), NO_STREAK);

describe("noteTaskEnd", () => {
  it.each<[string, TaskEnd[], number, Pick<FailureStreak, "errorClass" | "count" | "stopped">]>([
    ["no end: no run", [], 3, { errorClass: null, count: 0, stopped: false }],
    ["one permanent failure starts a run", [invalid], 3, { errorClass: "invalid_output", count: 1, stopped: false }],
    ["the limit reached: stopped", [invalid, invalid, invalid], 3, { errorClass: "invalid_output", count: 3, stopped: true }],
    ["one short of the limit: not stopped", [invalid, invalid], 3, { errorClass: "invalid_output", count: 2, stopped: false }],
    ["a success between ends the run", [invalid, invalid, ok, invalid, invalid], 3, { errorClass: "invalid_output", count: 2, stopped: false }],
    ["another permanent class starts its own run", [invalid, invalid, auth, auth], 3, { errorClass: "auth", count: 2, stopped: false }],
    ["a retryable class ends the run", [auth, auth, timeout, auth], 3, { errorClass: "auth", count: 1, stopped: false }],
    ["a task-specific class (context_length) ends the run", [auth, auth, tooLong, auth], 3, { errorClass: "auth", count: 1, stopped: false }],
    ["a failure with no class ends the run", [auth, auth, unclassed], 3, { errorClass: null, count: 0, stopped: false }],
    ["limit 0: never stops", new Array<TaskEnd>(50).fill(invalid), 0, { errorClass: "invalid_output", count: 50, stopped: false }],
    ["limit 1: the first permanent failure stops", [auth], 1, { errorClass: "auth", count: 1, stopped: true }],
    ["stopped stays stopped: a late success changes nothing", [auth, auth, ok, invalid], 2, { errorClass: "auth", count: 2, stopped: true }],
  ])("%s", (_label, ends, limit, expected) => {
    const { errorClass, count, stopped } = streakAfter(ends, limit);
    expect({ errorClass, count, stopped }).toEqual(expected);
  });

  it("keeps the run's first message as its sample, cut to 200 characters", () => {
    const long: TaskEnd = { kind: "failed", errorClass: "bad_request", message: "x".repeat(500) };
    const streak = streakAfter([long, { ...long, message: "second" }], 5);
    expect(streak.sample).toBe("x".repeat(200));
  });
});

describe("toStreakReason and parseFailureStreak", () => {
  it("names the class, the count, a sample and the rerun", () => {
    const streak = streakAfter([auth, auth], 2);
    expect(toStreakReason(streak)).toBe(
      'stopped early: 2 tasks in a row failed with auth (limits.stop_after_failures), e.g. "401 bad key"; the tasks not yet run are skipped — fix the cause and rerun them (POST /v1/swarms/:id/rerun {"tasks":"not_succeeded"})',
    );
  });

  it("reads back what it stored, and none from null", () => {
    const streak = streakAfter([invalid], 4);
    expect(parseFailureStreak(JSON.stringify(streak))).toEqual(streak);
    expect(parseFailureStreak(null)).toEqual(NO_STREAK);
  });
});

describe("extendsRun (a lane's view of its own ends)", () => {
  const failed = (errorClass: Extract<TaskOutcome, { kind: "failed" }>["class"], retryable: boolean): TaskOutcome => ({
    kind: "failed",
    class: errorClass,
    retryable,
    retryAfterMs: null,
    message: "x",
  });
  it.each<[string, TaskOutcome, boolean]>([
    ["invalid_output, never retried", failed("invalid_output", false), true],
    ["auth, never retried", failed("auth", false), true],
    ["quota_exceeded, never retried", failed("quota_exceeded", false), true],
    ["a streak class the room may retry", failed("bad_request", true), false],
    ["a retryable class", failed("upstream_timeout", true), false],
    ["a task-specific class (context_length)", failed("context_length", false), false],
    ["a success", { kind: "succeeded", output: "y", finishReason: "stop" }, false],
    ["a deferral", { kind: "deferred", retryAfterMs: 0, reason: "no permit" }, false],
  ])("%s: %s", (_label, outcome, expected) => {
    expect(extendsRun(outcome)).toBe(expected);
  });
});

describe("toRunInFlightCap", () => {
  it.each<[string, TaskEnd[], number, number | null]>([
    ["no run: no bound", [], 20, null],
    ["a run under half the limit: no bound", new Array<TaskEnd>(9).fill(invalid), 20, null],
    ["at half the limit: what the run still lacks", new Array<TaskEnd>(10).fill(invalid), 20, 10],
    ["one short of the limit: one", new Array<TaskEnd>(19).fill(invalid), 20, 1],
    ["a success between: no bound", [...new Array<TaskEnd>(15).fill(invalid), ok], 20, null],
    ["stopped: no bound (nothing is handed out anyway)", new Array<TaskEnd>(20).fill(invalid), 20, null],
    ["limit 0 (off): no bound", new Array<TaskEnd>(30).fill(invalid), 0, null],
    ["limit 1: stops at the first, never bound", [], 1, null],
  ])("%s", (_label, ends, limit, expected) => {
    expect(toRunInFlightCap(streakAfter(ends, limit), limit)).toBe(expected);
  });
});
