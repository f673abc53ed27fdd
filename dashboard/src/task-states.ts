// How the grid and the lists show a task's state: the grid's seven classes, their colours and labels.
import type { SwarmState, TaskState } from "../../src/core/swarm-contract.ts";

export const GRID_CLASSES = ["queued", "running", "retrying", "succeeded", "failed", "cancelled", "skipped"] as const;
export type GridClass = (typeof GRID_CLASSES)[number];

export function toGridClass(state: TaskState): GridClass {
  switch (state) {
    case "pending":
    case "dispatched":
      return "queued";
    case "running":
      return "running";
    case "retry_wait":
      return "retrying";
    case "succeeded":
      return "succeeded";
    case "failed":
      return "failed";
    case "cancelled":
      return "cancelled";
    case "skipped_budget":
    case "skipped":
      return "skipped";
  }
}

export const colorOf = (cls: GridClass | "focus"): string => getComputedStyle(document.documentElement).getPropertyValue(`--${cls}`).trim() || "#888";

export function swarmStateClass(state: SwarmState): GridClass {
  if (state === "completed") return "succeeded";
  if (state === "completed_with_failures" || state === "failed") return "failed";
  if (state === "cancelled") return "cancelled";
  return "running";
}

export const TERMINAL: ReadonlySet<SwarmState> = new Set<SwarmState>(["completed", "completed_with_failures", "failed", "cancelled"]);
