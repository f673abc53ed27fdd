// Live progress pushed from the SwarmRoom: the event log (live_events, live_log) and the
// hibernatable WebSockets of GET /v1/swarms/:id/live and /events. The room says which tasks it
// touched (noteTasks) or that many changed (noteAll); at most every LIVE_INTERVAL_MS this sends
// their current states and the progress, one `tasks` and one `progress` event per interval
// however large the swarm. It decides no task state and reads only what it sends.
import { canReplayFrom, LIVE_INTERVAL_MS, LIVE_RING_SIZE, toLiveProgress, type LiveEvent, type LiveEventType, type LiveTask } from "../core/live-events.ts";
import type { SwarmStatus, TaskState } from "../core/swarm-contract.ts";
import { LEASED_STATES, type SwarmRow } from "./swarm-room-rows.ts";

/** SQLite's default bound-parameter limit in Durable Objects is 100 a statement. */
const IDS_PER_QUERY = 90;

interface LogState {
  lastId: number;
  completeAfter: number;
  gap: boolean;
}

export class SwarmLive {
  private readonly dirty = new Set<string>();
  private dirtyAll = false;
  private lastFlushAt = 0;
  private log: LogState | null = null;
  /** `done` went out from this instance (later listeners get it from accept). */
  private doneSent = false;
  private appendsSincePrune = 0;

  constructor(
    private readonly sql: SqlStorage,
    private readonly ctx: DurableObjectState,
    private readonly status: (swarm: SwarmRow) => SwarmStatus,
    private readonly windowHistory: () => [number, number][],
  ) {}

  static migrate(sql: SqlStorage): void {
    sql.exec(`CREATE TABLE IF NOT EXISTS live_events (id INTEGER PRIMARY KEY, type TEXT NOT NULL, data TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS live_log (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        last_id INTEGER NOT NULL,
        complete_after INTEGER NOT NULL,
        gap INTEGER NOT NULL
      )`);
  }

  /** Whether anybody listens; with nobody, changes only mark the log incomplete (once). */
  private listening(): boolean {
    return this.ctx.getWebSockets().length > 0;
  }

  /** Tasks whose state may have changed in this request. */
  noteTasks(ids: Iterable<string>): void {
    if (!this.listening()) {
      this.markGap();
      return;
    }
    for (const id of ids) this.dirty.add(id);
  }

  /** Many tasks changed at once (cancel, a phase, the budget ran out): listeners get a fresh snapshot. */
  noteAll(): void {
    if (!this.listening()) {
      this.markGap();
      return;
    }
    this.dirtyAll = true;
  }

  /** Tasks whose lease ran out (the alarm is about to end or retry them). */
  noteOverdue(now: number): void {
    if (!this.listening()) return;
    const rows = this.sql.exec<{ id: string }>(`SELECT id FROM tasks WHERE state IN ${LEASED_STATES} AND deadline <= ?`, now).toArray();
    if (rows.length > 0) this.markGap();
    for (const row of rows) this.dirty.add(row.id);
  }

  /** When the next coalesced push is due; null when nothing waits. */
  nextAlarm(): number | null {
    if (this.dirty.size === 0 && !this.dirtyAll) return null;
    return this.lastFlushAt + LIVE_INTERVAL_MS;
  }

  /**
   * Sends what changed, if the interval has passed (or the swarm just ended, which is sent at once
   * with `done`). Called at the end of every request that may change tasks.
   */
  flush(swarm: SwarmRow, now: number): void {
    const ended = swarm.finished_at !== null && !this.doneSent;
    if (this.dirty.size === 0 && !this.dirtyAll && !ended) return;
    if (!ended && now - this.lastFlushAt < LIVE_INTERVAL_MS) return;
    const sockets = this.ctx.getWebSockets();
    if (sockets.length === 0) {
      this.dirty.clear();
      this.dirtyAll = false;
      return;
    }
    this.lastFlushAt = now;
    const status = this.status(swarm);
    const events: LiveEvent[] = [];
    if (this.dirtyAll) {
      // Not stored (see accept): a resume from before it gets a fresh snapshot instead.
      const id = this.nextId();
      this.readLog().completeAfter = id;
      this.saveLog();
      events.push({ id, type: "snapshot", data: this.snapshot(status) });
    } else if (this.dirty.size > 0) {
      events.push(this.append("tasks", { tasks: this.readTasks([...this.dirty]) }));
    }
    if (!this.dirtyAll) events.push(this.append("progress", toLiveProgress(status)));
    this.dirty.clear();
    this.dirtyAll = false;
    if (ended) {
      this.doneSent = true;
      events.push(this.append("done", { id: swarm.id, state: swarm.state, status }));
    }
    for (const socket of sockets) for (const event of events) this.send(socket, event);
    if (ended) for (const socket of sockets) socket.close(1000, "the swarm ended");
    this.prune();
  }

  /** A new listener: it resumes after `lastId` when the log can replay from there, else gets a snapshot. */
  accept(socket: WebSocket, swarm: SwarmRow, lastId: number | null): void {
    this.ctx.acceptWebSocket(socket);
    const log = this.readLog();
    const oldest = this.sql.exec<{ id: number | null }>("SELECT MIN(id) AS id FROM live_events").one().id;
    if (lastId !== null && canReplayFrom(lastId, { lastId: log.lastId, oldestId: oldest, completeAfter: log.completeAfter, gap: log.gap })) {
      const rows = this.sql.exec<{ id: number; type: LiveEventType; data: string }>("SELECT id, type, data FROM live_events WHERE id > ? ORDER BY id", lastId);
      for (const row of rows) socket.send(`{"id":${row.id},"type":"${row.type}","data":${row.data}}`);
    } else {
      // A snapshot is not stored (it is large). After a gap it is the new base: the log is complete only after it.
      const status = this.status(swarm);
      const id = this.nextId();
      if (log.gap) log.completeAfter = id;
      log.gap = false;
      this.saveLog();
      this.send(socket, { id, type: "snapshot", data: this.snapshot(status) });
      if (swarm.finished_at !== null) this.send(socket, this.append("done", { id: swarm.id, state: swarm.state, status }));
    }
    if (swarm.finished_at !== null) socket.close(1000, "the swarm ended");
  }

  private send(socket: WebSocket, event: LiveEvent | { id: number; type: LiveEventType; data: unknown }): void {
    try {
      socket.send(JSON.stringify(event));
    } catch {
      // A socket closing under us: the runtime calls webSocketClose; nothing to keep.
    }
  }

  private append<T extends LiveEventType>(type: T, data: unknown): LiveEvent {
    const id = this.nextId();
    this.sql.exec("INSERT INTO live_events (id, type, data) VALUES (?, ?, ?)", id, type, JSON.stringify(data));
    this.saveLog();
    this.appendsSincePrune += 1;
    return { id, type, data } as LiveEvent;
  }

  private nextId(): number {
    const log = this.readLog();
    log.lastId += 1;
    return log.lastId;
  }

  private markGap(): void {
    const log = this.readLog();
    if (log.gap) return;
    log.gap = true;
    this.saveLog();
  }

  private readLog(): LogState {
    if (this.log === null) {
      const row = this.sql
        .exec<{ last_id: number; complete_after: number; gap: number }>("SELECT last_id, complete_after, gap FROM live_log WHERE id = 1")
        .toArray()[0];
      this.log =
        row === undefined ? { lastId: 0, completeAfter: 0, gap: false } : { lastId: row.last_id, completeAfter: row.complete_after, gap: row.gap === 1 };
    }
    return this.log;
  }

  private saveLog(): void {
    const log = this.readLog();
    this.sql.exec(
      `INSERT INTO live_log (id, last_id, complete_after, gap) VALUES (1, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET last_id = excluded.last_id, complete_after = excluded.complete_after, gap = excluded.gap`,
      log.lastId,
      log.completeAfter,
      log.gap ? 1 : 0,
    );
  }

  private prune(): void {
    if (this.appendsSincePrune < 100) return;
    this.appendsSincePrune = 0;
    this.sql.exec("DELETE FROM live_events WHERE id <= ?", this.readLog().lastId - LIVE_RING_SIZE);
  }

  private snapshot(status: SwarmStatus) {
    return { status, tasks: this.readAllTasks(), window_history: this.windowHistory() };
  }

  private readAllTasks(): LiveTask[] {
    return this.sql
      .exec<{ id: string; state: TaskState; attempts: number }>("SELECT id, state, attempts FROM tasks WHERE kind = 'task' ORDER BY seq")
      .toArray()
      .map((row) => [row.id, row.state, row.attempts]);
  }

  private readTasks(ids: string[]): LiveTask[] {
    const tasks: LiveTask[] = [];
    for (let i = 0; i < ids.length; i += IDS_PER_QUERY) {
      const chunk = ids.slice(i, i + IDS_PER_QUERY);
      const rows = this.sql.exec<{ id: string; state: TaskState; attempts: number }>(
        `SELECT id, state, attempts FROM tasks WHERE kind = 'task' AND id IN (${chunk.map(() => "?").join(",")})`,
        ...chunk,
      );
      for (const row of rows) tasks.push([row.id, row.state, row.attempts]);
    }
    return tasks;
  }
}
