// One task's agent loop: model call → tool calls (run in parallel) → tool results → model call …, up
// to max_turns and max_tool_calls, then a final answer, checked against response_format with one
// repair turn. Each turn is checkpointed (through the call journal) after its model call and after
// its tools, and the last turn's answer with its call, so a redelivered task resumes there (or
// makes its outcome from the answer) instead of paying for its model calls again. Engine tasks (the planner's
// and the reducer's calls) run through the same loop: one call, no tools.
import {
  admitToolCalls,
  fromCheckpoint,
  nextTurn,
  startConversation,
  toAssistantToolMessage,
  toCheckpoint,
  toToolError,
  toToolMessage,
  withUniqueCallIds,
  pendingToolCalls,
  type AgentState,
  type FinalAnswer,
} from "../../src/core/agent-conversation.ts";
import { checkOutput, toRepairPrompt } from "../../src/core/structured-output.ts";
import { appendMcpCalls } from "../../src/core/task-transcript.ts";
import type { CallRecord, ClaimedTask, TaskOutcome, TaskReport, TaskRunConfig } from "../../src/core/swarm-contract.ts";
import type { ToolCall } from "../../src/core/tool-calls.ts";
import type { ModelCallResult } from "../../src/model/model-client.ts";
import { callWithPermit, permanentFailure, type PermitContext } from "./call-with-permit.ts";
import { runBatchLine, type BatchLineReader } from "./run-batch-line.ts";
import type { TaskTrace } from "./task-trace.ts";
import type { SwarmTools } from "./tools/swarm-tools.ts";

export interface AgentContext {
  permits: PermitContext;
  /** The swarm's tools; only sub-tasks (kind "task") are offered them. */
  tools: SwarmTools;
  /**
   * A turn's call ended: journal it (it reaches the ledger even if this invocation dies). Called
   * once the turn's call is over, in the same synchronous step as the checkpoint that follows it.
   */
  onCall(record: CallRecord): void;
  /** A turn finished: its checkpoint goes to the SwarmRoom with the journal's next flush. */
  onCheckpoint(state: AgentState): void;
  /** Epoch ms by which no new model call may start (the invocation's time, the task's lease). */
  callsEndBy: number;
  now: () => number;
  /** Reads a batch task's line from its input file (FILES_BUCKET); absent where no batch runs (unit tests). */
  batchLines?: BatchLineReader;
  /** The attempt's spans, when the swarm is traced (task-trace.ts). */
  trace?: TaskTrace;
}

/** Engine tasks: one answer, no tools (a json answer still gets its repair turn). */
const ENGINE_LIMITS = { max_turns: 1, max_tool_calls: 0 } as const;

export async function runAgentTask(config: TaskRunConfig, task: ClaimedTask, ctx: AgentContext): Promise<TaskReport> {
  // A batch's task is its input line, sent as it is: no agent loop.
  const { batchInput } = config;
  if (batchInput !== null && task.kind === "task")
    return runBatchLine({ ...config, batchInput }, task, ctx, (turn, result, hedge) => toCallRecord(task.model, turn, result, hedge));
  const engine = task.override !== null;
  const system = task.override?.system ?? config.system;
  const responseFormat = task.override !== null ? task.override.responseFormat : config.responseFormat;
  const maxOutputTokens = task.override?.maxOutputTokens ?? config.limits.max_output_tokens;
  const limits = engine ? ENGINE_LIMITS : config.limits;
  const tools = engine || ctx.tools.definitions.length === 0 ? null : ctx.tools.definitions;
  const state = (task.checkpoint === null ? null : fromCheckpoint(task.checkpoint)) ?? startConversation(system, task.prompt);
  const calls: CallRecord[] = [];
  // The checkpoint goes with an outcome the next attempt resumes from (a retry, a deferral), once a
  // turn has finished; an ended task needs none, only its tool-call count.
  const report = (outcome: TaskOutcome): TaskReport => {
    const resumable = outcome.kind === "deferred" || (outcome.kind === "failed" && outcome.retryable);
    return {
      taskId: task.taskId,
      attempt: task.attempt,
      outcome,
      calls,
      ...(resumable && state.turns > 0 ? { checkpoint: toCheckpoint(state) } : {}),
      ...(state.toolCalls > 0 ? { toolCalls: state.toolCalls } : {}),
    };
  };

  /** Runs a turn's tool calls (parallel) and appends their results in the order the model asked. */
  const runTools = async (toolCalls: readonly ToolCall[]): Promise<void> => {
    const { run: admitted, refused } = admitToolCalls(toolCalls, state.toolCalls, config.limits.max_tool_calls);
    const trace = ctx.trace;
    const results = await Promise.all(
      admitted.map((call) => {
        const run = ctx.tools.run(call, { swarmId: config.swarmId, taskId: task.taskId });
        if (trace === undefined) return run;
        const started = ctx.now();
        return run.then((result) => {
          trace.tool(call, started, ctx.now(), result);
          return result;
        });
      }),
    );
    for (const [i, call] of admitted.entries()) state.messages.push(toToolMessage(call.id, results[i]?.content ?? toToolError("no result")));
    const mcpCalls = admitted.flatMap((call, i) => {
      const note = results[i]?.mcp;
      return note === undefined
        ? []
        : [
            {
              tool_call_id: call.id,
              attempt: task.attempt,
              turn: state.turns,
              server: note.server,
              tool: note.tool,
              latency_ms: note.latencyMs,
              bytes: note.bytes,
              error: note.error,
            },
          ];
    });
    if (mcpCalls.length > 0) state.mcpCalls = appendMcpCalls(state.mcpCalls ?? [], mcpCalls);
    for (const call of refused) {
      state.messages.push(
        toToolMessage(
          call.id,
          toToolError(`not run: this task may make ${config.limits.max_tool_calls} tool calls (limits.max_tool_calls); give your final answer`),
        ),
      );
    }
    state.toolCalls += admitted.length;
    ctx.onCheckpoint(state);
  };

  /**
   * The task's outcome from its last turn's answer, or null when the answer failed response_format
   * and the repair turn is still to come (asked for by the state, checkpointed). Tool calls the
   * model sent although none were offered are not run; if they were all it sent, it gave no answer.
   */
  const finish = (answer: FinalAnswer): TaskReport | null => {
    state.answer = undefined;
    if (answer.toolCallsOnly) {
      return report(
        permanentFailure(
          "turn_limit",
          `the model asked for tools on its last allowed turn (${state.turns}, limits.max_turns ${limits.max_turns}) instead of answering`,
        ),
      );
    }
    const check = checkOutput(answer.text, responseFormat);
    if (check.ok) return report({ kind: "succeeded", output: check.text, finishReason: answer.finishReason });
    if (state.repairs === 0) {
      state.messages.push({ role: "assistant", content: answer.text });
      state.messages.push({ role: "user", content: toRepairPrompt(check.errors) });
      state.repairs = 1;
      ctx.onCheckpoint(state);
      return null;
    }
    return report({
      ...permanentFailure("invalid_output", `the answer does not match response_format, also after a repair turn: ${check.errors.slice(0, 5).join("; ")}`),
      output: answer.text,
    });
  };

  // Resumed between a turn's model call and its tools: run the tools, not the model call again.
  const pending = pendingToolCalls(state.messages);
  if (pending.length > 0) await runTools(pending);
  // Resumed after its last turn's answer (the attempt that had it died before its outcome reached
  // the room): the outcome is made from that answer, not from a second call.
  if (state.answer !== undefined) {
    const done = finish(state.answer);
    if (done !== null) return done;
  }

  for (;;) {
    const next = nextTurn(state, limits, tools !== null);
    if (next === null) {
      return report(permanentFailure("turn_limit", `the agent used its ${limits.max_turns} turn(s) (limits.max_turns) without giving a final answer`));
    }
    // The claim's lease covers the first call; a later turn must also fit the invocation's time.
    if (calls.length > 0 && ctx.now() + task.timeoutS * 1_000 > ctx.callsEndBy) {
      // No room for another call in this invocation: hand the task back; it resumes at this turn.
      return report({ kind: "deferred", retryAfterMs: 0, reason: `no time left in this consumer invocation for turn ${next.turn}` });
    }
    // The turn's calls go to the journal in the same synchronous step as the checkpoint that
    // follows them, never before it: between a call's end and its turn's checkpoint the lane still
    // hands back its key's permit (a KeyPool RPC), and a journal flush that fell in between sent the
    // call without the checkpoint. A machine that died right after that flush left the call paid
    // and the turn not done, and the retry paid for it again (call-journal.test.ts plays it with a
    // KeyPool that answers a release a flush interval later). Until then each call is noted in the
    // room (its estimate is billed if the lane dies), and if the turn throws they are journaled all
    // the same.
    const ended: CallRecord[] = [];
    const journal = (): void => {
      for (const record of ended.splice(0)) ctx.onCall(record);
    };
    let run: Awaited<ReturnType<typeof callWithPermit>>;
    try {
      run = await callWithPermit(
        config,
        task,
        { turn: next.turn, messages: state.messages, tools: next.offerTools ? tools : null, maxOutputTokens, responseFormat },
        ctx.permits,
        (result, route, hedge) => {
          const record = toCallRecord(task.model, next.turn, result, hedge);
          calls.push(record);
          ended.push(record);
          ctx.trace?.chat(record, result, route, { messages: state.messages, maxOutputTokens });
        },
      );
    } catch (error) {
      journal();
      throw error;
    }
    if (run.kind === "not_called") {
      journal();
      return report(run.outcome);
    }
    const result = run.result;
    if (!result.ok) {
      journal();
      return report({ kind: "failed", ...result.error });
    }
    state.turns = next.turn;

    if (result.toolCalls.length > 0 && next.offerTools) {
      const toolCalls = withUniqueCallIds(result.toolCalls, state.messages, next.turn);
      state.messages.push(toAssistantToolMessage(result.text, toolCalls));
      // Checkpointed before the tools run: the model call, the expensive part, is never paid twice.
      ctx.onCheckpoint(state);
      journal();
      await runTools(toolCalls);
      continue;
    }

    // A final answer, checkpointed with its call: the task's outcome reaches the room with the
    // lane's next pull (its outcomes wait for company), while the call may go with the journal's
    // next flush before it. A machine that died in between left the call paid and the task running,
    // and its retry called the model again for the answer (`npm run faults -- --case kill-tools`:
    // 0–18 answer turns of 200 tasks paid twice). A one-turn task's answer is dropped from the
    // journal when the pull carries its outcome first (CallJournal.carry): sent only if the flush is.
    state.answer = { text: result.text, finishReason: result.finishReason, toolCallsOnly: result.toolCalls.length > 0 && result.text.trim() === "" };
    ctx.onCheckpoint(state);
    journal();
    const done = finish(state.answer);
    if (done !== null) return done;
  }
}

/** The ledger's record of one call of the loop. */
function toCallRecord(model: string, turn: number, result: ModelCallResult, hedge: CallRecord["hedge"]): CallRecord {
  return {
    turn,
    // The gateway name of the model called (a fallback while the spec's model's circuit is
    // open), not the upstream's id for it: prices, circuits and reports are keyed by it.
    model,
    usage: result.usage,
    latencyMs: result.latencyMs,
    ttfbMs: result.ttfbMs,
    status: result.ok ? "ok" : "error",
    errorClass: result.ok ? null : result.error.class,
    startedAt: result.startedAt,
    ...(hedge === undefined ? {} : { hedge }),
  };
}
