// The swarm's scratchpad: one key/value table in the SwarmRoom's SQLite, shared by the swarm's
// agents through the scratchpad_* tools. Bounded by SCRATCHPAD_LIMITS (src/core/scratchpad.ts).
import { SCRATCHPAD_LIMITS } from "../core/scratchpad.ts";
import type { ScratchpadRequest, ScratchpadResponse } from "../core/swarm-contract.ts";

export function runScratchpad(sql: SqlStorage, request: ScratchpadRequest, now: number): ScratchpadResponse {
  switch (request.op) {
    case "get": {
      const row = sql.exec<{ value: string }>("SELECT value FROM scratchpad WHERE key = ?", request.key).toArray()[0];
      return { ok: true, op: "get", key: request.key, value: row?.value ?? null };
    }
    case "put": {
      if (request.key.length === 0 || request.key.length > SCRATCHPAD_LIMITS.keyChars)
        return { ok: false, error: `keys are 1-${SCRATCHPAD_LIMITS.keyChars} characters` };
      if (request.value.length > SCRATCHPAD_LIMITS.valueChars) return { ok: false, error: `values are at most ${SCRATCHPAD_LIMITS.valueChars} characters` };
      const exists = sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM scratchpad WHERE key = ?", request.key).one().n > 0;
      if (!exists && sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM scratchpad").one().n >= SCRATCHPAD_LIMITS.keys) {
        return { ok: false, error: `the scratchpad is full (${SCRATCHPAD_LIMITS.keys} keys): overwrite an existing key instead` };
      }
      sql.exec(
        `INSERT INTO scratchpad (key, value, task_id, updated_at) VALUES (?, ?, ?, ?)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value, task_id = excluded.task_id, updated_at = excluded.updated_at`,
        request.key,
        request.value,
        request.taskId,
        now,
      );
      return { ok: true, op: "put", key: request.key, bytes: request.value.length };
    }
    case "list": {
      // A literal prefix test (LIKE would read "%" and "_" as wildcards; an upper bound such as
      // prefix + U+FFFF would miss keys continuing with an emoji, which sort above it in UTF-8).
      const keys = sql
        .exec<{ key: string }>(
          "SELECT key FROM scratchpad WHERE key >= ? AND substr(key, 1, length(?)) = ? ORDER BY key LIMIT ?",
          request.prefix,
          request.prefix,
          request.prefix,
          SCRATCHPAD_LIMITS.listPage + 1,
        )
        .toArray()
        .map((row) => row.key);
      return { ok: true, op: "list", keys: keys.slice(0, SCRATCHPAD_LIMITS.listPage), truncated: keys.length > SCRATCHPAD_LIMITS.listPage };
    }
  }
}
