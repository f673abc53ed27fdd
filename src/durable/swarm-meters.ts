// The SwarmRoom's billable operations: what a swarm costs on Cloudflare besides the model (queue
// messages, Durable Object requests, rows written in the DO's SQLite and in D1). Owns the `meters`
// row; counts the room's own SQL writes through a wrapper of its SqlStorage.

export type Meters = {
  /** Tickets sent to the task queue. */
  queue_sent: number;
  /** Ticket deliveries that reached the room (a first pull under a ticket). */
  queue_received: number;
  /** RPCs the room served (every caller: agents, the orchestrator) and alarms it ran. */
  do_requests: number;
  /** Rows the room wrote to its SQLite storage. */
  do_rows_written: number;
  /** Rows the room's ledger flushes wrote to D1. */
  d1_rows_written: number;
};

const ZERO: Meters = { queue_sent: 0, queue_received: 0, do_requests: 0, do_rows_written: 0, d1_rows_written: 0 };

export class SwarmMeters {
  private values: Meters | null = null;
  private readonly cursors: SqlStorageCursor<Record<string, SqlStorageValue>>[] = [];
  /** The room's SqlStorage with every statement's writes counted. */
  readonly sql: SqlStorage;

  constructor(private readonly raw: SqlStorage) {
    const cursors = this.cursors;
    // A Proxy keeps SqlStorage's whole surface (its methods need the real object as `this`).
    this.sql = new Proxy(raw, {
      get(target, property) {
        if (property === "exec") {
          return (query: string, ...bindings: unknown[]) => {
            const cursor = target.exec(query, ...bindings);
            // Only statements that can write are kept for counting, so reads (status polls) hold nothing.
            if (!/^\s*(SELECT|WITH)\b/i.test(query)) cursors.push(cursor);
            return cursor;
          };
        }
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  }

  static migrate(sql: SqlStorage): void {
    sql.exec(`CREATE TABLE IF NOT EXISTS meters (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      queue_sent INTEGER NOT NULL DEFAULT 0,
      queue_received INTEGER NOT NULL DEFAULT 0,
      do_requests INTEGER NOT NULL DEFAULT 0,
      do_rows_written INTEGER NOT NULL DEFAULT 0,
      d1_rows_written INTEGER NOT NULL DEFAULT 0
    )`);
  }

  add(name: keyof Meters, n = 1): void {
    const values = this.load();
    values[name] += n;
  }

  read(): Meters {
    this.settle();
    return { ...this.load() };
  }

  /**
   * Ends a request: counts the rows its statements wrote (a cursor's rowsWritten is final once it
   * is consumed, which every statement of the room is by now) and stores the meters in one row.
   */
  save(): void {
    this.settle();
    const v = this.load();
    // The meters row itself is one more row written.
    v.do_rows_written += 1;
    this.raw.exec(
      `INSERT INTO meters (id, queue_sent, queue_received, do_requests, do_rows_written, d1_rows_written) VALUES (1, ?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET queue_sent = excluded.queue_sent, queue_received = excluded.queue_received,
         do_requests = excluded.do_requests, do_rows_written = excluded.do_rows_written, d1_rows_written = excluded.d1_rows_written`,
      v.queue_sent,
      v.queue_received,
      v.do_requests,
      v.do_rows_written,
      v.d1_rows_written,
    );
  }

  private settle(): void {
    const v = this.load();
    for (const cursor of this.cursors.splice(0)) v.do_rows_written += cursor.rowsWritten;
  }

  private load(): Meters {
    if (this.values !== null) return this.values;
    const row = this.raw.exec<Meters & { id: number }>("SELECT * FROM meters WHERE id = 1").toArray()[0];
    this.values =
      row === undefined
        ? { ...ZERO }
        : {
            queue_sent: row.queue_sent,
            queue_received: row.queue_received,
            do_requests: row.do_requests,
            do_rows_written: row.do_rows_written,
            d1_rows_written: row.d1_rows_written,
          };
    return this.values;
  }
}
