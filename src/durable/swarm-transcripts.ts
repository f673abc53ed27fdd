// Transcripts of the swarm's tasks (GET /v1/swarms/:id/tasks/:task_id): the bounded copy of each
// multi-turn task's conversation it keeps from the checkpoints lanes report (the checkpoint itself
// is dropped when the task ends) with the MCP calls those checkpoints list, and the read that joins
// a task's row, its calls and that copy.
import { type ChatMessage, ChatMessageSchema, toCheckpointMcpCalls } from "../core/agent-conversation.ts";
import type { ErrorClass } from "../core/error-class.ts";
import type { AgentCheckpoint, TaskState } from "../core/swarm-contract.ts";
import { boundMessages, TRANSCRIPT_MAX_MCP_CALLS, type TaskTranscript, type TranscriptMcpCall, toTranscriptMessages } from "../core/task-transcript.ts";
import type { SwarmRow } from "./swarm-room-rows.ts";
import type { LedgerRow } from "../ledger/d1-ledger.ts";
import { callIdRange } from "../core/ids.ts";

const toIso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

export class SwarmTranscripts {
  constructor(private readonly sql: SqlStorage) {}

  static migrate(sql: SqlStorage): void {
    sql.exec(`CREATE TABLE IF NOT EXISTS transcripts (
      task_id  TEXT PRIMARY KEY,
      attempt  INTEGER NOT NULL,
      step     INTEGER NOT NULL,
      messages TEXT NOT NULL,
      truncated INTEGER NOT NULL
    )`);
    // Its own table (not a column of transcripts): rooms made before it get it with this statement.
    sql.exec(`CREATE TABLE IF NOT EXISTS transcript_mcp_calls (
      task_id      TEXT NOT NULL,
      attempt      INTEGER NOT NULL,
      tool_call_id TEXT NOT NULL,
      turn         INTEGER NOT NULL,
      server       TEXT NOT NULL,
      tool         TEXT NOT NULL,
      latency_ms   REAL NOT NULL,
      bytes        INTEGER NOT NULL,
      error        TEXT,
      PRIMARY KEY (task_id, attempt, tool_call_id)
    )`);
  }

  /** Keeps the latest conversation a report carries (a later attempt, or more messages, replaces it). */
  keep(reports: readonly { taskId: string; attempt: number; checkpoint?: AgentCheckpoint }[]): void {
    for (const report of reports) {
      if (report.checkpoint === undefined) continue;
      // A checkpoint lists every MCP call of the conversation so far: the ones already kept are ignored.
      for (const call of toCheckpointMcpCalls(report.checkpoint)) {
        this.sql.exec(
          `INSERT OR IGNORE INTO transcript_mcp_calls (task_id, attempt, tool_call_id, turn, server, tool, latency_ms, bytes, error)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
          report.taskId,
          call.attempt,
          call.tool_call_id,
          call.turn,
          call.server,
          call.tool,
          call.latency_ms,
          call.bytes,
          call.error,
        );
      }
      const parsed = ChatMessageSchema.array().safeParse(JSON.parse(report.checkpoint.messages_json));
      if (!parsed.success) continue;
      const { messages, truncated } = boundMessages(parsed.data);
      this.sql.exec(
        `INSERT INTO transcripts (task_id, attempt, step, messages, truncated) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (task_id) DO UPDATE SET attempt = excluded.attempt, step = excluded.step, messages = excluded.messages, truncated = excluded.truncated
         WHERE excluded.attempt > transcripts.attempt OR (excluded.attempt = transcripts.attempt AND excluded.step > transcripts.step)`,
        report.taskId,
        report.attempt,
        report.checkpoint.step,
        JSON.stringify(messages),
        truncated ? 1 : 0,
      );
    }
  }

  /** One task's transcript; null when the swarm has no such task. */
  read(swarm: SwarmRow, taskId: string): TaskTranscript | null {
    const task = this.sql
      .exec<{
        id: string;
        state: TaskState;
        attempts: number;
        model: string | null;
        prompt: string;
        output: string | null;
        finish_reason: string | null;
        error_class: ErrorClass | null;
        error_message: string | null;
        tool_calls: number;
        started_at: number | null;
        finished_at: number | null;
      }>(
        `SELECT id, state, attempts, model, prompt, output, finish_reason, error_class, error_message, tool_calls, started_at, finished_at
         FROM tasks WHERE id = ?`,
        taskId,
      )
      .toArray()[0];
    if (task === undefined) return null;
    // The task's calls: a range of the calls table's key (callIdRange), not a scan.
    const range = callIdRange(swarm.id, taskId);
    const calls = this.sql
      .exec<Omit<LedgerRow, "swarm_id" | "task_id" | "tenant">>(
        `SELECT call_id, attempt, turn, model, status, error_class, prompt_tokens, cached_tokens, completion_tokens, reasoning_tokens,
                total_tokens, cost_usd, latency_ms, created_at, hedge FROM calls WHERE call_id >= ? AND call_id < ? ORDER BY attempt, turn, hedge`,
        range.from,
        range.to,
      )
      .toArray();
    const mcpCalls = this.sql
      .exec<TranscriptMcpCall>(
        `SELECT tool_call_id, attempt, turn, server, tool, latency_ms, bytes, error FROM transcript_mcp_calls WHERE task_id = ?
         ORDER BY rowid DESC LIMIT ?`,
        taskId,
        TRANSCRIPT_MAX_MCP_CALLS,
      )
      .toArray()
      .reverse();
    const kept = this.sql.exec<{ messages: string; truncated: number }>("SELECT messages, truncated FROM transcripts WHERE task_id = ?", taskId).toArray()[0];
    const keptMessages: ChatMessage[] | null = kept === undefined ? null : ChatMessageSchema.array().parse(JSON.parse(kept.messages));
    // The call whose answer the task kept: its last turn's, not a backup whose answer was not kept.
    const last = calls.findLast((c) => c.hedge !== 1);
    const { messages, truncated } = toTranscriptMessages({ system: swarm.system, prompt: task.prompt, kept: keptMessages, output: task.output });
    return {
      swarm_id: swarm.id,
      task_id: task.id,
      state: task.state,
      attempts: task.attempts,
      model: task.model,
      prompt: task.prompt,
      output: task.output,
      finish_reason: task.finish_reason,
      error: task.error_class === null ? null : { class: task.error_class, message: task.error_message ?? "" },
      tool_calls: task.tool_calls,
      started_at: toIso(task.started_at),
      finished_at: toIso(task.finished_at),
      usage: { calls: calls.length, total_tokens: calls.reduce((sum, c) => sum + (c.total_tokens ?? 0), 0) },
      cost_usd: calls.reduce((sum, c) => sum + (c.cost_usd ?? 0), 0),
      calls: calls.map((c) => ({
        call_id: c.call_id,
        attempt: c.attempt,
        turn: c.turn,
        model: c.model,
        status: c.status,
        error_class: c.error_class,
        usage: {
          prompt_tokens: c.prompt_tokens,
          cached_tokens: c.cached_tokens,
          completion_tokens: c.completion_tokens,
          reasoning_tokens: c.reasoning_tokens,
          total_tokens: c.total_tokens,
        },
        cost_usd: c.cost_usd,
        latency_ms: c.latency_ms,
        started_at: toIso(c.created_at) ?? "",
        // The ledger keeps no finish reason per call: the last call of a succeeded task gave its output.
        finish_reason: task.state === "succeeded" && c === last && c.status === "ok" ? task.finish_reason : null,
        hedge: c.hedge === 2 ? ("won" as const) : c.hedge === 1 ? ("lost" as const) : null,
      })),
      mcp_calls: mcpCalls.map((c) => ({ ...c })),
      messages,
      messages_truncated: truncated || kept?.truncated === 1,
    };
  }
}
