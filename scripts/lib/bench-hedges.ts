// The bench's line on a hedged swarm (limits.hedge): backups sent and won, what they cost, calls a
// task, and whether the ledger covers every call the upstream saw (the bill is never low).
import { z } from "zod";

const HedgedStatusSchema = z.looseObject({
  usage: z.looseObject({ calls: z.number() }),
  estimated_calls: z.number().optional(),
  hedges: z.looseObject({ sent: z.number(), won: z.number(), cost_usd: z.number(), limit: z.number() }).nullable().optional(),
});

/** null for a swarm that does not hedge (or a status from before hedging). */
export function formatHedges(status: unknown, tasks: number, upstreamCalls: number): string | null {
  const parsed = HedgedStatusSchema.safeParse(status);
  if (!parsed.success || parsed.data.hedges === null || parsed.data.hedges === undefined) return null;
  const { hedges, usage } = parsed.data;
  const estimated = parsed.data.estimated_calls ?? 0;
  const covered = usage.calls >= upstreamCalls;
  return [
    `hedges: sent=${hedges.sent} (limit ${hedges.limit}) won=${hedges.won} cost=$${hedges.cost_usd.toFixed(6)}`,
    `upstream_calls/task=${(upstreamCalls / Math.max(1, tasks)).toFixed(3)}`,
    `ledger_rows=${usage.calls} (estimated ${estimated}) ${covered ? "≥" : "< (LOW)"} upstream_calls=${upstreamCalls}`,
  ].join(" ");
}
