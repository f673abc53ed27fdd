import { describe, expect, it } from "vitest";
import { formatHedges } from "./bench-hedges.ts";

describe("the bench's hedge line", () => {
  it.each([
    ["a swarm that does not hedge", { usage: { calls: 10 }, hedges: null }, 10, 10, null],
    ["a status from before hedging", { usage: { calls: 10 } }, 10, 10, null],
    [
      "backups within the limit, the ledger covers the upstream",
      { usage: { calls: 1_048 }, estimated_calls: 12, hedges: { sent: 48, won: 30, cost_usd: 0.0012, limit: 50 } },
      1_000,
      1_046,
      "hedges: sent=48 (limit 50) won=30 cost=$0.001200 upstream_calls/task=1.046 ledger_rows=1048 (estimated 12) ≥ upstream_calls=1046",
    ],
    [
      "a ledger below the upstream's count is called out",
      { usage: { calls: 999 }, estimated_calls: 0, hedges: { sent: 1, won: 0, cost_usd: 0, limit: 50 } },
      1_000,
      1_001,
      "hedges: sent=1 (limit 50) won=0 cost=$0.000000 upstream_calls/task=1.001 ledger_rows=999 (estimated 0) < (LOW) upstream_calls=1001",
    ],
  ])("%s", (_label, status, tasks, upstreamCalls, expected) => {
    expect(formatHedges(status, tasks, upstreamCalls)).toBe(expected);
  });
});
