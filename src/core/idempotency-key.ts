// Idempotency-Key on the POSTs that start something (POST /v1/swarms, /rerun, /v1/schedules): the
// header's rules, what a request's fingerprint is made of, the id a keyed swarm gets, and what a
// second request with a known key is answered. No I/O (hashing is the caller's).
import type { Result } from "./result.ts";

/** How long a key is kept (and its first response replayed): 24 h. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1_000;
/**
 * A request holding its key this long without an answer died with its invocation: the next one
 * with the key takes over (safe for swarms, whose id is derived from the key).
 */
export const IDEMPOTENCY_STALE_MS = 60_000;

const MAX_KEY_CHARS = 200;
const PRINTABLE = /^[\x20-\x7e]+$/;

/** 1–200 printable ASCII characters, as sent (no trimming: " a" and "a" are two keys). */
export function parseIdempotencyKey(header: string): Result<string, string> {
  if (header.length === 0) return { ok: false, error: "must not be empty" };
  if (header.length > MAX_KEY_CHARS) return { ok: false, error: `must be at most ${MAX_KEY_CHARS} characters, got ${header.length}` };
  if (!PRINTABLE.test(header)) return { ok: false, error: "must be printable ASCII characters (0x20-0x7E)" };
  return { ok: true, value: header };
}

/** What a request's fingerprint hashes: its method, path, query and body, so "the same request" means all four. */
export function toFingerprintInput(request: { method: string; path: string; search: string; body: string }): string {
  return `${request.method} ${request.path}${request.search}\n${request.body}`;
}

/** What a key's stored record says of a new request that carries it. */
export interface IdempotencyRecord {
  fingerprint: string;
  /** null while the first request is still running. */
  status: number | null;
  createdAt: number;
}

export type IdempotencyDecision =
  | { kind: "replay" }
  /** The key was used for another request (method, path, query or body): 409. */
  | { kind: "mismatch" }
  /** The first request with the key is still running: 409, try again shortly. */
  | { kind: "in_progress" };

export function decideIdempotentReplay(record: IdempotencyRecord, fingerprint: string): IdempotencyDecision {
  if (record.fingerprint !== fingerprint) return { kind: "mismatch" };
  if (record.status === null) return { kind: "in_progress" };
  return { kind: "replay" };
}

/** Responses worth replaying: not a server failure, and not an answer that says "later" (409, 429). */
export function isReplayableStatus(status: number): boolean {
  return status < 500 && status !== 409 && status !== 429;
}

/**
 * What the id of the swarm a keyed POST /v1/swarms starts is derived from (`toSwarmId` of its
 * SHA-256): two requests with the same key — concurrent, or one retried after the first died
 * mid-way — name the same SwarmRoom, whose start is idempotent by id, so at most one swarm runs.
 */
export function toIdempotentSwarmIdInput(tenant: string, key: string): string {
  return `edgeswarm:idempotent-swarm:${tenant}\n${key}`;
}
