import { describe, expect, it } from "vitest";
import { canReplayFrom, estimateEtaS, parseLastEventId, toSseFrame } from "./live-events.ts";

const counts = (ended: number) => ({ queued: 0, running: 0, succeeded: ended, failed: 0, cancelled: 0, skipped_budget: 0, skipped: 0 });

describe("estimateEtaS", () => {
  it.each([
    { name: "nothing ended yet", ended: 0, tasks: 10, wall: 5, finished: false, eta: null },
    { name: "half done in 10 s", ended: 5, tasks: 10, wall: 10, finished: false, eta: 10 },
    { name: "a quarter done in 3 s", ended: 25, tasks: 100, wall: 3, finished: false, eta: 9 },
    { name: "finished", ended: 10, tasks: 10, wall: 10, finished: true, eta: null },
  ])("$name", ({ ended, tasks, wall, finished, eta }) => {
    expect(estimateEtaS(counts(ended), tasks, wall, finished)).toBe(eta);
  });
});

describe("canReplayFrom", () => {
  const log = { lastId: 50, oldestId: 10, completeAfter: 5, gap: false };
  it.each([
    { name: "up to date", lastId: 50, log, ok: true },
    { name: "inside the ring", lastId: 20, log, ok: true },
    { name: "just before the oldest kept", lastId: 9, log, ok: true },
    { name: "older than the ring", lastId: 8, log, ok: false },
    { name: "before the last snapshot after a gap", lastId: 20, log: { ...log, completeAfter: 30 }, ok: false },
    { name: "changes happened while nobody listened", lastId: 50, log: { ...log, gap: true }, ok: false },
    { name: "an id this room never sent", lastId: 51, log, ok: false },
    { name: "an empty ring and an old id", lastId: 3, log: { ...log, oldestId: null }, ok: false },
  ])("$name", ({ lastId, log: l, ok }) => {
    expect(canReplayFrom(lastId, l)).toBe(ok);
  });
});

describe("parseLastEventId", () => {
  it.each([
    ["42", 42],
    [" 7 ", 7],
    ["", null],
    ["-1", null],
    ["1e3", null],
    [undefined, null],
  ] as const)("%j → %j", (text, id) => {
    expect(parseLastEventId(text)).toBe(id);
  });
});

it("toSseFrame writes id, event and one data line", () => {
  expect(toSseFrame({ id: 3, type: "tasks", data: { tasks: [] } })).toBe('id: 3\nevent: tasks\ndata: {"tasks":[]}\n\n');
});
