// The body of POST /v1/swarms/:id/rerun and which tasks each selection takes. No I/O.
import { z } from "zod";
import { MAX_TASKS, TaskIdSchema } from "./spec-schema.ts";
import type { TaskState } from "./swarm-contract.ts";

export const RerunRequestSchema = z.strictObject({
  tasks: z
    .union([z.enum(["failed", "not_succeeded"]), z.array(TaskIdSchema).min(1).max(MAX_TASKS)])
    .describe('"failed", "not_succeeded" (failed, cancelled or skipped), or a list of task ids'),
});
export type RerunRequest = z.infer<typeof RerunRequestSchema>;

export type RerunSelection = RerunRequest["tasks"];

/** Which task states a rerun selection takes (a list of ids takes those tasks whatever their state). */
export function selectsForRerun(selection: "failed" | "not_succeeded", state: TaskState): boolean {
  if (selection === "failed") return state === "failed";
  return state !== "succeeded";
}
