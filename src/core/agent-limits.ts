// How much one sub-task's agent loop may do: model calls per attempt and the size of a tool
// result. Shared by the loop, the SwarmRoom's budget reservations and the estimate. No I/O.
import type { Limits } from "./spec-schema.ts";

/** A tool's result as the model sees it, at most this long (the rest is cut, and the model told). */
export const MAX_TOOL_RESULT_CHARS = 32_000;

/**
 * Model calls one attempt of a sub-task may make: the agent loop's turns when it has tools, plus
 * one repair turn when its answer must be JSON.
 */
export function callsPerAttempt(spec: {
  tools?: readonly unknown[] | undefined;
  response_format?: { type: string } | null | undefined;
  limits: Pick<Limits, "max_turns">;
}): number {
  const turns = (spec.tools ?? []).length > 0 ? spec.limits.max_turns : 1;
  const repair = spec.response_format !== undefined && spec.response_format !== null && spec.response_format.type !== "text" ? 1 : 0;
  return turns + repair;
}
