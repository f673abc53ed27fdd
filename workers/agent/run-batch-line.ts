// One task of a batch's swarm: read its line from the input file by byte range, send the line's
// body to the upstream as it is (only the model routed), and record the answer as the output line
// OpenAI's batch output holds. One call, no tools run, no repair turn: the line is the request.
import { BatchLineSchema, parseLineRef, toChatCompletion, toOutputLine, toPassthroughBody } from "../../src/core/batch-line.ts";
import type { CallRecord, ClaimedTask, TaskOutcome, TaskReport, TaskRunConfig } from "../../src/core/swarm-contract.ts";
import type { ModelCallResult } from "../../src/model/model-client.ts";
import { callWithPermit, permanentFailure } from "./call-with-permit.ts";
import type { AgentContext } from "./run-agent-task.ts";

/** Reads a byte range of an R2 object (src/files/file-objects.ts); null when the object is gone. */
export interface BatchLineReader {
  read(key: string, range: { offset: number; length: number }): Promise<Uint8Array | null>;
}

export async function runBatchLine(
  config: TaskRunConfig & { batchInput: string },
  task: ClaimedTask,
  ctx: AgentContext,
  toRecord: (turn: number, result: ModelCallResult, hedge: CallRecord["hedge"]) => CallRecord,
): Promise<TaskReport> {
  const calls: CallRecord[] = [];
  const report = (outcome: TaskOutcome): TaskReport => ({ taskId: task.taskId, attempt: task.attempt, outcome, calls });
  const range = parseLineRef(task.prompt);
  if (range === null) return report(permanentFailure("internal", "the batch task holds no line reference"));
  if (ctx.batchLines === undefined) return report(permanentFailure("internal", "this agent has no FILES_BUCKET binding to read batch lines from"));
  const bytes = await ctx.batchLines.read(config.batchInput, range);
  if (bytes === null) return report(permanentFailure("not_found", "the batch's input file was deleted"));
  // Checked when the batch was created; parsed again, as every payload that crosses a boundary is.
  const parsed = BatchLineSchema.safeParse(parseJson(new TextDecoder().decode(bytes)));
  if (!parsed.success) return report(permanentFailure("bad_request", `the batch line no longer parses: ${parsed.error.issues[0]?.message ?? ""}`));
  const line = parsed.data;
  const maxOutputTokens = line.body.max_completion_tokens ?? line.body.max_tokens ?? config.limits.max_output_tokens;
  const run = await callWithPermit(
    config,
    task,
    {
      turn: 1,
      messages: [],
      tools: null,
      maxOutputTokens,
      responseFormat: null,
      passthrough: { body: toPassthroughBody(line.body), promptTokens: Math.ceil(bytes.byteLength / 4) },
    },
    ctx.permits,
    (result, route, hedge) => {
      const record = toRecord(1, result, hedge);
      calls.push(record);
      ctx.onCall(record);
      ctx.trace?.chat(record, result, route, {
        messages: [],
        maxOutputTokens: line.body.max_completion_tokens ?? line.body.max_tokens ?? config.limits.max_output_tokens,
      });
    },
  );
  if (run.kind === "not_called") return report(run.outcome);
  const result = run.result;
  if (!result.ok) return report({ kind: "failed", ...result.error });
  const requestId = `${config.swarmId}:${task.taskId}:${task.attempt}`;
  const body = toChatCompletion({
    id: `chatcmpl-${config.swarmId}-${task.taskId}-${task.attempt}`,
    created: Math.floor(result.startedAt / 1_000),
    model: task.model,
    text: result.text,
    finishReason: result.finishReason,
    toolCalls: result.toolCalls,
    usage: result.usage,
  });
  // The output line itself (without its newline): the output file is these lines in line order.
  const output = toOutputLine({ id: `batch_req_${task.taskId}`, customId: line.custom_id, requestId, body }).trimEnd();
  return report({ kind: "succeeded", output, finishReason: result.finishReason });
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
