// What the mock answers: deterministic content / tool calls for a validated request, with usage.

import { directive, readConversation } from "./conversation.ts";
import type { Role } from "./conversation.ts";
import type { Answer, ChatRequest } from "./openai.ts";
import { plannerAnswer } from "./planner.ts";
import { reducerAnswer } from "./reducer.ts";
import { invalidJsonForSchema, valueForSchema } from "./schema.ts";
import { clipToTokens, countPromptTokens, countTokens, mockReply, sha256hex } from "./text.ts";
import { answerUsingTools, planToolCalls } from "./tool-calls.ts";
import { toolCallId } from "./tool-dialect.ts";
import type { PlannedCall, ToolCall, ToolDialect } from "./tool-dialect.ts";

export interface AnswerOptions {
  /** x-mock-output-tokens: a plain text answer of exactly this many tokens. */
  targetTokens?: number | undefined;
  dialect: ToolDialect;
  /** Scenario `invalid_json` has answers left: a json_schema answer breaks its schema. */
  invalidJson?: boolean;
  /** Scenario `invalid_plans` has answers left: a planner answer is an invalid plan. */
  invalidPlan?: boolean;
  /** The request's prompt tokens, when the caller already counted them. */
  promptTokens?: number;
}

/** What kind of answer it is and what it used up, for the server's counters. */
export interface AnswerFacts {
  kind: "tool_calls" | "plan" | "reduce" | "json" | "text";
  role: Role;
  /** The last user message is a repair request ([edgeswarm:repair]). */
  repair: boolean;
  /** The scenario budget this answer spends if it is sent. */
  spends: "invalid_json" | "invalid_plans" | undefined;
}

/**
 * Same request → same answer. In order:
 * 1. a forced tool_choice → one call of that tool, arguments from its parameters schema;
 * 2. tools offered (tool_choice not "none") and fewer tool turns done than `[mock:tool_turns=N]`
 *    (default 1) → K calls (`[mock:parallel=K]`, 1 with parallel_tool_calls: false), see tool-calls.ts;
 * 3. planner system prompt → a plan; reducer system prompt (text mode) → a short digest;
 * 4. json_object / json_schema (broken while `invalid_json` lasts) values;
 * 5. text: after tool results `[mock] answer using …`, else `[mock] reply to …`.
 * Output is cut at max_tokens (finish_reason "length"; cut JSON is then invalid, as with the real API).
 */
export function buildAnswer(req: ChatRequest, opts: AnswerOptions): Answer & AnswerFacts {
  const prompt = opts.promptTokens ?? countPromptTokens(req.messages, req.raw_tools);
  const conv = readConversation(req.messages);
  const userHash = sha256hex(conv.lastUser).slice(0, 8);
  const requestHash = sha256hex(`${req.model}\n${JSON.stringify(req.messages)}\n${JSON.stringify(req.response_format)}\n${req.forced_tool?.name ?? ""}`);
  const facts = { role: conv.role, repair: conv.repair, dialect: opts.dialect };

  let planned: PlannedCall[] | undefined;
  if (req.forced_tool !== undefined) {
    planned = [{ name: req.forced_tool.name, arguments: JSON.stringify(valueForSchema(req.forced_tool.parameters, userHash)) }];
  } else if (req.tools.length > 0 && !req.tools_disabled && conv.toolTurns < (directive(conv.all, "tool_turns") ?? 1)) {
    planned = planToolCalls(req.tools, conv, req.parallel_tool_calls ? (directive(conv.all, "parallel") ?? 1) : 1);
  }
  if (planned !== undefined && planned.length > 0) {
    // max_tokens cuts the arguments as one text: later calls may be cut short or dropped.
    let budget = req.max_tokens === undefined ? Infinity : req.max_tokens * 4;
    let clipped = false;
    const calls: ToolCall[] = [];
    for (const [i, p] of planned.entries()) {
      if (budget <= 0) {
        clipped = true;
        break;
      }
      const args = p.arguments.length > budget ? p.arguments.slice(0, budget) : p.arguments;
      clipped ||= args.length < p.arguments.length;
      budget -= args.length;
      const id = toolCallId(opts.dialect, p.name, conv.earlierCalls.length + i, sha256hex(`${requestHash}:${i}`).slice(0, 16));
      calls.push({ id, type: "function", function: { name: p.name, arguments: args } });
    }
    const completion = countTokens(calls.map((c) => c.function.arguments).join(""));
    return {
      ...facts,
      kind: "tool_calls",
      spends: undefined,
      content: null,
      tool_calls: calls,
      finish_reason: clipped ? "length" : "tool_calls",
      usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
    };
  }

  let full: string;
  let kind: AnswerFacts["kind"] = "json";
  let spends: AnswerFacts["spends"];
  if (conv.role === "planner") {
    full = plannerAnswer(conv, opts.invalidPlan === true);
    kind = "plan";
    if (opts.invalidPlan === true) spends = "invalid_plans";
  } else if (conv.role === "reducer" && req.response_format.type === "text") {
    full = reducerAnswer(conv.lastUser);
    kind = "reduce";
  } else {
    switch (req.response_format.type) {
      case "json_object":
        full = JSON.stringify({ mock: true, summary: mockReply(requestHash, userHash), prompt_hash: userHash });
        break;
      case "json_schema":
        if (opts.invalidJson === true) {
          full = invalidJsonForSchema(req.response_format.schema, userHash);
          spends = "invalid_json";
        } else full = JSON.stringify(valueForSchema(req.response_format.schema, userHash));
        break;
      default:
        kind = "text";
        full = conv.lastToolResult !== undefined ? answerUsingTools(conv) : mockReply(requestHash, userHash, opts.targetTokens);
    }
  }
  const out = clipToTokens(full, req.max_tokens);
  const completion = countTokens(out.text);
  return {
    ...facts,
    kind,
    spends,
    content: out.text,
    tool_calls: undefined,
    finish_reason: out.clipped ? "length" : "stop",
    usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
  };
}
