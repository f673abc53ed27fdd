// Prompt-cache warm-up (limits.cache_warmup): a swarm whose tasks share a cacheable prefix starts one
// task first and holds the rest until the upstream has the prefix — its first call's response
// headers (the lane's `warmed`), else a call of the swarm recorded (its answer, or its failure), else
// WARMUP_RELEASE_MAX_MS. Lanes that ask while it holds wait in their pull for the release
// (`waitForRelease`), so none backs off past it. The rule is core/cache-warmup.ts; this keeps its
// state in the swarm row, caps the grants, and says when the swarm wants one lane only.
import { estimateSharedPrefixTokens, needsWarmup, toReleaseTopUpAt, WARMUP_RELEASE_MAX_MS } from "../core/cache-warmup.ts";
import type { SwarmRow } from "./swarm-room-rows.ts";
import type { SwarmStore } from "./swarm-store.ts";

/** Why the held tasks went. */
type ReleaseWhy = "first_headers" | "call_recorded" | "timeout";

export class SwarmWarmup {
  /** Pulls waiting for the release (in memory: a pull dies with the object that holds it). */
  private readonly waiters = new Set<() => void>();

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

  /**
   * Whether the warm-up's one task is still to be granted: the swarm then wants one lane, not a
   * window's worth. The other lanes are sent once it is granted (the pull that grants it sets the
   * alarm, which sends them), and wait in their pulls for the release meanwhile: on the local stack,
   * sixteen more executors made together with the first one's delayed its call by tens of ms
   * (docs/benchmarks.md), while the prefill leaves them hundreds of ms to start.
   */
  awaitingFirstGrant(swarm: SwarmRow): boolean {
    return swarm.warmup_until === 0;
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

  /** The first task was granted: the rest are held until its headers, a recorded call, or WARMUP_RELEASE_MAX_MS. */
  granted(swarm: SwarmRow, now: number): void {
    if (swarm.warmup_until === 0) this.sql.exec("UPDATE swarm SET warmup_until = ?", now + WARMUP_RELEASE_MAX_MS);
  }

  /** The warm-up call's response headers arrived (PullRequest.warmed): the upstream has the prefix. */
  warmed(swarm: SwarmRow): void {
    if (swarm.warmup_until !== null && swarm.warmup_until > 0) this.release(swarm, "first_headers");
  }

  /** A call of the swarm was recorded (the first one's answer, or its failure): the held tasks go. */
  callsRecorded(swarm: SwarmRow): void {
    if (swarm.warmup_until !== null && swarm.warmup_until > 0) this.release(swarm, "call_recorded");
  }

  /**
   * How long a pull that could only be told "not yet" waits for the release instead (0: answer now).
   * Only while the first task runs and its release is to come: before it is granted the pull takes it.
   */
  waitMs(swarm: SwarmRow, now: number): number {
    return swarm.warmup_until !== null && swarm.warmup_until > now ? swarm.warmup_until - now : 0;
  }

  /**
   * Resolves at the release, or after `ms` (then the pull's own grant releases a hold past its
   * time). A lane backing off instead would start its tasks up to its back-off after the release.
   */
  waitForRelease(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.waiters.add(done);
    });
  }

  /**
   * Whether the hold has lasted RELEASE_TOP_UP_MS since the warm-up task was granted: the room then
   * counts its lanes for the release (SwarmTickets.sizeForRelease, once: its tickets are no longer
   * sized by the prior after) and sends the rest.
   */
  topUpDue(swarm: SwarmRow, now: number): boolean {
    const at = toReleaseTopUpAt(swarm.warmup_until);
    return at !== null && now >= at;
  }

  /**
   * When the alarm must act for the hold: release it if nobody pulls for it, and, while the lanes
   * are counted on a prior of early headers (`priorLanes`), size them for the release.
   */
  nextAlarm(swarm: SwarmRow, priorLanes: boolean): number | null {
    if (swarm.warmup_until === null || swarm.warmup_until <= 0) return null;
    const topUp = priorLanes ? toReleaseTopUpAt(swarm.warmup_until) : null;
    return topUp === null ? swarm.warmup_until : Math.min(topUp, swarm.warmup_until);
  }

  private release(swarm: SwarmRow, why: ReleaseWhy): void {
    this.sql.exec("UPDATE swarm SET warmup_until = NULL");
    console.log(JSON.stringify({ event: "cache_warmup_released", swarm_id: swarm.id, why }));
    for (const done of [...this.waiters]) done();
  }
}
