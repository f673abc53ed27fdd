// The one-line summary `npm start`, `npm run swarm` and `edgeswarm run` print (docs/cli-and-client.md).
import type { SwarmStatus } from "../core/swarm-contract.ts";

export type SummaryInput = Pick<SwarmStatus, "tasks" | "cost_usd" | "wall_s" | "latency_ms"> & {
  counts: Pick<SwarmStatus["counts"], "succeeded" | "failed" | "cancelled" | "skipped_budget" | "skipped">;
  usage: Pick<SwarmStatus["usage"], "total_tokens">;
};

/** `n=100 ok=100 err=0 wall=3.21 s throughput=31.2 req/s p50=212 ms p95=260 ms tokens=4800 cost=$0.000123` */
export function formatSummary(status: SummaryInput): string {
  const { counts } = status;
  // Skipped tasks (a budget's end, or fail fast) never got an answer: they count as errors.
  const err = counts.failed + counts.cancelled + counts.skipped_budget + counts.skipped;
  const throughput = status.wall_s > 0 ? status.tasks / status.wall_s : 0;
  const ms = (v: number | null) => (v === null ? "n/a" : `${Math.round(v)}`);
  return [
    `n=${status.tasks}`,
    `ok=${counts.succeeded}`,
    `err=${err}`,
    `wall=${status.wall_s.toFixed(2)} s`,
    `throughput=${throughput.toFixed(1)} req/s`,
    `p50=${ms(status.latency_ms.p50)} ms`,
    `p95=${ms(status.latency_ms.p95)} ms`,
    `tokens=${status.usage.total_tokens}`,
    `cost=$${status.cost_usd.toFixed(6)}`,
  ].join(" ");
}
