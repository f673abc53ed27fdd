import { describe, expect, it } from "vitest";
import { LEDGER_ROWS_PER_CALL, PRICES, priceOperations, ROOM_ROWS_PER_REQUEST, ROOM_ROWS_PER_TASK, toCapacity } from "./capacity-model.ts";
import { ROOM_PULLS_PER_S } from "./lane-sizing.ts";

describe("the production capacity model", () => {
  it.each([
    // window, latency, ttfb → executors, in flight, room pulls a second at most
    ["W=100, headers with the answer, 200 ms", 100, 200, 200, 17, 100],
    ["W=1,500, headers with the answer, 200 ms", 1_500, 200, 200, 250, 1_500],
    ["W=1,500, headers with the answer, 2 s", 1_500, 2_000, 2_000, 250, 1_500],
    ["W=1,500, early headers (50 ms of 2 s)", 1_500, 2_000, 50, 12, 1_500],
    ["W=100, early headers: one executor", 100, 200, 5, 1, 100],
  ])("%s", (_label, window, latencyMs, ttfbMs, executors, inFlight) => {
    const capacity = toCapacity({ window, latencyMs, ttfbMs, concurrency: 128, tasks: 10_000 });
    expect(capacity.executors).toBe(executors);
    expect(capacity.inFlight).toBe(inFlight);
    expect(capacity.connectionsWaiting).toBeLessThanOrEqual(executors * 6);
    // The bound: the SwarmRoom takes at most 500 requests a second, whatever the window.
    expect(capacity.roomPullsPerS).toBeLessThanOrEqual(ROOM_PULLS_PER_S);
    expect(capacity.usdPer1kTasks).toBeGreaterThan(0);
  });

  it("prices duration by the executors' wall: header-bound 2 s calls cost more per 1,000 tasks than 200 ms ones", () => {
    const short = toCapacity({ window: 1_500, latencyMs: 200, ttfbMs: 200, concurrency: 128, tasks: 10_000 });
    const long = toCapacity({ window: 1_500, latencyMs: 2_000, ttfbMs: 2_000, concurrency: 128, tasks: 10_000 });
    expect(long.executorGbSecondsPer1kTasks).toBeCloseTo(short.executorGbSecondsPer1kTasks * 10, 5);
    expect(long.doRequestsPer1kTasks).toBeLessThan(short.doRequestsPer1kTasks * 10);
  });

  it.each([
    ["W=100, headers with the answer, 200 ms", 100, 200, 200],
    ["W=1,500, headers with the answer, 2 s", 1_500, 2_000, 2_000],
    ["W=1,500, early headers (50 ms of 2 s)", 1_500, 2_000, 50],
  ])("prices the rows a task writes, which cost more than its requests, duration and queue messages together: %s", (_label, window, latencyMs, ttfbMs) => {
    const c = toCapacity({ window, latencyMs, ttfbMs, concurrency: 128, tasks: 10_000 });
    // The room's rows: each task's, and the meters row of each pull it serves.
    expect(c.rowsWrittenPer1kTasks.room).toBeCloseTo(1_000 * ROOM_ROWS_PER_TASK + c.roomPullsPerS * (1_000 / c.tasksPerS) * ROOM_ROWS_PER_REQUEST, 6);
    expect(c.rowsWrittenPer1kTasks.d1).toBe(1_000 * LEDGER_ROWS_PER_CALL);
    expect(c.rowsWrittenPer1kTasks.executors).toBeGreaterThan(0);
    const rows = c.rowsWrittenPer1kTasks.room + c.rowsWrittenPer1kTasks.d1 + c.rowsWrittenPer1kTasks.executors;
    const others =
      c.doRequestsPer1kTasks * PRICES.doRequestUsd +
      c.executorGbSecondsPer1kTasks * PRICES.doGbSecondUsd +
      c.queueMessagesPer1kTasks * PRICES.queueOpsPerMessage * PRICES.queueOperationUsd;
    expect(c.usdPer1kTasks).toBeCloseTo(rows * PRICES.rowWrittenUsd + others, 12);
    expect(rows * PRICES.rowWrittenUsd).toBeGreaterThan(others);
  });

  it.each([
    // requests, rows, queue messages → USD (requests, rows, queue)
    ["a million of each", 1e6, 1e6, 1e6, 0.15, 1, 1.2],
    ["1,000 tasks as npm run bench counts them", 130, 16_300, 2, 0.0000195, 0.0163, 0.0000024],
    ["nothing", 0, 0, 0, 0, 0, 0],
  ])("prices counted operations: %s", (_label, doRequests, rowsWritten, queueMessages, requestsUsd, rowsUsd, queueUsd) => {
    const priced = priceOperations({ doRequests, rowsWritten, queueMessages });
    expect(priced.doRequestsUsd).toBeCloseTo(requestsUsd, 12);
    expect(priced.rowsUsd).toBeCloseTo(rowsUsd, 12);
    expect(priced.queueUsd).toBeCloseTo(queueUsd, 12);
  });
});
