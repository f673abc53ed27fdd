// The SwarmRoom's tickets: the queue messages that bring consumer lanes to the swarm. Owns the
// `tickets` table; says how many slots the open tickets cover and when it next needs the alarm
// (a ticket nobody pulled, or a lane that went silent, is closed so its capacity is issued again).
import {
  FILL_MIN_MS,
  HEADER_SLOTS_PER_INVOCATION,
  toCoveredSlots,
  toFillSlots,
  toGateTtfbMs,
  toLaneSlots,
  toPullPaceMs,
  toTicketsToIssue,
} from "../core/lane-sizing.ts";
import type { ClaimedTask, DispatchView, LanePrior, TaskPool } from "../core/swarm-contract.ts";
import type { Ticket } from "../core/ticket.ts";

export interface TicketTimes {
  /** Slots a ticket is assumed to carry before any lane has said. */
  defaultSlots: number;
  /** A ticket nobody pulled by then is taken as lost (local queues lose messages on restart). */
  pullDeadlineMs: number;
  /** A lane that has not pulled for this long (it renews its leases well before) is taken as dead. */
  laneSilenceMs: number;
}

type TicketRow = {
  id: string;
  state: "sent" | "active";
  pool: TaskPool;
  /** Slots the lane said it has (sent: the room's guess). */
  slots: number;
  /** Epoch ms after which the ticket is closed unless its lane pulls. */
  expires_at: number;
};

/**
 * A lane heard from this lately counts as covering its slots when the room decides whether another
 * lane is surplus: a live lane pulls at least when its outcomes are due (every few hundred ms at
 * most under load), a dead one's ticket lingers until its deadline.
 */
const RECENTLY_HEARD_MS = 2_000;

/** The lane reports a prior is measured on: those made while the swarm still handed tasks out, or all. */
type PriorSpan = "handingOut" | "any";

/** The most one lane reported carrying, and the sums of the timings lanes reported. */
interface PriorSample {
  mostSlots: number | null;
  timings: number;
  ttfbMs: number;
  latencyMs: number;
}

const emptySample = (): PriorSample => ({ mostSlots: null, timings: 0, ttfbMs: 0, latencyMs: 0 });

export class SwarmTickets {
  /** Open tickets, loaded once per instance. */
  private open: Map<string, TicketRow> | null = null;
  /** Per open ticket and lane: its last answered pull's number and the tasks it granted (in memory). */
  private readonly lastGrants = new Map<string, Map<string, { seq: number; granted: ClaimedTask[] }>>();
  /** expires_at as last written, per ticket. */
  private readonly stored = new Map<string, number>();
  /** When each open ticket's lane last pulled (in memory: after a restart no lane counts as heard until it pulls). */
  private readonly heardAt = new Map<string, number>();
  /** Tasks each ticket's lane runs, as its last pull said (in memory: a restarted room learns it again). */
  private readonly runningOf = new Map<string, number>();
  /** The calls' mean time to headers and latency, as lanes report them (moving averages, in memory). */
  private timing: { ttfbMs: number; latencyMs: number } | null = null;
  /** Slots the latest lane reported: how much one more ticket is expected to carry. */
  private reportedSlots: number | null = null;
  /**
   * An earlier swarm's lanes (StartSwarmInput.lanePrior): what a ticket counts for until a lane of
   * this swarm has timed its calls. In memory: a room that restarts before then assumes
   * header-bound lanes again, as it would with no prior.
   */
  private prior: LanePrior | null = null;
  /**
   * Lanes of the gate's slots are known to be right before a lane of this swarm has timed a call:
   * an earlier swarm's lanes were header-bound (usePrior), or a lane's first headers took
   * FILL_MIN_MS or more (noteFirstHeaders). The room then sends every lane the window needs at
   * once, not FIRST_LANES_MAX until a lane has timed a call, which with headers that come with the
   * answer takes a whole call.
   */
  private gateBound = false;
  /**
   * Set when a warm-up's hold lasted RELEASE_TOP_UP_MS (sizeForRelease): until a lane has timed its
   * calls, every ticket counts for the assumed slots, never the prior's more.
   */
  private releaseSized = false;
  /**
   * What a ticket counts for at most while the window fills, when that is less than the prior's
   * slots (usePrior, toFillSlots): a swarm of few rounds fills its window with more lanes than its
   * steady state needs. Until a lane has timed its calls; null: the prior's slots.
   */
  private fillSlots: number | null = null;
  /**
   * The most a lane of this swarm reported carrying once timed (the next swarm's prior), and the
   * mean of the timings its lanes reported, both while the swarm still had tasks to hand out (when
   * every report came in its tail, of all of them). In a long-tailed swarm's tail only the slow
   * calls are left to end: the swarm's moving average of 1,000 × lognormal 300/1500 with headers
   * at 484 ms ended at latencies that make a lane carry 12–18 (each call holds a header slot for its
   * time to headers only), where over the swarm it carries 8. The next swarm, counted for 18 a lane
   * (it passed usePrior's bar), opened 15 lanes where 17 carry the window, and up to 17 of its 100
   * tasks waited at the lanes' header gates: 1.05–1.07× the pool's wall, against 1.00× for the
   * first swarm on the same stack (`npm run bench -- … --ttfb 484 --rounds 3`).
   */
  private readonly reported: Record<PriorSpan, PriorSample> = { handingOut: emptySample(), any: emptySample() };

  constructor(
    private readonly sql: SqlStorage,
    private readonly times: TicketTimes,
  ) {}

  static migrate(sql: SqlStorage): void {
    sql.exec(`CREATE TABLE IF NOT EXISTS tickets (
      id         TEXT PRIMARY KEY,
      state      TEXT NOT NULL,
      pool       TEXT NOT NULL DEFAULT 'short',
      slots      INTEGER NOT NULL,
      sent_at    INTEGER NOT NULL,
      pulls      INTEGER NOT NULL DEFAULT 0,
      expires_at INTEGER NOT NULL
    )`);
  }

  /**
   * A lane pulled under `id`. Returns whether this is the ticket's first pull (a delivered
   * message). A pull under an unknown or closed ticket (a late duplicate) opens it again: the lane
   * is real and doing work, and its slots count from now on.
   */
  pulled(
    id: string,
    slots: number,
    now: number,
    leaseUntil: number,
    final: boolean,
    pool: TaskPool,
    draining = false,
    measured = true,
    handingOut = true,
  ): { delivered: boolean } {
    const open = this.load();
    const row = open.get(id);
    // What one more lane will carry: a lane's report once it has timed its calls (an unmeasured
    // one repeats the room's own assumption), never a draining lane's (what it still runs).
    if (slots > 0 && !draining && measured) {
      this.reportedSlots = slots;
      for (const sample of this.samplesOf(handingOut)) sample.mostSlots = Math.max(sample.mostSlots ?? 0, slots);
    }
    if (final) return { delivered: this.forget(id) };
    this.heardAt.set(id, now);
    const expiresAt = Math.max(row?.expires_at ?? 0, leaseUntil, now + this.times.laneSilenceMs);
    const delivered = row === undefined || row.state === "sent";
    // Stored only when it moved by a third of the silence allowance (or anything else changed), so
    // a steady lane costs no row write per pull; this instance keeps the exact value in memory.
    const stored = this.stored.get(id) ?? 0;
    open.set(id, { id, state: "active", pool, slots, expires_at: expiresAt });
    if (row === undefined || row.state !== "active" || row.slots !== slots || expiresAt > stored + this.times.laneSilenceMs / 3) {
      this.stored.set(id, expiresAt);
      this.sql.exec(
        `INSERT INTO tickets (id, state, pool, slots, sent_at, pulls, expires_at) VALUES (?, 'active', ?, ?, ?, 1, ?)
         ON CONFLICT (id) DO UPDATE SET state = 'active', slots = excluded.slots, expires_at = excluded.expires_at, pulls = pulls + 1`,
        id,
        pool,
        slots,
        now,
        expiresAt,
      );
    }
    return { delivered };
  }

  /**
   * The room told a lane that runs and holds nothing to stop: its ticket closes now, as its final
   * pull would close it (that pull is not made). A late repeat of the pull opens it again (pulled).
   */
  close(id: string, lane: string | undefined, seq: number | undefined): void {
    this.forget(id);
    this.rememberGrants(id, lane, seq, [], true);
  }

  /** The ticket's lane has ended: its row goes. Returns whether it was still `sent` (never pulled before). */
  private forget(id: string): boolean {
    const open = this.load();
    const row = open.get(id);
    this.heardAt.delete(id);
    this.runningOf.delete(id);
    if (row !== undefined) open.delete(id);
    this.sql.exec("DELETE FROM tickets WHERE id = ?", id);
    return row?.state === "sent";
  }

  /** The grants of the lane's last answered pull if `seq` repeats it; else null. */
  repeatedGrants(id: string, lane: string | undefined, seq: number | undefined): ClaimedTask[] | null {
    if (lane === undefined || seq === undefined) return null;
    const last = this.lastGrants.get(id)?.get(lane);
    return last !== undefined && last.seq === seq ? last.granted : null;
  }

  /** Remembers what the lane's pull `seq` was granted, for a repeat of it. */
  rememberGrants(id: string, lane: string | undefined, seq: number | undefined, granted: ClaimedTask[], final: boolean): void {
    if (lane === undefined || seq === undefined) return;
    const lanes = this.lastGrants.get(id) ?? new Map<string, { seq: number; granted: ClaimedTask[] }>();
    if (final) lanes.delete(lane);
    else lanes.set(lane, { seq, granted });
    if (lanes.size === 0) this.lastGrants.delete(id);
    else this.lastGrants.set(id, lanes);
  }

  /** Issues `count` tickets (their ids) that are on their way to the queue. */
  issue(count: number, now: number, swarmId: string, pool: TaskPool): string[] {
    const open = this.load();
    const ids: string[] = [];
    for (let i = 0; i < count; i += 1) {
      const id = `${swarmId.slice(-12)}.${now.toString(36)}.${crypto.randomUUID().slice(0, 8)}`;
      const slots = this.slotsPerTicket();
      const expiresAt = now + this.times.pullDeadlineMs;
      this.sql.exec("INSERT INTO tickets (id, state, pool, slots, sent_at, expires_at) VALUES (?, 'sent', ?, ?, ?, ?)", id, pool, slots, now, expiresAt);
      open.set(id, { id, state: "sent", pool, slots, expires_at: expiresAt });
      ids.push(id);
    }
    return ids;
  }

  /** The send of these tickets failed: they never existed. */
  unissue(ids: readonly string[]): void {
    const open = this.load();
    for (const id of ids) {
      open.delete(id);
      this.sql.exec("DELETE FROM tickets WHERE id = ? AND state = 'sent'", id);
    }
  }

  /** Closes tickets past their deadline; returns how many. */
  expire(now: number): number {
    let closed = 0;
    for (const row of this.load().values()) {
      if (row.expires_at > now) continue;
      this.open?.delete(row.id);
      this.lastGrants.delete(row.id);
      this.heardAt.delete(row.id);
      this.runningOf.delete(row.id);
      this.sql.exec("DELETE FROM tickets WHERE id = ?", row.id);
      closed += 1;
    }
    return closed;
  }

  /** Closes every ticket (the swarm ended): late pulls still record, and get nothing. */
  closeAll(): void {
    this.lastGrants.clear();
    this.heardAt.clear();
    this.runningOf.clear();
    if (this.load().size === 0) return;
    this.sql.exec("DELETE FROM tickets");
    this.open = new Map();
  }

  /** How many more tickets the swarm needs for `demand` tasks running at once. */
  toIssue(demand: number, pool: TaskPool): number {
    const unmeasured = this.reportedSlots === null;
    // Until a lane has timed its calls, a lane counts for no more than a new ticket would: a lane
    // that saw its first headers reports the prior's steady slots, which its gate fills over a call.
    const cap = !unmeasured ? null : this.releaseSized ? this.times.defaultSlots : this.fillSlots;
    let covered = 0;
    let open = 0;
    for (const row of this.load().values()) {
      if (row.pool !== pool) continue;
      // A lane that runs more than it reports (its tasks wait at its gate) covers what it runs.
      const slots = toCoveredSlots({ slots: row.slots, running: this.runningOf.get(row.id) ?? null });
      covered += cap === null ? slots : Math.min(slots, cap);
      open += 1;
    }
    // An early prior was measured too (FIRST_LANES_MAX is for lanes sized on an assumption), but
    // not once a warm-up's release counts every ticket for the gate's slots.
    const measured = !unmeasured || this.gateBound || (this.prior !== null && !this.releaseSized);
    return toTicketsToIssue({ demand, coveredSlots: covered, openTickets: open, slotsPerTicket: this.slotsPerTicket(), measured });
  }

  /**
   * Slots the lanes of `pool` other than `id` that have pulled cover: a ticket still on its way may
   * never arrive (until its deadline), so it does not count towards retiring a lane that runs.
   */
  coveredByActiveExcept(id: string, pool: TaskPool, now: number): { slots: number; leastRunning: number | null } {
    let covered = 0;
    let leastRunning: number | null = null;
    for (const row of this.load().values()) {
      if (row.pool !== pool || row.id === id || row.state !== "active") continue;
      // A lane that died still holds its ticket until it expires: only lanes heard from lately count.
      if (!this.heardLately(row.id, now)) continue;
      covered += row.slots;
      const running = this.runningOf.get(row.id);
      if (running !== undefined) leastRunning = Math.min(leastRunning ?? running, running);
    }
    return { slots: covered, leastRunning };
  }

  /**
   * Slots the lanes of `pool` other than `id` have free now: what each carries less what it said it
   * runs in its last pull, and all a ticket still on its way was counted for. A lane not heard from
   * lately counts for none (it may have died). What a grant may keep out of standby for them
   * (standbyPastRoom): room in the window that no lane has slots for is nobody's to fill.
   */
  freeSlotsExcept(id: string, pool: TaskPool, now: number): number {
    let free = 0;
    for (const row of this.load().values()) {
      if (row.pool !== pool || row.id === id) continue;
      if (row.state !== "active") {
        free += row.slots;
        continue;
      }
      if (!this.heardLately(row.id, now)) continue;
      free += Math.max(0, row.slots - (this.runningOf.get(row.id) ?? 0));
    }
    return free;
  }

  /** Whether the ticket's lane pulled within RECENTLY_HEARD_MS of `now`. */
  private heardLately(id: string, now: number): boolean {
    const heard = this.heardAt.get(id);
    return heard !== undefined && now - heard <= RECENTLY_HEARD_MS;
  }

  /** What a ticket's lane said it runs in its last pull (PullRequest.running): who carries the window. */
  noteRunning(id: string, running: number): void {
    this.runningOf.set(id, Math.max(0, running));
  }

  /**
   * The ticket's lane is told to end (it is surplus): from now on it counts only for the tasks it
   * still carries (`carrying`), so no other lane is retired on the strength of its slots.
   */
  retire(id: string, carrying: number): void {
    const row = this.load().get(id);
    const slots = Math.max(0, Math.floor(carrying));
    if (row === undefined || row.slots === slots) return;
    row.slots = slots;
    this.sql.exec("UPDATE tickets SET slots = ? WHERE id = ?", slots, id);
  }

  /**
   * A lane's measured timing, folded into the swarm's (for its status), and into the mean its next
   * swarm's prior is measured on (`handingOut`: the swarm still had tasks to hand out).
   */
  noteTiming(timing: { ttfbMs: number; latencyMs: number }, handingOut = true): void {
    for (const sample of this.samplesOf(handingOut)) {
      sample.timings += 1;
      sample.ttfbMs += timing.ttfbMs;
      sample.latencyMs += timing.latencyMs;
    }
    const weight = 0.2;
    this.timing =
      this.timing === null
        ? { ...timing }
        : {
            ttfbMs: this.timing.ttfbMs + weight * (timing.ttfbMs - this.timing.ttfbMs),
            latencyMs: this.timing.latencyMs + weight * (timing.latencyMs - this.timing.latencyMs),
          };
  }

  /**
   * A lane's first headers took `ms` (PullRequest.firstHeadersMs), before any lane has timed a call.
   * At FILL_MIN_MS or more, lanes of the gate's slots fill the window within one time to headers
   * (toFillSlots), whatever the latency: the room sends every lane the window needs, as after a
   * header-bound prior, rather than FIRST_LANES_MAX until a call has ended (with headers at 500 ms
   * of a 3 s call, 3 s of 192 calls at once).
   */
  noteFirstHeaders(ms: number): void {
    if (Number.isFinite(ms) && ms >= FILL_MIN_MS) this.gateBound = true;
  }

  /** The room sends every lane the window needs, its lanes of the gate's slots (PullResponse.gateBound). */
  isGateBound(): boolean {
    return this.gateBound;
  }

  /** The swarm's lanes now (SwarmStatus.dispatch). */
  view(): DispatchView {
    let slots = 0;
    for (const row of this.load().values()) slots += row.slots;
    const lanes = this.load().size;
    const round = (ms: number | undefined): number | null => (ms === undefined ? null : Math.round(ms));
    return { lanes, slots, pace_ms: toPullPaceMs(lanes), ttfb_ms: round(this.timing?.ttfbMs), latency_ms: round(this.timing?.latencyMs) };
  }

  openCount(): number {
    return this.load().size;
  }

  /** When the earliest open ticket expires, or null. */
  nextAlarm(): number | null {
    let next: number | null = null;
    for (const row of this.load().values()) next = next === null ? row.expires_at : Math.min(next, row.expires_at);
    return next;
  }

  /** Slots a new ticket is counted for (and its lane asks for until it has timed its calls). */
  slotsPerTicket(): number {
    return Math.max(1, this.reportedSlots ?? (this.releaseSized ? null : (this.fillSlots ?? this.prior?.slots)) ?? this.times.defaultSlots);
  }

  /**
   * How many of `asked` tasks a lane starts within the fill time of one round (toFillSlots): its
   * gate starts LANE_SLOTS a time to headers. On the lanes' timing, else the prior's; `asked` when
   * neither is known.
   */
  fillSlotsOf(asked: number): number {
    const measured = this.timing === null ? null : this.gateTiming(this.timing.ttfbMs, this.timing.latencyMs, this.reportedSlots);
    const timing = measured ?? (this.prior === null ? null : this.timingOf(this.prior));
    if (timing === null) return asked;
    return toFillSlots({ slots: asked, headerSlots: this.times.defaultSlots, ...timing, rounds: 1 });
  }

  /** Whether the tickets are counted on an earlier swarm's lanes (usePrior kept one). */
  sizedByPrior(): boolean {
    return this.prior !== null && !this.releaseSized && this.reportedSlots === null;
  }

  /**
   * A warm-up's hold lasted RELEASE_TOP_UP_MS: its release will start every held task at once, and
   * a lane starts only its gate's slots before its first headers (then as many again a time to
   * headers later), so lanes counted for a prior's early headers would start the window over most
   * of a call's latency (docs/benchmarks.md, the warm-up's fifth session). Until a lane has timed
   * its calls, each ticket, the open ones too, counts for the assumed slots; each still carries the
   * prior's latency, so its lane grows from its first headers, and retires once others cover the
   * window.
   */
  sizeForRelease(): void {
    this.releaseSized = true;
  }

  /**
   * Sizes the tickets on an earlier swarm's lanes until this swarm's lanes have timed their calls,
   * if those lanes carried at least twice the assumed slots (headers came early). A prior of
   * header-bound lanes changes nothing: the assumption is header-bound already, and counting each
   * ticket for the 8 one lane once carried sent 13 lanes where 17 were needed (the warm-up bench's
   * header-bound wall went from 1.10x to 1.2x the pool). It only lifts the cap on the first lanes
   * (gateBound): without it, 300 calls of 1 s with headers at the answer, W = 300, ran 192
   * (32 lanes of 6) for their first second, and the other 108 a call later.
   */
  usePrior(prior: LanePrior | null, shape?: { tasks: number; window: number }): void {
    const early = prior !== null && prior.slots >= 2 * this.times.defaultSlots;
    this.prior = early ? prior : null;
    this.gateBound = prior !== null && !early;
    this.fillSlots = null;
    // A swarm of known size fills its window within a share of its expected time (toFillSlots).
    if (!early || shape === undefined || shape.tasks <= 0 || shape.window <= 0) return;
    const rounds = Math.ceil(shape.tasks / shape.window);
    const fill = toFillSlots({ slots: prior.slots, headerSlots: this.times.defaultSlots, ...this.timingOf(prior), rounds });
    if (fill < prior.slots) this.fillSlots = fill;
  }

  /** A prior's timing, as its lanes' gates saw it (toGateTtfbMs: recorded before its TTFB was, its slots alone). */
  private timingOf(prior: LanePrior): { ttfbMs: number; latencyMs: number } {
    return this.gateTiming(prior.ttfbMs ?? null, prior.latencyMs, prior.slots) ?? { ttfbMs: 0, latencyMs: prior.latencyMs };
  }

  private gateTiming(ttfbMs: number | null, latencyMs: number, slots: number | null): { ttfbMs: number; latencyMs: number } | null {
    const gateTtfbMs = toGateTtfbMs({ ttfbMs, latencyMs, slots, headerSlots: this.times.defaultSlots });
    return gateTtfbMs === null ? null : { ttfbMs: gateTtfbMs, latencyMs };
  }

  /**
   * What a new ticket says of its lane's size (Ticket.slots, and latency_ms while the slots are the
   * prior's), as slotsPerTicket counts it.
   */
  ticketSizing(): Pick<Ticket, "slots" | "latency_ms"> {
    const slots = this.slotsPerTicket();
    return this.reportedSlots === null && this.prior !== null ? { slots, latency_ms: this.prior.latencyMs } : { slots };
  }

  /**
   * What this swarm's lanes measured (the next swarm's prior), once one has timed its calls: the
   * most one lane carried, but no more than a lane carries at the swarm's mean timing. A loaded
   * machine sees headers late and a lane's report swings low at times, so one lane's best is the
   * guard against a prior set too low (which sends the lanes the prior is there to save); but with
   * headers that come with the answer, a lane that drew long calls carries 12–16 where the others
   * carry 6–8 (each call holds a header slot for the time to headers only), and that one lane's
   * report made a header-bound swarm's prior look early: the next swarm sent 8–9 lanes of a
   * window's 17, and 45 of 100 tasks waited a call's time for the rest (warm-up bench, 1.25× the pool).
   */
  measuredLanes(): LanePrior | null {
    const { handingOut } = this.reported;
    const sample = handingOut.timings > 0 && handingOut.mostSlots !== null ? handingOut : this.reported.any;
    if (sample.mostSlots === null || sample.timings === 0) return null;
    const timing = { ttfbMs: sample.ttfbMs / sample.timings, latencyMs: sample.latencyMs / sample.timings };
    const atMeanTiming = toLaneSlots(sample.mostSlots, HEADER_SLOTS_PER_INVOCATION, timing);
    const tenths = (ms: number): number => Math.round(ms * 10) / 10;
    return { slots: Math.min(sample.mostSlots, atMeanTiming), latencyMs: tenths(timing.latencyMs), ttfbMs: tenths(timing.ttfbMs) };
  }

  /** The samples a lane's report goes into: every report's, and the body's while tasks are handed out. */
  private samplesOf(handingOut: boolean): PriorSample[] {
    return handingOut ? [this.reported.any, this.reported.handingOut] : [this.reported.any];
  }

  private load(): Map<string, TicketRow> {
    if (this.open !== null) return this.open;
    this.open = new Map(
      this.sql
        .exec<TicketRow>("SELECT id, state, pool, slots, expires_at FROM tickets")
        .toArray()
        .map((row) => [row.id, row]),
    );
    return this.open;
  }
}
