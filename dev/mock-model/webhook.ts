// The lint webhook (POST /tools/lint): signature verification (HMAC-SHA256 over "<t>.<body>") and
// deterministic findings derived from the body. No I/O.

import { createHmac, timingSafeEqual } from "node:crypto";
import { sha256hex, words } from "./text.ts";

export const SIGNATURE_HEADER = "x-edgeswarm-signature";
/** How far the signed timestamp may be from now, either way. */
export const SIGNATURE_TOLERANCE_S = 300;
const MAX_FINDINGS = 3;

/** `t=<unix s>,v1=<hex hmac-sha256(secret, "<t>.<body>")>`: what a sender puts in x-edgeswarm-signature. */
export function signWebhook(secret: string, body: string, unixSeconds: number): string {
  return `t=${unixSeconds},v1=${createHmac("sha256", secret).update(`${unixSeconds}.${body}`).digest("hex")}`;
}

export type SignatureCheck = { ok: true } | { ok: false; reason: "missing" | "malformed" | "mismatch" | "stale" };

/**
 * Accepts the header when one of its `v1` values equals the HMAC (compared in constant time) and
 * `t` is within SIGNATURE_TOLERANCE_S of `nowS`. The signature is checked first, so "stale" means
 * a correctly signed but old (or future) request.
 */
export function verifyWebhookSignature(secret: string, header: string | undefined, body: string, nowS: number): SignatureCheck {
  if (header === undefined || header.trim() === "") return { ok: false, reason: "missing" };
  let t: string | undefined;
  const v1: string[] = [];
  for (const part of header.split(",")) {
    const eq = part.indexOf("=");
    if (eq <= 0) return { ok: false, reason: "malformed" };
    const k = part.slice(0, eq).trim();
    const v = part.slice(eq + 1).trim();
    if (k === "t") t = v;
    else if (k === "v1") v1.push(v);
  }
  if (t === undefined || !/^\d{1,12}$/.test(t) || v1.length === 0) return { ok: false, reason: "malformed" };
  const expected = createHmac("sha256", secret).update(`${t}.${body}`).digest();
  const match = v1.some((hex) => /^[0-9a-fA-F]{64}$/.test(hex) && timingSafeEqual(expected, Buffer.from(hex, "hex")));
  if (!match) return { ok: false, reason: "mismatch" };
  if (Math.abs(nowS - Number(t)) > SIGNATURE_TOLERANCE_S) return { ok: false, reason: "stale" };
  return { ok: true };
}

export interface Finding {
  rule: string;
  severity: "error" | "warning" | "info";
  line: number;
  message: string;
}

const RULES: ReadonlyArray<{ rule: string; severity: Finding["severity"]; test: (line: string) => boolean; message: string }> = [
  { rule: "no-eval", severity: "error", test: (l) => /\beval\s*\(/.test(l), message: "eval() runs arbitrary code" },
  { rule: "todo", severity: "warning", test: (l) => /\b(TODO|FIXME)\b/.test(l), message: "unresolved TODO/FIXME" },
  { rule: "debug-print", severity: "info", test: (l) => /\bconsole\.log\s*\(|(^|[^.\w])print\s*\(/.test(l), message: "debug print left in" },
  { rule: "line-length", severity: "info", test: (l) => l.length > 100, message: "line longer than 100 characters" },
  { rule: "trailing-whitespace", severity: "info", test: (l) => /[ \t]+$/.test(l), message: "trailing whitespace" },
];

/** Keys whose string values are names, not code, and are not linted. */
const NAME_KEYS: ReadonlySet<string> = new Set(["path", "file", "filename", "url", "language", "name"]);

/** The text to lint: every string value of a JSON body (except names like `path`), else the raw body. */
export function lintText(body: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return body;
  }
  const out: string[] = [];
  const walk = (v: unknown, key: string): void => {
    if (typeof v === "string") {
      if (!NAME_KEYS.has(key)) out.push(v);
    } else if (Array.isArray(v)) for (const x of v) walk(x, key);
    else if (typeof v === "object" && v !== null) for (const [k, x] of Object.entries(v)) walk(x, k);
  };
  walk(parsed, "");
  return out.join("\n");
}

/**
 * 0–3 findings: rule hits in line order (eval, TODO/FIXME, debug prints, lines over 100 chars,
 * trailing whitespace); when nothing hits, 0–3 `mock-style` notes picked by the body's hash.
 */
export function lintFindings(body: string): Finding[] {
  const lines = lintText(body).split("\n");
  const out: Finding[] = [];
  lines.forEach((text, i) => {
    for (const r of RULES) if (out.length < MAX_FINDINGS && r.test(text)) out.push({ rule: r.rule, severity: r.severity, line: i + 1, message: r.message });
  });
  if (out.length > 0) return out;
  const hash = sha256hex(body);
  const n = Number.parseInt(hash.slice(0, 2), 16) % (MAX_FINDINGS + 1);
  for (let k = 0; k < n; k++) {
    const h = sha256hex(`${hash}:${k}`);
    out.push({
      rule: "mock-style",
      severity: "info",
      line: 1 + (Number.parseInt(h.slice(0, 4), 16) % lines.length),
      message: `[mock] style note: ${words(h, 3)}`,
    });
  }
  return out;
}
