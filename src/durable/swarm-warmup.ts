// Prompt-cache warm-up (limits.cache_warmup): a swarm whose tasks share a cacheable prefix starts one
// task first and holds the rest until a call of the swarm is recorded (its answer, or its failure)
// or WARMUP_RELEASE_MAX_MS have passed, so the upstream has the prefix cached before the others send
// it. The rule is core/cache-warmup.ts; this keeps its state in the swarm row and caps the grants.
import { estimateSharedPrefixTokens, needsWarmup, WARMUP_RELEASE_MAX_MS } from "../core/cache-warmup.ts";
import type { SwarmRow } from "./swarm-room-rows.ts";
import type { SwarmStore } from "./swarm-store.ts";

export class SwarmWarmup {
  constructor(
    private readonly sql: SqlStorage,
    private readonly store: SwarmStore,
  ) {}

  /** A swarm was stored: does it start with one task? */
  begin(swarm: SwarmRow): void {
    const config = this.store.toRunConfig(swarm);
    const shared = estimateSharedPrefixTokens({ system: config.system, tools: config.tools, responseFormat: config.responseFormat });
    if (swarm.goal === null && needsWarmup(config.limits.cache_warmup, shared, swarm.task_count)) this.sql.exec("UPDATE swarm SET warmup_until = 0");
  }

  /** Whether tasks are held now. */
  holding(swarm: SwarmRow): boolean {
    return swarm.warmup_until !== null;
  }

  /**
   * How many tasks may be in flight now (null: no cap): one until the first is granted, then none
   * until the release. A hold past its time is released here.
   */
  grantCap(swarm: SwarmRow, now: number): number | null {
    if (swarm.warmup_until === null) return null;
    if (swarm.warmup_until === 0) return 1;
    if (now < swarm.warmup_until) return 0;
    this.releaseIfDue(swarm, now);
    return null;
  }

  /** A hold past its time ends (the first call hangs or died with its lane). */
  releaseIfDue(swarm: SwarmRow, now: number): void {
    if (swarm.warmup_until !== null && swarm.warmup_until > 0 && now >= swarm.warmup_until) this.release(swarm, "timeout");
  }

  /** The first task was granted: the rest are held until a call is recorded, or WARMUP_RELEASE_MAX_MS. */
  granted(swarm: SwarmRow, now: number): void {
    if (swarm.warmup_until === 0) this.sql.exec("UPDATE swarm SET warmup_until = ?", now + WARMUP_RELEASE_MAX_MS);
  }

  /** A call of the swarm was recorded (the first one's answer, or its failure): the held tasks go. */
  callsRecorded(swarm: SwarmRow): void {
    if (swarm.warmup_until !== null && swarm.warmup_until > 0) this.release(swarm, "call_recorded");
  }

  /** When the alarm must release a hold nobody pulls for. */
  nextAlarm(swarm: SwarmRow): number | null {
    return swarm.warmup_until !== null && swarm.warmup_until > 0 ? swarm.warmup_until : null;
  }

  private release(swarm: SwarmRow, why: "timeout" | "call_recorded"): void {
    this.sql.exec("UPDATE swarm SET warmup_until = NULL");
    console.log(JSON.stringify({ event: "cache_warmup_released", swarm_id: swarm.id, why }));
  }
}
