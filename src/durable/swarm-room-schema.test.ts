// The room's schema on a real room's SQLite: what a call costs in rows written (Durable Object SQLite
// bills every row written, index entries included), the v18 migration of a room that has calls in
// flight, and a task's calls found by a range of the calls table's key rather than a scan.
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { LEDGER_ROWS_PER_CALL, ROOM_ROWS_PER_TASK } from "../core/capacity-model.ts";
import { RESULTS_PAGE_SQL } from "./swarm-views.ts";
import { migrateSwarmRoom } from "./swarm-room-schema.ts";

let counter = 0;
const freshRoom = () => {
  counter += 1;
  return env.SWARM_ROOM.get(env.SWARM_ROOM.idFromName(`sw_schematest${Date.now().toString(36)}${counter}`));
};

const OPEN_CALL = `INSERT INTO open_calls (call_id, task_id, attempt, turn, model, prompt_tokens, max_tokens, started_at, lane, note_until)
  VALUES (?, 't1', 1, 1, 'mock-1', 10, 32, 1000, 'lane-a', 3000)`;
const LEDGER_ROW = `INSERT INTO calls (call_id, task_id, attempt, turn, model, status, latency_ms, created_at) VALUES (?, ?, 1, 1, 'mock-1', 'ok', 200, 1000)`;

describe("SwarmRoom schema", () => {
  it("writes one row for a noted call and two for a ledger row (its row and its key)", async () => {
    await runInDurableObject(freshRoom(), (_instance, state) => {
      const sql = state.storage.sql;
      expect(sql.exec(OPEN_CALL, "sw_x:t1:1:1").rowsWritten).toBe(1);
      expect(sql.exec(LEDGER_ROW, "sw_x:t1:1:1", "t1").rowsWritten).toBe(2);
      // A hedged backup's row is in the partial index of backups too.
      expect(sql.exec("UPDATE calls SET hedge = 1 WHERE call_id = ?", "sw_x:t1:1:1").rowsWritten).toBeGreaterThan(1);
    });
  });

  it("a task's life writes ROOM_ROWS_PER_TASK rows, the capacity model's figure", async () => {
    await runInDurableObject(freshRoom(), (_instance, state) => {
      const sql = state.storage.sql;
      const written = [
        // Its row: the row, its id's key, tasks_by_state.
        sql.exec("INSERT INTO tasks (id, prompt, state) VALUES ('t1', 'p', 'pending')"),
        // Its grant as a standby task (tasks_by_state moves), and its start from standby.
        sql.exec("UPDATE tasks SET state = 'running', attempts = 1, deadline = 5000, standby = 1 WHERE id = 't1'"),
        sql.exec("UPDATE tasks SET standby = 0 WHERE id = 't1' AND standby = 1"),
        // Its call: the note before send, the ledger row, the note's delete.
        sql.exec(OPEN_CALL, "sw_x:t1:1:1"),
        sql.exec(LEDGER_ROW, "sw_x:t1:1:1", "t1"),
        sql.exec("DELETE FROM open_calls WHERE call_id >= ? AND call_id < ?", "sw_x:t1:1:", "sw_x:t1:1;"),
        // Its end.
        sql.exec("UPDATE tasks SET state = 'succeeded', output = 'o', deadline = NULL, finished_at = 6000 WHERE id = 't1'"),
      ].map((cursor) => cursor.rowsWritten);
      expect(written).toEqual([3, 2, 1, 1, 2, 1, 2]);
      expect(written.reduce((a, b) => a + b, 0)).toBe(ROOM_ROWS_PER_TASK);
    });
  });

  it("a call's ledger row writes LEDGER_ROWS_PER_CALL rows in D1, the capacity model's figure", async () => {
    const result = await env.LEDGER_DB.prepare(
      `INSERT INTO ledger (call_id, swarm_id, task_id, attempt, turn, tenant, model, status, latency_ms, created_at)
       VALUES (?, 'sw_schemad1', 't1', 1, 1, 'tk_test', 'mock-1', 'ok', 200, 1000)`,
    )
      .bind(`sw_schemad1:t1:1:${Date.now()}`)
      .run();
    expect(result.meta.rows_written).toBe(LEDGER_ROWS_PER_CALL);
  });

  it("v18 keeps a room's calls in flight and its ledger, and drops calls_by_task", async () => {
    await runInDurableObject(freshRoom(), (_instance, state) => {
      const sql = state.storage.sql;
      // The room as v17 left it: open_calls a rowid table with a key of its own, calls_by_task.
      sql.exec("DROP TABLE open_calls");
      sql.exec(`CREATE TABLE open_calls (call_id TEXT PRIMARY KEY, task_id TEXT NOT NULL, attempt INTEGER NOT NULL, turn INTEGER NOT NULL,
        model TEXT NOT NULL, prompt_tokens INTEGER NOT NULL, max_tokens INTEGER NOT NULL, started_at INTEGER NOT NULL, lane TEXT, note_until INTEGER)`);
      sql.exec("CREATE INDEX calls_by_task ON calls (task_id)");
      sql.exec("UPDATE schema_version SET version = 17");
      expect(sql.exec(OPEN_CALL, "sw_x:t1:1:1").rowsWritten).toBe(2);
      sql.exec(LEDGER_ROW, "sw_x:t0:1:1", "t0");

      migrateSwarmRoom(sql);

      expect(sql.exec<{ version: number }>("SELECT version FROM schema_version").one().version).toBe(18);
      expect(
        sql.exec("SELECT call_id, task_id, attempt, turn, model, prompt_tokens, max_tokens, started_at, lane, note_until FROM open_calls").toArray(),
      ).toEqual([
        {
          call_id: "sw_x:t1:1:1",
          task_id: "t1",
          attempt: 1,
          turn: 1,
          model: "mock-1",
          prompt_tokens: 10,
          max_tokens: 32,
          started_at: 1000,
          lane: "lane-a",
          note_until: 3000,
        },
      ]);
      expect(sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM calls").one().n).toBe(1);
      expect(sql.exec("SELECT name FROM sqlite_master WHERE name = 'calls_by_task'").toArray()).toEqual([]);
      expect(sql.exec(OPEN_CALL, "sw_x:t2:1:1").rowsWritten).toBe(1);
      // Once there, the migration does nothing more.
      migrateSwarmRoom(sql);
      expect(sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM open_calls").one().n).toBe(2);
    });
  });

  it("finds each task's calls of a results page by a range of the calls table's key, not a scan", async () => {
    await runInDurableObject(freshRoom(), (_instance, state) => {
      const plan = state.storage.sql
        .exec<{ detail: string }>(`EXPLAIN QUERY PLAN ${RESULTS_PAGE_SQL}`, "sw_x", 0, 10)
        .toArray()
        .map((row) => row.detail);
      expect(plan.some((detail) => /SEARCH c USING INDEX sqlite_autoindex_calls_1 \(call_id>\? AND call_id<\?\)/.test(detail))).toBe(true);
      expect(plan.some((detail) => /SCAN c\b/.test(detail))).toBe(false);
    });
  });
});
