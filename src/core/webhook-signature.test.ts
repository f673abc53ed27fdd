import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { deriveWebhookKey, SIGNATURE_HEADER, signWebhook, verifyWebhook } from "./webhook-signature.ts";

const SECRET = "whsec_test_4f1b2c";
const BODY = '{"city":"Zürich","days":3}';
const T = 1_767_225_600; // 2026-01-01T00:00:00Z

/** The documented scheme, computed independently with node:crypto. */
const reference = (secret: string, body: string, t: number): string => createHmac("sha256", secret).update(`${t}.${body}`, "utf8").digest("hex");

describe("signWebhook", () => {
  it("writes t=<unix seconds>,v1=<lowercase hex HMAC-SHA256(secret, `<t>.<body>`)>", async () => {
    expect(await signWebhook(SECRET, BODY, T)).toBe(`t=${T},v1=${reference(SECRET, BODY, T)}`);
  });

  it("matches fixed vectors", async () => {
    // Pinned from `printf '<t>.<body>' | openssl dgst -sha256 -hmac <secret>`, so the scheme cannot
    // change without this test noticing (the body is UTF-8: "ü" is two bytes).
    expect(await signWebhook("key", "{}", T)).toBe("t=1767225600,v1=df344de429b8ee672e1863e0008fdbd0080000536fbccdf0e4f89846acbbe872");
    expect(await signWebhook(SECRET, BODY, T)).toBe("t=1767225600,v1=4e40bfaf8a2c604c35a3fa23701228a45a7f94305f3ef5b427238e4a00e0ce46");
  });

  it("signs whole seconds", async () => {
    expect(await signWebhook(SECRET, BODY, T + 0.9)).toBe(`t=${T},v1=${reference(SECRET, BODY, T)}`);
  });

  it("names its header in lower case", () => {
    expect(SIGNATURE_HEADER).toBe("x-edgeswarm-signature");
  });
});

describe("verifyWebhook", () => {
  const good = `t=${T},v1=${reference(SECRET, BODY, T)}`;
  const other = reference("old-secret", BODY, T);

  it.each([
    ["its own signature", good, T],
    ["a signature 5 minutes old", good, T + 300],
    ["a timestamp up to 5 minutes ahead (clock skew)", good, T - 300],
    ["several v1 entries, one matching (secret rotation)", `t=${T},v1=${other},v1=${reference(SECRET, BODY, T)}`, T],
    ["the matching v1 first", `t=${T},v1=${reference(SECRET, BODY, T)},v1=${other}`, T],
    ["spaces around entries and unknown entries", ` t=${T} , v0=legacy, v1=${reference(SECRET, BODY, T)} `, T],
    ["upper-case hex", `t=${T},v1=${reference(SECRET, BODY, T).toUpperCase()}`, T],
  ])("accepts %s", async (_, header, now) => {
    expect(await verifyWebhook(SECRET, BODY, header, now)).toEqual({ ok: true });
  });

  it.each([
    ["a missing header", null, BODY, SECRET, T, "missing x-edgeswarm-signature header"],
    ["an empty header", "", BODY, SECRET, T, "missing x-edgeswarm-signature header"],
    ["a header without t", `v1=${reference(SECRET, BODY, T)}`, BODY, SECRET, T, "malformed x-edgeswarm-signature header: no t"],
    ["a header without v1", `t=${T}`, BODY, SECRET, T, "malformed x-edgeswarm-signature header: no v1"],
    ["a non-numeric t", `t=soon,v1=${reference(SECRET, BODY, T)}`, BODY, SECRET, T, "t must be unix seconds"],
    ["two t entries", `t=${T},t=${T},v1=${reference(SECRET, BODY, T)}`, BODY, SECRET, T, "more than one t"],
    ["a short v1", `t=${T},v1=abc`, BODY, SECRET, T, "v1 must be 64 hex digits"],
    ["an entry without =", `t=${T},garbage`, BODY, SECRET, T, "expected key=value"],
    ["a tampered body", good, BODY.replace("3", "30"), SECRET, T, "signature does not match"],
    ["the wrong secret", good, BODY, "another-secret", T, "signature does not match"],
    ["a signature older than the tolerance", good, BODY, SECRET, T + 301, "stale signature: signed 301 s ago (tolerance 300 s)"],
    ["a timestamp too far in the future", good, BODY, SECRET, T - 301, "signature timestamp is 301 s in the future"],
    ["a re-dated signature (t changed, v1 kept)", `t=${T + 60},v1=${reference(SECRET, BODY, T)}`, BODY, SECRET, T + 60, "signature does not match"],
  ])("rejects %s", async (_, header, body, secret, now, reason) => {
    const result = await verifyWebhook(secret, body, header, now);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.reason).toContain(reason);
  });

  it("takes a custom tolerance", async () => {
    expect((await verifyWebhook(SECRET, BODY, good, T + 61, 60)).ok).toBe(false);
    expect((await verifyWebhook(SECRET, BODY, good, T + 60, 60)).ok).toBe(true);
  });

  it("round-trips with signWebhook", async () => {
    const header = await signWebhook(SECRET, BODY, T);
    expect(await verifyWebhook(SECRET, BODY, header, T + 10)).toEqual({ ok: true });
  });
});

describe("deriveWebhookKey", () => {
  it("is HMAC-SHA256(secret, 'edgeswarm/webhook-signing-key/v1/' + tenant) in hex, computed independently", async () => {
    const key = await deriveWebhookKey(SECRET, "tk_0123456789abcdef");
    expect(key).toBe(createHmac("sha256", SECRET).update("edgeswarm/webhook-signing-key/v1/tk_0123456789abcdef", "utf8").digest("hex"));
  });

  it("gives each tenant its own key: one tenant's signature does not verify with another's key", async () => {
    const a = await deriveWebhookKey(SECRET, "tk_aaaaaaaaaaaaaaaa");
    const b = await deriveWebhookKey(SECRET, "tk_bbbbbbbbbbbbbbbb");
    expect(a).not.toBe(b);
    const header = await signWebhook(a, BODY, T);
    expect(await verifyWebhook(a, BODY, header, T)).toEqual({ ok: true });
    expect((await verifyWebhook(b, BODY, header, T)).ok).toBe(false);
  });
});
