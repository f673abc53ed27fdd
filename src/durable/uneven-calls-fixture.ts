// Tests' history of a swarm whose calls are uneven: finished calls of a long tail in the room's
// ledger, as an earlier part of the swarm would have left them. Shared by the SwarmRoom's test
// files; not part of any Worker.
import { runInDurableObject } from "cloudflare:test";
import { EVEN_CALLS_MIN_SAMPLES } from "../core/standby.ts";
import type { SwarmRoom } from "./swarm-room.ts";

/**
 * Gives the room EVEN_CALLS_MIN_SAMPLES finished calls, one in five of them 1.5 s and the rest
 * 300 ms (areCallsEven: uneven), so that near the swarm's end its standby goes by the lanes' share
 * and the window's room rather than the last-window rule for even calls, which also holds while
 * too few calls have ended to tell (tailStandbyRoom). The rows belong to no task of the swarm, cost
 * nothing and count as sent to D1 already, so no bill or flush sees them.
 */
export async function seedUnevenCalls(stub: DurableObjectStub<SwarmRoom>): Promise<void> {
  await runInDurableObject(stub, (_instance, state) => {
    const now = Date.now();
    for (let i = 0; i < EVEN_CALLS_MIN_SAMPLES; i++) {
      state.storage.sql.exec(
        `INSERT INTO calls (call_id, task_id, attempt, turn, model, status, cost_usd, latency_ms, created_at)
         VALUES (?, ?, 1, 1, 'mock-1', 'ok', 0, ?, ?)`,
        `seed:uneven-${i}:1:1`,
        `uneven-${i}`,
        i % 5 === 0 ? 1_500 : 300,
        now,
      );
    }
    state.storage.sql.exec("UPDATE ledger_sync SET flushed_rowid = (SELECT MAX(rowid) FROM calls) WHERE id = 1");
  });
}
