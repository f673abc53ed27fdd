// The adaptive window over time, for the dashboard's chart: one row when the window has moved, at
// most one a second and WINDOW_HISTORY_ROWS in all (the oldest go first). Read by the live
// snapshot; it decides nothing about the window (SwarmDispatch does).
import type { SwarmRow } from "./swarm-room-rows.ts";

export const WINDOW_HISTORY_ROWS = 600;
const SAMPLE_MS = 1_000;

export class SwarmWindowHistory {
  private last: { at: number; window: number } | null | undefined = undefined;

  constructor(private readonly sql: SqlStorage) {}

  static migrate(sql: SqlStorage): void {
    sql.exec("CREATE TABLE IF NOT EXISTS window_history (at INTEGER PRIMARY KEY, window INTEGER NOT NULL)");
  }

  /** Called at the end of each request: keeps the window's value when it moved and a second has passed. */
  note(swarm: SwarmRow, now: number): void {
    if (this.last === undefined) {
      this.last = this.sql.exec<{ at: number; window: number }>("SELECT at, window FROM window_history ORDER BY at DESC LIMIT 1").toArray()[0] ?? null;
    }
    if (this.last !== null && (this.last.window === swarm.window || now - this.last.at < SAMPLE_MS)) return;
    this.sql.exec("INSERT OR REPLACE INTO window_history (at, window) VALUES (?, ?)", now, swarm.window);
    this.sql.exec("DELETE FROM window_history WHERE at < (SELECT at FROM window_history ORDER BY at DESC LIMIT 1 OFFSET ?)", WINDOW_HISTORY_ROWS - 1);
    this.last = { at: now, window: swarm.window };
  }

  /** [epoch ms, window] in time order. */
  read(): [number, number][] {
    return this.sql
      .exec<{ at: number; window: number }>("SELECT at, window FROM window_history ORDER BY at")
      .toArray()
      .map((row) => [row.at, row.window]);
  }
}
