// Ends a batch whose swarm has ended: writes its output file (the succeeded lines, in line order)
// and its error file (the lines that failed, were cancelled or expired, with their custom_id read
// back from the input file), page by page into R2, never whole in memory; then records the files.
import { toErrorLine } from "../../src/core/batch-line.ts";
import { splitLines } from "../../src/core/split-lines.ts";
import type { TaskResult } from "../../src/core/swarm-contract.ts";
import type { BatchRow } from "./batch-store.ts";
import type { OrchestratorDeps } from "./composition.ts";
import { toFileKey } from "./routes/files.ts";

export type FinalizeDeps = Pick<OrchestratorDeps, "batches" | "swarmRooms" | "files" | "fileObjects" | "newFileId" | "now">;

/** Results read from the room a page at a time. */
const RESULTS_PAGE = 1_000;
/** Generated files have no upload limit of their own: a batch's output is as large as its answers. */
const GENERATED_MAX_BYTES = Number.MAX_SAFE_INTEGER;

/** A batch task's id is its line: `l<line>`. */
export function toLineTaskId(line: number): string {
  return `l${line}`;
}

function toLine(taskId: string): number | null {
  const match = /^l(\d+)$/.exec(taskId);
  return match === null ? null : Number(match[1]);
}

/** Why a line that did not succeed ended, as its error line's code. */
function toErrorCode(result: TaskResult, expired: boolean): string {
  switch (result.state) {
    case "cancelled":
      return expired ? "batch_expired" : "batch_cancelled";
    case "skipped_budget":
      return "budget_exceeded";
    default:
      return result.error?.class ?? "internal";
  }
}

/** Writes the files and ends the batch; a no-op for the caller that did not claim it. */
export async function finalizeBatch(deps: FinalizeDeps, row: BatchRow): Promise<void> {
  if (row.swarm_id === null || (row.status !== "in_progress" && row.status !== "cancelling")) return;
  const previous = row.status;
  if (!(await deps.batches.claimFinalize(row.id, deps.now()))) return;
  try {
    await writeFiles(deps, row, row.swarm_id);
  } catch (error) {
    await deps.batches.releaseFinalize(row.id, previous);
    throw error;
  }
}

async function writeFiles(deps: FinalizeDeps, row: BatchRow, swarmId: string): Promise<void> {
  const expired = row.expired_at !== null;
  const failures = new Map<number, { code: string; message: string }>();
  let completed = 0;
  const encoder = new TextEncoder();
  async function* outputLines(): AsyncGenerator<Uint8Array> {
    let cursor: string | null = null;
    do {
      const page = await deps.swarmRooms.getResults(swarmId, row.tenant, cursor, RESULTS_PAGE);
      if (page === null) throw new Error(`the swarm ${swarmId} of batch ${row.id} is gone`);
      const texts: string[] = [];
      for (const result of page.results) {
        const line = toLine(result.task_id);
        if (line === null) continue;
        if (result.state === "succeeded" && result.output !== null) {
          completed += 1;
          texts.push(`${result.output}\n`);
        } else {
          failures.set(line, { code: toErrorCode(result, expired), message: result.error?.message ?? `the request was not run (${result.state})` });
        }
      }
      if (texts.length > 0) yield encoder.encode(texts.join(""));
      cursor = page.next_cursor;
    } while (cursor !== null);
  }
  const outputFileId = await writeFile(deps, row, `${row.id}_output.jsonl`, outputLines());
  const errorFileId = failures.size === 0 ? null : await writeFile(deps, row, `${row.id}_error.jsonl`, errorLines(deps, row, failures));
  const status = expired ? "expired" : row.status === "cancelling" ? "cancelled" : "completed";
  await deps.batches.finish(row.id, { status, outputFileId: completed > 0 ? outputFileId : null, errorFileId, completed, failed: failures.size }, deps.now());
  if (completed === 0 && outputFileId !== null) await deleteFile(deps, row.tenant, outputFileId);
}

/** The error lines, in line order: the input file is read again, and only the failed lines' custom_id kept. */
async function* errorLines(deps: FinalizeDeps, row: BatchRow, failures: ReadonlyMap<number, { code: string; message: string }>): AsyncGenerator<Uint8Array> {
  const input = await deps.fileObjects.read(toFileKey(row.tenant, row.input_file_id));
  if (input === null) throw new Error(`the input file ${row.input_file_id} of batch ${row.id} is gone`);
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();
  for await (const { line, bytes } of splitLines(input)) {
    const failure = failures.get(line);
    if (failure === undefined) continue;
    const customId = readCustomId(decoder.decode(bytes));
    yield encoder.encode(toErrorLine({ id: `batch_req_${toLineTaskId(line)}`, customId, code: failure.code, message: failure.message }));
  }
}

function readCustomId(text: string): string {
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === "object" && parsed !== null && "custom_id" in parsed && typeof parsed.custom_id === "string") return parsed.custom_id;
  } catch {
    // Checked when the batch was created: it parses.
  }
  return "";
}

async function writeFile(deps: FinalizeDeps, row: BatchRow, filename: string, chunks: AsyncIterable<Uint8Array>): Promise<string> {
  const id = deps.newFileId();
  const bytes = await deps.fileObjects.write(toFileKey(row.tenant, id), chunks, GENERATED_MAX_BYTES);
  await deps.files.insert({ id, tenant: row.tenant, purpose: "batch_output", filename, bytes, createdAt: deps.now() });
  return id;
}

async function deleteFile(deps: FinalizeDeps, tenant: string, id: string): Promise<void> {
  await deps.files.delete(tenant, id);
  await deps.fileObjects.delete(toFileKey(tenant, id));
}
