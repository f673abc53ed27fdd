// A batch swarm's output and error files, written while it runs: each line that ends is noted in
// `batch_ended` by a trigger in the same write as its end, and the alarm writes the noted lines about
// a second later as the next numbered part objects in FILES_BUCKET (docs/data.md, "R2: batch parts").
// A part is counted in `batch_parts` only after its put, and its lines leave `batch_ended` in that
// same write: a flush that dies in between writes the same part number again, so every line is in
// exactly one part whatever restarts. Cancelled lines wait for the end, which says why they were
// cancelled (batch_cancelled or batch_expired). Owns both tables; never calls a model.
import {
  type BatchCancelCode,
  type BatchPartKind,
  readCustomId,
  toBatchFilePrefix,
  toBatchPartKey,
  toLineErrorCode,
  toReadSpans,
} from "../core/batch-parts.ts";
import { parseLineRef, toErrorLine, type LineRange } from "../core/batch-line.ts";
import type { ErrorClass } from "../core/error-class.ts";
import { TERMINAL_TASK_STATES, type TaskState } from "../core/swarm-contract.ts";
import type { SwarmRow } from "./swarm-room-rows.ts";

/** A flush that failed (R2 down) is tried again this much later. */
const FLUSH_RETRY_MS = 5_000;
/** A part holds at most this many lines… */
const PART_LINES_MAX = 1_000;
/** …and stops taking lines once it holds this many bytes: what one flush holds in memory. */
const PART_BYTES_MAX = 4 * 1024 * 1024;
/** Error lines' custom_id: neighbouring input lines closer than this share one ranged read… */
const READ_GAP_MAX = 64 * 1024;
/** …of at most this many bytes. */
const READ_SPAN_MAX = 1024 * 1024;

const TERMINAL_LIST = TERMINAL_TASK_STATES.map((state) => `'${state}'`).join(", ");

export interface BatchFileSummary {
  /** Where its parts are (core/batch-parts.ts, toBatchPartKey). */
  prefix: string;
  parts: number;
  lines: number;
  bytes: number;
}

/** What the orchestrator records as the batch's files once every line is written. */
export type BatchOutputSummary = { ready: false } | { ready: true; output: BatchFileSummary; error: BatchFileSummary };

type EndedRow = {
  seq: number;
  id: string;
  state: TaskState;
  output: string | null;
  error_class: ErrorClass | null;
  error_message: string | null;
  prompt: string;
};

interface ErrorEntry {
  taskId: string;
  code: string;
  message: string;
  range: LineRange | null;
}

export class SwarmBatchOutput {
  /** When the alarm writes the lines noted so far; null: none noted since the last flush (or unknown after a restart). */
  private dueAt: number | null = null;
  /** One flush at a time: two would write the same part number with different lines. */
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly sql: SqlStorage,
    private readonly bucket: R2Bucket | undefined,
    /** How long a line that ended waits for company before its part is written (BATCH_FLUSH_MS). */
    private readonly flushMs: number,
  ) {}

  /** A batch swarm was stored: its lines are noted as they end (a plain swarm pays nothing). */
  begin(swarm: SwarmRow): void {
    if (swarm.batch_input === null) return;
    // A trigger, so every way a task ends (a report, a lapsed lease's last attempt, cancel, fail
    // fast, the budget) notes it in the same write, with no call in each of those paths.
    this.sql.exec(
      `CREATE TRIGGER IF NOT EXISTS batch_line_ended AFTER UPDATE OF state ON tasks
       WHEN NEW.kind = 'task' AND NEW.state IN (${TERMINAL_LIST}) AND OLD.state NOT IN (${TERMINAL_LIST})
       BEGIN INSERT OR IGNORE INTO batch_ended (seq) VALUES (NEW.seq); END`,
    );
  }

  /** When the alarm must write the lines that ended; null when none wait (or the swarm is no batch). */
  nextAlarm(swarm: SwarmRow, now: number): number | null {
    if (swarm.batch_input === null) return null;
    if (this.dueAt === null && this.hasWaitingLines(false)) this.dueAt = now + this.flushMs;
    return this.dueAt;
  }

  /** The alarm: writes the lines that ended if their time has come. Cancelled lines wait for finish. */
  async flushIfDue(swarm: SwarmRow, now: number): Promise<void> {
    if (swarm.batch_input === null || this.dueAt === null || now < this.dueAt) return;
    this.dueAt = null;
    try {
      await this.serialized(() => this.writeWaiting(swarm, null));
    } catch (error) {
      console.error(`swarm ${swarm.id}: writing batch parts failed, retrying in ${FLUSH_RETRY_MS} ms`, error);
      this.dueAt = Date.now() + FLUSH_RETRY_MS;
    }
  }

  /**
   * Every line has ended: writes what is left, cancelled lines with `cancelCode`, and returns the
   * files' parts. `ready: false` while a line is still to end (running calls finish after a cancel).
   */
  async finish(swarm: SwarmRow, cancelCode: BatchCancelCode): Promise<BatchOutputSummary> {
    if (swarm.batch_input === null) throw new Error(`swarm ${swarm.id} is not a batch`);
    const open = this.sql.exec(`SELECT 1 FROM tasks WHERE kind = 'task' AND state NOT IN (${TERMINAL_LIST}) LIMIT 1`).toArray();
    if (open.length > 0) return { ready: false };
    await this.serialized(() => this.writeWaiting(swarm, cancelCode));
    return { ready: true, output: this.summary(swarm, "output"), error: this.summary(swarm, "error") };
  }

  private serialized(work: () => Promise<void>): Promise<void> {
    const run = this.flushing.then(work);
    this.flushing = run.catch(() => {});
    return run;
  }

  private hasWaitingLines(withCancelled: boolean): boolean {
    return this.sql.exec(`${this.selectWaiting(withCancelled)} LIMIT 1`).toArray().length > 0;
  }

  private selectWaiting(withCancelled: boolean): string {
    return `SELECT e.seq, t.id, t.state, t.output, t.error_class, t.error_message, t.prompt
            FROM batch_ended e JOIN tasks t ON t.seq = e.seq
            ${withCancelled ? "" : "WHERE t.state <> 'cancelled'"} ORDER BY e.seq`;
  }

  /** Writes part after part until no line waits (cancelled ones only when `cancelCode` is given). */
  private async writeWaiting(swarm: SwarmRow, cancelCode: BatchCancelCode | null): Promise<void> {
    while (await this.writePart(swarm, cancelCode)) {
      // Each round holds one part's lines at most.
    }
  }

  /** One part of each kind from the lines that wait; false when none did. */
  private async writePart(swarm: SwarmRow, cancelCode: BatchCancelCode | null): Promise<boolean> {
    const input = swarm.batch_input;
    if (input === null) return false;
    if (this.bucket === undefined) throw new Error("the SwarmRoom has no FILES_BUCKET binding to write batch parts to");
    const seqs: number[] = [];
    const outputs: string[] = [];
    const errors: ErrorEntry[] = [];
    let bytes = 0;
    for (const row of this.sql.exec<EndedRow>(`${this.selectWaiting(cancelCode !== null)} LIMIT ?`, PART_LINES_MAX)) {
      if (bytes >= PART_BYTES_MAX) break;
      seqs.push(row.seq);
      if (row.state === "succeeded" && row.output !== null) {
        outputs.push(`${row.output}\n`);
        bytes += row.output.length + 1;
      } else {
        const message = row.error_message ?? `the request was not run (${row.state})`;
        errors.push({
          taskId: row.id,
          code: toLineErrorCode(row.state, row.error_class, cancelCode ?? "batch_cancelled"),
          message,
          range: parseLineRef(row.prompt),
        });
        bytes += message.length + 200;
      }
    }
    if (seqs.length === 0) return false;
    const errorLines = await this.toErrorLines(input, errors);
    const written: { kind: BatchPartKind; text: string; lines: number }[] = [];
    if (outputs.length > 0) written.push({ kind: "output", text: outputs.join(""), lines: outputs.length });
    if (errorLines.length > 0) written.push({ kind: "error", text: errorLines.join(""), lines: errorLines.length });
    const encoder = new TextEncoder();
    const parts = written.map((part) => {
      const file = this.summary(swarm, part.kind);
      return { ...part, bytes: encoder.encode(part.text), key: toBatchPartKey(file.prefix, file.parts + 1) };
    });
    // Puts first: a part is counted (and its lines leave batch_ended) only once it is in R2.
    await Promise.all(parts.map((part) => this.bucket?.put(part.key, part.bytes)));
    for (const part of parts) {
      this.sql.exec(
        `INSERT INTO batch_parts (kind, parts, lines, bytes) VALUES (?, 1, ?, ?)
         ON CONFLICT (kind) DO UPDATE SET parts = parts + 1, lines = lines + excluded.lines, bytes = bytes + excluded.bytes`,
        part.kind,
        part.lines,
        part.bytes.byteLength,
      );
    }
    this.sql.exec("DELETE FROM batch_ended WHERE seq IN (SELECT value FROM json_each(?))", JSON.stringify(seqs));
    return true;
  }

  /** The error lines, with each line's custom_id read back from the input in a few ranged reads. */
  private async toErrorLines(input: string, errors: readonly ErrorEntry[]): Promise<string[]> {
    const customIds = errors.map(() => "");
    const ranged = errors.flatMap((entry, index) => (entry.range === null ? [] : [{ index, range: entry.range }]));
    const decoder = new TextDecoder();
    for (const span of toReadSpans(
      ranged.map((r) => r.range),
      { maxGap: READ_GAP_MAX, maxSpan: READ_SPAN_MAX },
    )) {
      const object = await this.bucket?.get(input, { range: { offset: span.offset, length: span.length } });
      // The input file was deleted meanwhile: the lines keep an empty custom_id rather than never being written.
      if (object === null || object === undefined) continue;
      const bytes = new Uint8Array(await object.arrayBuffer());
      for (const member of span.members) {
        const entry = ranged[member];
        if (entry === undefined) continue;
        const start = entry.range.offset - span.offset;
        customIds[entry.index] = readCustomId(decoder.decode(bytes.subarray(start, start + entry.range.length)));
      }
    }
    return errors.map((entry, index) =>
      toErrorLine({ id: `batch_req_${entry.taskId}`, customId: customIds[index] ?? "", code: entry.code, message: entry.message }),
    );
  }

  private summary(swarm: SwarmRow, kind: BatchPartKind): BatchFileSummary {
    const row = this.sql.exec<{ parts: number; lines: number; bytes: number }>("SELECT parts, lines, bytes FROM batch_parts WHERE kind = ?", kind).toArray()[0];
    return { prefix: toBatchFilePrefix(swarm.tenant, swarm.id, kind), ...(row ?? { parts: 0, lines: 0, bytes: 0 }) };
  }
}
