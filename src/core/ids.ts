// Ids of swarms, schedules and model calls. No I/O: random bytes come from the caller
// (in a Worker, `(n) => crypto.getRandomValues(new Uint8Array(n))`).

/** RFC 4648 base32 alphabet, lower-cased. */
const ALPHABET = "abcdefghijklmnopqrstuvwxyz234567";

export const SWARM_ID_PREFIX = "sw_";
export const SCHEDULE_ID_PREFIX = "sch_";
const SWARM_ID_CHARS = 20;
const SCHEDULE_ID_CHARS = 16;

const SWARM_ID_PATTERN = /^sw_[a-z2-7]{20}$/;
const SCHEDULE_ID_PATTERN = /^sch_[a-z2-7]{16}$/;

/**
 * `chars` base32 characters (5 bits each) from ⌈chars × 5 / 8⌉ random bytes.
 * A `random` that returns fewer bytes than asked for is a programming error and throws.
 */
function randomBase32(chars: number, random: (bytes: number) => Uint8Array): string {
  const needed = Math.ceil((chars * 5) / 8);
  const bytes = random(needed);
  if (bytes.length < needed) throw new RangeError(`random(${needed}) returned only ${bytes.length} bytes`);
  return toBase32(bytes, chars);
}

/** The first `chars` base32 characters of `bytes` (which must hold at least ⌈chars × 5 / 8⌉). */
export function toBase32(bytes: Uint8Array, chars: number): string {
  let out = "";
  let buffer = 0;
  let bits = 0;
  for (let i = 0; out.length < chars; ) {
    if (bits < 5) {
      buffer = ((buffer << 8) | (bytes[i] ?? 0)) & 0xffff;
      i += 1;
      bits += 8;
    }
    bits -= 5;
    out += ALPHABET[(buffer >> bits) & 31] ?? "";
  }
  return out;
}

/** `sw_` + 20 base32 characters of `bytes` (a swarm id derived from a digest, not drawn at random). */
export function toSwarmId(bytes: Uint8Array): string {
  return SWARM_ID_PREFIX + toBase32(bytes, SWARM_ID_CHARS);
}

/** `sw_` + 20 base32 characters (100 random bits). */
export function newSwarmId(random: (bytes: number) => Uint8Array): string {
  return SWARM_ID_PREFIX + randomBase32(SWARM_ID_CHARS, random);
}

/** `sch_` + 16 base32 characters (80 random bits). */
export function newScheduleId(random: (bytes: number) => Uint8Array): string {
  return SCHEDULE_ID_PREFIX + randomBase32(SCHEDULE_ID_CHARS, random);
}

/**
 * The id of one model call, the idempotency key of its ledger row: `swarm:task:attempt:turn`, and
 * `…:turn:h` for the turn's backup call (limits.hedge), which stays inside its attempt's range.
 */
export function toCallId(swarmId: string, taskId: string, attempt: number, turn: number, hedge = false): string {
  return `${swarmId}:${taskId}:${attempt}:${turn}${hedge ? HEDGE_CALL_SUFFIX : ""}`;
}

const HEDGE_CALL_SUFFIX = ":h";

/** Whether a call id is a backup call's (toCallId with hedge). */
export function isHedgeCallId(callId: string): boolean {
  return callId.endsWith(HEDGE_CALL_SUFFIX);
}

/**
 * The call ids of one attempt (or, without `attempt`, of every attempt of the task), as a half-open
 * range [from, to): they all start with `swarm:task:attempt:` (`swarm:task:`), and ';' is the
 * character after ':'. Task ids hold no ':' (spec-schema.ts), so no other task's ids fall inside. A
 * range of a primary key on call ids finds a task's or an attempt's calls without a scan or an index
 * of their own.
 */
export function callIdRange(swarmId: string, taskId: string, attempt?: number): { from: string; to: string } {
  const stem = attempt === undefined ? `${swarmId}:${taskId}` : `${swarmId}:${taskId}:${attempt}`;
  return { from: `${stem}:`, to: `${stem};` };
}

export function isSwarmId(s: string): boolean {
  return SWARM_ID_PATTERN.test(s);
}

export function isScheduleId(s: string): boolean {
  return SCHEDULE_ID_PATTERN.test(s);
}

const TENANT_ID_PATTERN = /^tn_[a-z0-9]{1,40}$/;
const KEY_ID_PATTERN = /^key_[a-z2-7]{16}$/;

/** The tenant the API_TOKENS secret's tokens belong to (and the only one before tenants existed). */
export const DEFAULT_TENANT_ID = "tn_default";

/** `tn_` + 16 base32 characters (80 random bits). */
export function newTenantId(random: (bytes: number) => Uint8Array): string {
  return `tn_${randomBase32(16, random)}`;
}

/** `key_` + 16 base32 characters (80 random bits). Public: it names a key, it does not open anything. */
export function newKeyId(random: (bytes: number) => Uint8Array): string {
  return `key_${randomBase32(16, random)}`;
}

/** `aud_` + the epoch ms in 12 hex digits + 8 base32 characters, so ids sort by time. */
export function newAuditId(epochMs: number, random: (bytes: number) => Uint8Array): string {
  return `aud_${Math.max(0, Math.floor(epochMs)).toString(16).padStart(12, "0")}${randomBase32(8, random)}`;
}

export function isTenantId(s: string): boolean {
  return TENANT_ID_PATTERN.test(s);
}

export function isKeyId(s: string): boolean {
  return KEY_ID_PATTERN.test(s);
}

const FILE_ID_PATTERN = /^file-[a-z2-7]{24}$/;

/** `file-` + 24 base32 characters (120 random bits): OpenAI's File ids have this prefix. */
export function newFileId(random: (bytes: number) => Uint8Array): string {
  return `file-${randomBase32(24, random)}`;
}

export function isFileId(id: string): boolean {
  return FILE_ID_PATTERN.test(id);
}

const BATCH_ID_PATTERN = /^batch_[a-z2-7]{24}$/;

/** `batch_` + 24 base32 characters (120 random bits), as OpenAI's Batch ids begin. */
export function newBatchId(random: (bytes: number) => Uint8Array): string {
  return `batch_${randomBase32(24, random)}`;
}

export function isBatchId(id: string): boolean {
  return BATCH_ID_PATTERN.test(id);
}
