import { describe, expect, it } from "vitest";
import type { TaskCounts, TaskOutcome, TaskState } from "./swarm-contract.ts";
import { decideCompletion, decideGrant, decideRecord, type GrantDecision, type RecordDecision, type TaskLifeRow } from "./task-transitions.ts";

const NOW = 1_000_000;
const MAX = 3;

const row = (state: TaskState, attempts: number, extra: { leaseUntil?: number | null; retryAt?: number | null } = {}) => ({
  state,
  attempts,
  leaseUntil: extra.leaseUntil ?? null,
  retryAt: extra.retryAt ?? null,
});

const lapsed = { kind: "fail", errorClass: "lease_expired", message: "no outcome was reported within the lease of attempt 3 of 3" } as const;

describe("decideGrant", () => {
  it.each<[string, (TaskLifeRow & { retryAt: number | null }) | null, GrantDecision]>([
    ["a pending task: its first attempt", row("pending", 0), { kind: "grant", attempt: 1 }],
    ["a due retry: its next attempt", row("retry_wait", 1, { retryAt: NOW }), { kind: "grant", attempt: 2 }],
    ["a retry due long ago", row("retry_wait", 2, { retryAt: NOW - 60_000 }), { kind: "grant", attempt: 3 }],
    ["a retry not due yet: skipped", row("retry_wait", 1, { retryAt: NOW + 1 }), { kind: "skip" }],
    ["a retry with no time set: due", row("retry_wait", 1), { kind: "grant", attempt: 2 }],
    ["a live lease: skipped, never granted twice", row("running", 1, { leaseUntil: NOW + 1 }), { kind: "skip" }],
    ["a lease that ran out: its next attempt", row("running", 1, { leaseUntil: NOW }), { kind: "grant", attempt: 2 }],
    ["a dispatched task of the earlier dispatch: its next attempt", row("dispatched", 0), { kind: "grant", attempt: 1 }],
    ["attempts used up: it fails", row("retry_wait", 3, { retryAt: NOW }), lapsed],
    ["a lapsed lease on the last attempt: it fails", row("running", 3, { leaseUntil: NOW - 1 }), lapsed],
    ["succeeded: skipped", row("succeeded", 1), { kind: "skip" }],
    ["failed: skipped", row("failed", 3), { kind: "skip" }],
    ["cancelled: skipped", row("cancelled", 0), { kind: "skip" }],
    ["skipped_budget: skipped", row("skipped_budget", 0), { kind: "skip" }],
    ["skipped (fail fast): skipped", row("skipped", 0), { kind: "skip" }],
    ["unknown: skipped", null, { kind: "skip" }],
  ])("%s", (_label, task, expected) => {
    expect(decideGrant(task, NOW, MAX)).toEqual(expected);
  });
});

describe("decideRecord", () => {
  const ok: TaskOutcome = { kind: "succeeded", output: "x", finishReason: "stop" };
  const retryable: TaskOutcome = { kind: "failed", class: "upstream_error", retryable: true, retryAfterMs: null, message: "500" };
  const throttled: TaskOutcome = { kind: "failed", class: "rate_limited", retryable: true, retryAfterMs: 1_000, message: "429" };
  const permanent: TaskOutcome = { kind: "failed", class: "auth", retryable: false, retryAfterMs: null, message: "401" };
  const deferred: TaskOutcome = { kind: "deferred", retryAfterMs: 0, reason: "no permit" };
  const life = (state: TaskState, attempts: number): TaskLifeRow => ({ state, attempts, leaseUntil: state === "running" ? NOW + 1 : null });

  it.each<[string, TaskLifeRow | null, number, TaskOutcome, RecordDecision["kind"]]>([
    ["a success of the running attempt", life("running", 1), 1, ok, "succeed"],
    ["a late success of an older attempt is kept", life("running", 2), 1, ok, "succeed"],
    ["a late success while the next attempt waits", life("retry_wait", 2), 1, ok, "succeed"],
    ["a permanent failure", life("running", 1), 1, permanent, "fail"],
    ["a retryable failure with attempts left", life("running", 1), 1, retryable, "retry"],
    ["a retryable failure on the last attempt", life("running", 3), 3, retryable, "fail"],
    ["a repeated retryable failure of the waiting attempt: the same answer", life("retry_wait", 1), 1, retryable, "retry"],
    ["a 429: retried", life("running", 1), 1, throttled, "retry"],
    ["a 429 on the last attempt: retried all the same (back-pressure, not failure)", life("running", 3), 3, throttled, "retry"],
    ["a late failure of an older attempt", life("running", 2), 1, permanent, "ignore"],
    ["a deferral of the running attempt", life("running", 1), 1, deferred, "defer"],
    ["a repeated deferral of the waiting attempt", life("retry_wait", 1), 1, deferred, "ignore"],
    ["a deferral of an older attempt", life("running", 2), 1, deferred, "ignore"],
    ["a report of an attempt never granted", life("running", 1), 2, ok, "ignore"],
    ["attempt 0", life("running", 1), 0, ok, "ignore"],
    ["a report for a pending task", life("pending", 0), 1, ok, "ignore"],
    ["a task already done", life("succeeded", 1), 1, ok, "ignore"],
    ["a cancelled task", life("cancelled", 1), 1, retryable, "ignore"],
    ["an unknown task", null, 1, ok, "ignore"],
  ])("%s", (_label, task, attempt, outcome, expected) => {
    expect(decideRecord(task, attempt, outcome, MAX).kind).toBe(expected);
  });

  it("gives a 429's attempt back, and no other failure's", () => {
    expect(decideRecord(life("running", 1), 1, throttled, MAX)).toEqual({ kind: "retry", free: true });
    expect(decideRecord(life("running", 1), 1, retryable, MAX)).toEqual({ kind: "retry", free: false });
  });
});

describe("decideCompletion", () => {
  const counts = (c: Partial<TaskCounts>): TaskCounts => ({
    queued: 0,
    running: 0,
    succeeded: 0,
    failed: 0,
    cancelled: 0,
    skipped_budget: 0,
    skipped: 0,
    ...c,
  });

  it.each<[string, TaskCounts, boolean, ReturnType<typeof decideCompletion>]>([
    ["tasks still queued", counts({ queued: 1, succeeded: 2 }), false, null],
    ["tasks still running", counts({ running: 1, succeeded: 2 }), false, null],
    ["a cancelled swarm with tasks still running", counts({ running: 1, cancelled: 2 }), true, null],
    ["every task succeeded", counts({ succeeded: 3 }), false, "completed"],
    ["a failure", counts({ succeeded: 2, failed: 1 }), false, "completed_with_failures"],
    ["a task skipped for the budget", counts({ succeeded: 2, skipped_budget: 1 }), false, "completed_with_failures"],
    ["tasks skipped by fail fast", counts({ failed: 20, skipped: 80 }), false, "completed_with_failures"],
    ["a cancelled task in a swarm that was not cancelled", counts({ succeeded: 2, cancelled: 1 }), false, "completed_with_failures"],
    ["a cancelled swarm, whatever succeeded", counts({ succeeded: 2, cancelled: 1 }), true, "cancelled"],
    ["no tasks at all", counts({}), false, "completed"],
  ])("%s", (_label, c, cancelled, expected) => {
    expect(decideCompletion(c, cancelled)).toBe(expected);
  });
});
