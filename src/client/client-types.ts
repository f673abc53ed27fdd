// The shapes the API answers with, as the client returns them (docs/api.md).
import type { LiveEvent } from "../core/live-events.ts";
import type { z } from "zod";
import type { SwarmSpecSchema } from "../core/spec-schema.ts";
import type { ResultsPage, SwarmState, SwarmStatus, TaskResult } from "../core/swarm-contract.ts";
import type { TaskTranscript } from "../core/task-transcript.ts";

export type { LiveEvent, ResultsPage, SwarmState, SwarmStatus, TaskResult, TaskTranscript };
/** A spec as a user writes it (defaults not yet applied). */
export type SwarmSpecInput = z.input<typeof SwarmSpecSchema>;
/** A spec as read from a file or a form, unchecked: the API validates it (400 invalid_spec names each field). */
export type SpecBody = SwarmSpecInput | Record<string, unknown>;

export interface CreatedSwarm {
  id: string;
  state: SwarmState;
  parent_id?: string;
  urls: Record<string, string>;
}

export interface SwarmListItem {
  id: string;
  name: string;
  model: string;
  state: SwarmState;
  tasks: number;
  created_at: string;
  finished_at?: string | null;
  cost_usd?: number;
  /** Present when the swarm runs a batch (POST /v1/batches). */
  batch_id?: string;
  [key: string]: unknown;
}

export interface SwarmList {
  swarms: SwarmListItem[];
  next_cursor: string | null;
}

export type UsageGroupBy = "model" | "day" | "swarm" | "token";
export interface UsageQuery {
  from?: string;
  to?: string;
  group_by?: UsageGroupBy;
}
export type UsageReport = Record<string, unknown> & { rows?: Record<string, unknown>[] };

export interface TenantLimits {
  rpm?: number;
  max_concurrent_swarms?: number;
  max_tasks_per_swarm?: number;
  monthly_usd?: number;
  models?: string[];
}
export interface Tenant {
  id: string;
  name: string;
  limits: TenantLimits;
  created_at: string;
  [key: string]: unknown;
}
export type KeyScope = "admin" | "run" | "read";
export interface ApiKey {
  id: string;
  prefix: string;
  tenant_id: string;
  name: string;
  scopes: KeyScope[];
  expires_at: string | null;
  created_at: string;
  [key: string]: unknown;
}
/** A key as created or rotated: the only time the secret is shown. */
export interface ApiKeyWithSecret extends ApiKey {
  key: string;
}
export type Me = Record<string, unknown>;
export type Schedule = Record<string, unknown> & { id: string };

export const TERMINAL_STATES: ReadonlySet<SwarmState> = new Set<SwarmState>(["completed", "completed_with_failures", "failed", "cancelled"]);
export type { TaskResult as Result };

/** OpenAI's File object (POST /v1/files). */
export interface FileObject {
  id: string;
  object: "file";
  bytes: number;
  created_at: number;
  filename: string;
  purpose: string;
  status: string;
}

/** OpenAI's Batch object (POST /v1/batches), with `metadata["edgeswarm.swarm_id"]` naming its swarm. */
export type Batch = Record<string, unknown> & {
  id: string;
  status: string;
  input_file_id: string;
  request_counts: { total: number; completed: number; failed: number };
  output_file_id: string | null;
  error_file_id: string | null;
  metadata: Record<string, string>;
};

/** A page of an OpenAI-style list (`after` = the last id of the page before). */
export interface ListPage<T> {
  object: "list";
  data: T[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}
