// Tenant API keys: their format (`es_<live|local>_` + 48 hex chars), the public lookup prefix, and
// the SHA-256 digest that is all D1 keeps of them. No I/O; SHA-256 through the WebCrypto global.
// The raw key exists only in the create/rotate answer and in the caller's Authorization header.

import { sha256Hex, toHex } from "./sha256.ts";

export const API_KEY_KINDS = ["live", "local"] as const;
/** `live` in production, `local` under `wrangler dev` (the API_KEY_KIND setting), so a leaked key says where it opens. */
export type ApiKeyKind = (typeof API_KEY_KINDS)[number];

const SECRET_BYTES = 24;
const PREFIX_HEX = 8;
const KEY_PATTERN = /^es_(live|local)_[0-9a-f]{48}$/;

export interface NewApiKey {
  /** The whole key: shown once, never stored. */
  key: string;
  /** `es_<kind>_` + the first 8 hex chars: stored and shown, so a key can be recognised and found. */
  prefix: string;
}

/** A fresh key from 192 random bits. A `random` that returns fewer bytes than asked for throws. */
export function newApiKey(kind: ApiKeyKind, random: (bytes: number) => Uint8Array): NewApiKey {
  const bytes = random(SECRET_BYTES);
  if (bytes.length < SECRET_BYTES) throw new RangeError(`random(${SECRET_BYTES}) returned only ${bytes.length} bytes`);
  const key = `es_${kind}_${toHex(bytes.subarray(0, SECRET_BYTES))}`;
  return { key, prefix: toKeyPrefix(key) ?? "" };
}

/** The lookup prefix of a presented key, or null when the text is no key of this format (then no D1 read is done). */
export function toKeyPrefix(presented: string): string | null {
  const match = KEY_PATTERN.exec(presented);
  if (match === null) return null;
  return presented.slice(0, `es_${match[1]}_`.length + PREFIX_HEX);
}

/** Lowercase hex SHA-256 of the whole key: what D1 stores and compares. */
export async function hashApiKey(key: string): Promise<string> {
  return sha256Hex(key);
}

/**
 * The key id under which a token of the API_TOKENS secret appears in the audit trail and `/v1/me`,
 * from the token's digest (`hashApiKey`, which the key check has made already): `key_env_` + its
 * first 12 hex chars (48 bits of a digest of a high-entropy secret reveal nothing of it).
 */
export function toEnvTokenKeyId(tokenDigest: string): string {
  return `key_env_${tokenDigest.slice(0, 12)}`;
}
