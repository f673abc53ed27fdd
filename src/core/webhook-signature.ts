// The signature on webhook tool requests: how the agent signs them and how a receiver verifies them.
// No I/O; HMAC-SHA256 through the WebCrypto `crypto.subtle` global (Workers, Node ≥ 20).

import { toHex } from "./sha256.ts";

// The core's tsconfig has no DOM or Workers types (see STYLE.md): the few WebCrypto and Encoding
// members used here are declared for this module only.
declare const crypto: {
  subtle: {
    importKey(format: "raw", keyData: Uint8Array, algorithm: { name: "HMAC"; hash: "SHA-256" }, extractable: false, keyUsages: ["sign"]): Promise<unknown>;
    sign(algorithm: "HMAC", key: unknown, data: Uint8Array): Promise<ArrayBuffer>;
  };
};
declare class TextEncoder {
  encode(input: string): Uint8Array;
}

/** The request header that carries the signature (HTTP header names are case-insensitive). */
export const SIGNATURE_HEADER = "x-edgeswarm-signature";

/**
 * How webhook tool requests are signed (docs/agents-and-tools.md, "Verifying a webhook", documents it):
 *
 *     X-Edgeswarm-Signature: t=<unix seconds>,v1=<signature>
 *
 * - `t` is when the request was signed, in whole seconds since the Unix epoch (UTC).
 * - `signature` is HMAC-SHA256, keyed with the UTF-8 bytes of the tenant's signing key, over the
 *   UTF-8 bytes of `<t>.<raw body>` (the decimal `t`, one `.`, then the request body exactly as
 *   received, before any JSON parsing), written as 64 lowercase hex digits.
 * - The signing key is per tenant: `deriveWebhookKey(WEBHOOK_SECRET, tenant)`, which any key of the
 *   tenant reads from `GET /v1/webhooks/signing-key`. So one tenant's swarm can never make a
 *   request another tenant's webhook accepts, and the deployment's secret is never handed out.
 *
 * To verify a request: read the raw body; compute the signature for the header's `t`; compare it
 * with each `v1` in constant time (accept if any matches: during a secret rotation a header may
 * carry one `v1` per secret); reject a `t` more than 5 minutes from your clock (a replayed request).
 * Ignore entries other than `t` and `v1` (room for future schemes). The request's
 * `X-Edgeswarm-Tool-Call-Id` (with its swarm and task ids) is the same when a crashed task re-runs
 * the call: use it to make the tool idempotent. `verifyWebhook` below is a reference implementation.
 *
 * Returns the header value for `body` signed at `nowSeconds`.
 */
export async function signWebhook(secret: string, body: string, nowSeconds: number): Promise<string> {
  const t = Math.floor(nowSeconds);
  return `t=${t},v1=${await hmacHex(secret, `${t}.${body}`)}`;
}

/** The context string of the key derivation: changing it (v2) rotates every tenant's key. */
const KEY_CONTEXT = "edgeswarm/webhook-signing-key/v1/";

/**
 * A tenant's webhook signing key: HMAC-SHA256(WEBHOOK_SECRET, "edgeswarm/webhook-signing-key/v1/" +
 * tenant), as 64 lowercase hex digits (the key's UTF-8 bytes are what signWebhook keys the HMAC with).
 */
export async function deriveWebhookKey(secret: string, tenant: string): Promise<string> {
  return hmacHex(secret, `${KEY_CONTEXT}${tenant}`);
}

export type WebhookVerification = { ok: true } | { ok: false; reason: string };

/**
 * Checks a signature header made by `signWebhook` (see it for the scheme): rejects a missing or
 * malformed header, a timestamp more than `toleranceS` seconds from `nowSeconds` (either way), and a
 * signature that matches none of the header's `v1` entries. Signatures are compared in constant time.
 */
export async function verifyWebhook(secret: string, body: string, header: string | null, nowSeconds: number, toleranceS = 300): Promise<WebhookVerification> {
  if (header === null || header.trim() === "") return { ok: false, reason: `missing ${SIGNATURE_HEADER} header` };
  const parsed = parseSignatureHeader(header);
  if (!parsed.ok) return { ok: false, reason: `malformed ${SIGNATURE_HEADER} header: ${parsed.reason}` };
  const { t, signatures } = parsed;
  const skew = Math.floor(nowSeconds) - t;
  if (skew > toleranceS) return { ok: false, reason: `stale signature: signed ${skew} s ago (tolerance ${toleranceS} s)` };
  if (-skew > toleranceS) return { ok: false, reason: `signature timestamp is ${-skew} s in the future (tolerance ${toleranceS} s)` };
  const expected = await hmacHex(secret, `${t}.${body}`);
  // Every candidate is compared in full, whichever matches, so timing tells nothing about which.
  let matched = false;
  for (const candidate of signatures) matched = constantTimeEqual(expected, candidate) || matched;
  return matched ? { ok: true } : { ok: false, reason: "signature does not match (wrong secret, or the body was changed)" };
}

type ParsedHeader = { ok: true; t: number; signatures: string[] } | { ok: false; reason: string };

function parseSignatureHeader(header: string): ParsedHeader {
  let t: number | null = null;
  const signatures: string[] = [];
  for (const item of header.split(",")) {
    const eq = item.indexOf("=");
    if (eq <= 0) return { ok: false, reason: `expected key=value, got ${JSON.stringify(item.trim().slice(0, 80))}` };
    const key = item.slice(0, eq).trim();
    const value = item.slice(eq + 1).trim();
    if (key === "t") {
      if (t !== null) return { ok: false, reason: "more than one t" };
      if (!/^\d{1,12}$/.test(value)) return { ok: false, reason: "t must be unix seconds" };
      t = Number(value);
    } else if (key === "v1") {
      if (!/^[0-9a-fA-F]{64}$/.test(value)) return { ok: false, reason: "v1 must be 64 hex digits" };
      signatures.push(value.toLowerCase());
    }
  }
  if (t === null) return { ok: false, reason: "no t" };
  if (signatures.length === 0) return { ok: false, reason: "no v1" };
  return { ok: true, t, signatures };
}

async function hmacHex(secret: string, message: string): Promise<string> {
  const encoder = new TextEncoder();
  const key = await crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, encoder.encode(message)));
  return toHex(mac);
}

/** Equal-length strings compared without an early exit; lengths are public (always 64 here). */
function constantTimeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}
