// What the mock answers: deterministic content / tool call for a validated request, with usage.

import type { Answer, ChatRequest } from "./openai.ts";
import { valueForSchema } from "./schema.ts";
import { clipToTokens, contentText, countPromptTokens, countTokens, mockReply, sha256hex } from "./text.ts";

/**
 * Same request → same answer. Text quotes a hash of the last user message; JSON modes produce
 * `{"mock":true,...}` or a value generated from the schema; a forced tool_choice yields one tool
 * call whose arguments fit the tool's parameters schema. Output is cut at max_tokens
 * (finish_reason "length"; cut JSON is then invalid, as with the real API).
 */
export function buildAnswer(req: ChatRequest, targetTokens?: number): Answer {
  const prompt = countPromptTokens(req.messages, req.raw_tools);
  let lastUser = "";
  for (let i = req.messages.length - 1; i >= 0; i--) {
    const m = req.messages[i];
    if (m !== undefined && m.role === "user") {
      lastUser = contentText(m.content);
      break;
    }
  }
  const userHash = sha256hex(lastUser).slice(0, 8);
  const requestHash = sha256hex(
    `${req.model}\n${JSON.stringify(req.messages)}\n${JSON.stringify(req.response_format)}\n${req.forced_tool?.name ?? ""}`,
  );

  if (req.forced_tool !== undefined) {
    const tool = req.forced_tool;
    const args = clipToTokens(JSON.stringify(valueForSchema(tool.parameters, userHash)), req.max_tokens);
    const completion = countTokens(args.text);
    return {
      content: null,
      tool_calls: [{ id: `call_mock_${requestHash.slice(0, 16)}`, type: "function", function: { name: tool.name, arguments: args.text } }],
      finish_reason: args.clipped ? "length" : "tool_calls",
      usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
    };
  }

  let full: string;
  switch (req.response_format.type) {
    case "json_object":
      full = JSON.stringify({ mock: true, summary: mockReply(requestHash, userHash), prompt_hash: userHash });
      break;
    case "json_schema":
      full = JSON.stringify(valueForSchema(req.response_format.schema, userHash));
      break;
    default:
      full = mockReply(requestHash, userHash, targetTokens);
  }
  const out = clipToTokens(full, req.max_tokens);
  const completion = countTokens(out.text);
  return {
    content: out.text,
    tool_calls: undefined,
    finish_reason: out.clipped ? "length" : "stop",
    usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
  };
}
