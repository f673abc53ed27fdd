// Ends a batch whose swarm has ended. Its output and error files were written while it ran, as
// numbered part objects (src/durable/swarm-batch-output.ts); the room writes the lines still
// waiting (cancelled ones as batch_cancelled or batch_expired), and this records the two files.
import type { BatchCancelCode } from "../../src/core/batch-parts.ts";
import type { BatchFileSummary } from "../../src/durable/swarm-batch-output.ts";
import type { BatchRow } from "./batch-store.ts";
import type { OrchestratorDeps } from "./composition.ts";

export type FinalizeDeps = Pick<OrchestratorDeps, "batches" | "swarmRooms" | "files" | "newFileId" | "now">;

/** A batch task's id is its line: `l<line>`. */
export function toLineTaskId(line: number): string {
  return `l${line}`;
}

/** Records the files and ends the batch; a no-op for the caller that did not claim it, or while a line is still to end. */
export async function finalizeBatch(deps: FinalizeDeps, row: BatchRow): Promise<void> {
  if (row.swarm_id === null || (row.status !== "in_progress" && row.status !== "cancelling")) return;
  const previous = row.status;
  const expired = row.expired_at !== null;
  const cancelCode: BatchCancelCode = expired ? "batch_expired" : "batch_cancelled";
  // Written before the claim: a second reader racing here writes nothing twice (the room writes one flush at a time).
  const summary = await deps.swarmRooms.finishBatchOutput(row.swarm_id, row.tenant, cancelCode);
  if (summary === null) throw new Error(`the swarm ${row.swarm_id} of batch ${row.id} is gone`);
  if (!summary.ready) return;
  if (!(await deps.batches.claimFinalize(row.id, deps.now()))) return;
  try {
    const outputFileId = await recordFile(deps, row, `${row.id}_output.jsonl`, summary.output);
    const errorFileId = await recordFile(deps, row, `${row.id}_error.jsonl`, summary.error);
    const status = expired ? "expired" : previous === "cancelling" ? "cancelled" : "completed";
    await deps.batches.finish(row.id, { status, outputFileId, errorFileId, completed: summary.output.lines, failed: summary.error.lines }, deps.now());
  } catch (error) {
    await deps.batches.releaseFinalize(row.id, previous);
    throw error;
  }
}

/** The file of a kind's parts; null when it has no line (OpenAI leaves that file id null). */
async function recordFile(deps: FinalizeDeps, row: BatchRow, filename: string, file: BatchFileSummary): Promise<string | null> {
  if (file.lines === 0) return null;
  const id = deps.newFileId();
  await deps.files.insert({
    id,
    tenant: row.tenant,
    purpose: "batch_output",
    filename,
    bytes: file.bytes,
    createdAt: deps.now(),
    parts: { prefix: file.prefix, count: file.parts },
  });
  return id;
}
