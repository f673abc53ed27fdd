// What the swarm's readers see: its status (counts, usage, circuits, budget, billable operations,
// the reduced answer once finished), its results page by page, its plan, and the succeeded outputs
// the reducers merge. Read-only: it never writes a row.
import { defaultRetryBudget } from "../core/adaptive-window.ts";
import { toWeakEntityTag } from "../core/entity-tag.ts";
import type { ErrorClass } from "../core/error-class.ts";
import { reduceOutputs, toWire, type TaskOutput } from "../core/reducers.ts";
import { sha256, sha256Hex } from "../core/sha256.ts";
import { SwarmMetadataSchema } from "../core/spec-schema.ts";
import type { BillableView, PlanView, ResultsPage, SwarmStatusWire, TaskResult, TaskState } from "../core/swarm-contract.ts";
import type { SwarmBudget } from "./swarm-budget.ts";
import type { SwarmHedges } from "./swarm-hedges.ts";
import type { SwarmLedger } from "./swarm-ledger.ts";
import type { SwarmLineage } from "./swarm-lineage.ts";
import type { SwarmTickets } from "./swarm-tickets.ts";
import type { SwarmMeters } from "./swarm-meters.ts";
import { llmOutput, planView, reduceSpecOf, reductionView } from "./swarm-phases.ts";
import type { SwarmRow } from "./swarm-room-rows.ts";
import type { SwarmRouting } from "./swarm-routing.ts";
import type { SwarmStore } from "./swarm-store.ts";
import type { SwarmTotals } from "./swarm-totals.ts";

/**
 * A page of sub-task results with each task's usage (?1 the swarm id, ?2 the cursor's seq, ?3 the page
 * size + 1). Each task's calls are the range of its call ids in the calls table's key (callIdRange:
 * `swarm:task:` up to `swarm:task;`), bounds SQLite computes per task row and seeks, so the join reads
 * each call once without an index of its own (exported for the test of its plan).
 */
export const RESULTS_PAGE_SQL = `
  SELECT t.seq, t.id, t.state, t.tool_calls, t.output, t.error_class, t.error_message, t.attempts,
         COUNT(c.call_id) AS calls, SUM(c.prompt_tokens) AS prompt_tokens, SUM(c.cached_tokens) AS cached_tokens,
         SUM(c.completion_tokens) AS completion_tokens, SUM(c.total_tokens) AS total_tokens,
         SUM(c.cost_usd) AS cost_usd, SUM(c.latency_ms) AS latency_ms
  FROM tasks t LEFT JOIN calls c ON c.call_id >= ?1 || ':' || t.id || ':' AND c.call_id < ?1 || ':' || t.id || ';'
  WHERE t.seq > ?2 AND t.kind = 'task' GROUP BY t.seq ORDER BY t.seq LIMIT ?3`;

const toIso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

export class SwarmViews {
  constructor(
    private readonly sql: SqlStorage,
    private readonly store: SwarmStore,
    private readonly totals: SwarmTotals,
    private readonly routing: SwarmRouting,
    private readonly budget: SwarmBudget,
    private readonly ledger: SwarmLedger,
    private readonly meters: SwarmMeters,
    private readonly lineage: SwarmLineage,
    private readonly tickets: SwarmTickets,
    private readonly hedges: SwarmHedges,
  ) {}

  /** A page of sub-task results in task order, after the cursor (the last `seq` returned). */
  readResults(swarmId: string, cursor: string | null, limit: number): ResultsPage {
    const after = cursor === null ? 0 : Number(cursor);
    const pageSize = Math.min(Math.max(1, Math.floor(limit)), 1_000);
    const rows = this.sql
      .exec<{
        seq: number;
        id: string;
        state: TaskState;
        tool_calls: number;
        output: string | null;
        error_class: ErrorClass | null;
        error_message: string | null;
        attempts: number;
        calls: number;
        prompt_tokens: number | null;
        cached_tokens: number | null;
        completion_tokens: number | null;
        total_tokens: number | null;
        cost_usd: number | null;
        latency_ms: number | null;
      }>(RESULTS_PAGE_SQL, swarmId, after, pageSize + 1)
      .toArray();
    const page = rows.slice(0, pageSize);
    const results: TaskResult[] = page.map((row) => ({
      task_id: row.id,
      state: row.state,
      output: row.output,
      error: row.error_class === null ? null : { class: row.error_class, message: row.error_message ?? "" },
      attempts: row.attempts,
      tool_calls: row.tool_calls,
      usage: {
        calls: row.calls,
        prompt_tokens: row.prompt_tokens ?? 0,
        cached_tokens: row.cached_tokens ?? 0,
        completion_tokens: row.completion_tokens ?? 0,
        total_tokens: row.total_tokens ?? 0,
      },
      cost_usd: row.cost_usd ?? 0,
      latency_ms: row.latency_ms,
    }));
    const last = page[page.length - 1];
    return { results, next_cursor: rows.length > pageSize && last ? String(last.seq) : null };
  }

  /** A goal's plan in full (status shows its size only); null for a swarm without a goal. */
  readPlan(swarm: SwarmRow): (PlanView & { tasks: { id: string; prompt: string }[] }) | null {
    const view = planView(swarm);
    if (view === null) return null;
    const tasks = this.sql.exec<{ id: string; prompt: string }>("SELECT id, prompt FROM tasks WHERE kind = 'task' ORDER BY seq").toArray();
    return { ...view, tasks };
  }

  toStatus(swarm: SwarmRow): SwarmStatusWire {
    const { cost_usd, ...usage } = this.ledger.usageTotals();
    const limits = this.store.limits(swarm);
    const finished = swarm.finished_at !== null;
    const metadata = swarm.metadata === null ? {} : SwarmMetadataSchema.parse(JSON.parse(swarm.metadata));
    return {
      id: swarm.id,
      name: swarm.name,
      state: swarm.state,
      model: swarm.model,
      tasks: swarm.task_count,
      window: swarm.window,
      counts: this.totals.counts(),
      usage,
      estimated_calls: this.ledger.estimatedCalls(),
      tool_calls: this.totals.toolCalls(),
      cost_usd,
      cache: this.ledger.cacheView(),
      wall_s: ((swarm.finished_at ?? Date.now()) - swarm.created_at) / 1_000,
      latency_ms: this.ledger.latencyPercentiles(usage.calls, Date.now(), finished || swarm.state === "cancelled"),
      output: finished ? this.output(swarm) : null,
      plan: planView(swarm),
      reduction: reductionView(swarm),
      reduce: { kind: reduceSpecOf(swarm).kind },
      max_window: limits.concurrency,
      retries: { used: swarm.retries_used, budget: limits.retry_budget ?? defaultRetryBudget(swarm.task_count) },
      circuits: this.routing.circuitViews(swarm),
      reason: this.routing.reason(swarm),
      models: this.store.mix(swarm),
      budget: this.budget.budgetView(swarm),
      metadata,
      billable: this.billableView(swarm.task_count),
      dispatch: this.tickets.view(),
      hedges: this.hedges.view(swarm, Date.now()),
      created_at: toIso(swarm.created_at) ?? "",
      finished_at: toIso(swarm.finished_at),
      ...this.lineage.view(),
    };
  }

  /**
   * The status's entity tag once the swarm has ended (null before: a running swarm's wall_s and
   * counts move with every read). A SHA-256 over the status without `billable`, whose meters count
   * every read, this one's too: so it is a weak tag (entity-tag.ts). Whatever else still moves after
   * the end (a late call's usage, a rerun's id under `reruns`) moves the tag. The output, up to 1 MB,
   * is digested once per room instance and stands in the status's text by its digest.
   */
  async statusTag(swarm: SwarmRow, status: SwarmStatusWire): Promise<string | null> {
    if (swarm.finished_at === null) return null;
    const output = status.output === null ? null : await this.outputDigest(status.output);
    return toWeakEntityTag(await sha256(JSON.stringify({ ...status, billable: null, output })));
  }

  private outputDigest(output: NonNullable<SwarmStatusWire["output"]>): Promise<string> {
    const kept = this.finishedOutput;
    if (kept === null || kept.output !== output) return sha256Hex(JSON.stringify(output));
    kept.digest ??= sha256Hex(JSON.stringify(output));
    return kept.digest;
  }

  private billableView(tasks: number): BillableView {
    const m = this.meters.read();
    const ops = {
      queue_messages_sent: m.queue_sent,
      queue_messages_received: m.queue_received,
      do_requests: m.do_requests,
      do_rows_written: m.do_rows_written,
      d1_rows_written: m.d1_rows_written,
    };
    const per = (n: number) => Math.round((n / tasks) * 1_000) / 1_000;
    return {
      ...ops,
      per_task:
        tasks === 0
          ? null
          : {
              queue_messages_sent: per(ops.queue_messages_sent),
              queue_messages_received: per(ops.queue_messages_received),
              do_requests: per(ops.do_requests),
              do_rows_written: per(ops.do_rows_written),
              d1_rows_written: per(ops.d1_rows_written),
            },
    };
  }

  /** The reduced answer of a finished swarm: by code, or what the llm reduction produced. */
  /**
   * A finished swarm's output, made once: it no longer changes, and every status read made it again
   * from each sub-task's output, a cost that grows with the tasks (1,000 tasks: about 1 ms of the
   * 9–10 ms of workerd CPU a status read cost locally, the API's key check included). Made
   * again should the end move.
   */
  private finishedOutput: { finishedAt: number; succeeded: number; output: SwarmStatusWire["output"]; digest?: Promise<string> } | null = null;

  private output(swarm: SwarmRow): SwarmStatusWire["output"] {
    const succeeded = this.totals.counts().succeeded;
    const kept = this.finishedOutput;
    if (kept !== null && kept.finishedAt === swarm.finished_at && kept.succeeded === succeeded) return kept.output;
    const reduce = reduceSpecOf(swarm);
    const output = reduce.kind === "llm" ? llmOutput(swarm) : toWire(reduceOutputs(reduce, this.succeededOutputs()));
    if (swarm.finished_at !== null) this.finishedOutput = { finishedAt: swarm.finished_at, succeeded, output };
    return output;
  }

  /** Succeeded outputs in task order: what the reducers merge. */
  succeededOutputs(): TaskOutput[] {
    return this.sql
      .exec<{ task_id: string; output: string }>("SELECT id AS task_id, output FROM tasks WHERE kind = 'task' AND state = 'succeeded' ORDER BY seq")
      .toArray();
  }
}
