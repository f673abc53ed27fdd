import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { hashApiKey, newApiKey, toEnvTokenKeyId, toKeyPrefix } from "./api-key.ts";

const counting = (n: number): Uint8Array => Uint8Array.from({ length: n }, (_, i) => i * 7 + 1);

describe("tenant API keys", () => {
  it.each([
    ["local", /^es_local_[0-9a-f]{48}$/],
    ["live", /^es_live_[0-9a-f]{48}$/],
  ] as const)("a %s key is es_%s_ + 48 hex chars, with its prefix the first 8 of them", (kind, pattern) => {
    const { key, prefix } = newApiKey(kind, counting);
    expect(key).toMatch(pattern);
    expect(prefix).toBe(key.slice(0, `es_${kind}_`.length + 8));
  });

  it("refuses a random source that returns too few bytes", () => {
    expect(() => newApiKey("live", () => new Uint8Array(3))).toThrow(RangeError);
  });

  it.each([
    ["a local key", `es_local_${"ab".repeat(24)}`, "es_local_abababab"],
    ["a live key", `es_live_${"0f".repeat(24)}`, "es_live_0f0f0f0f"],
    ["one hex char short", `es_local_${"a".repeat(47)}`, null],
    ["one hex char long", `es_local_${"a".repeat(49)}`, null],
    ["upper-case hex", `es_local_${"A".repeat(48)}`, null],
    ["another kind", `es_test_${"a".repeat(48)}`, null],
    ["an API_TOKENS-style token", "test-token-a", null],
    ["SQL in the prefix", `es_local_' OR 1=1 --${"a".repeat(30)}`, null],
    ["empty", "", null],
  ])("toKeyPrefix: %s", (_, text, prefix) => {
    expect(toKeyPrefix(text)).toBe(prefix);
  });

  it("hashes the whole key with SHA-256, lowercase hex, as D1 stores it", async () => {
    const key = `es_local_${"12".repeat(24)}`;
    expect(await hashApiKey(key)).toBe(createHash("sha256").update(key).digest("hex"));
  });

  it("names an API_TOKENS token key_env_ + 12 hex of its digest, stable and never the token", async () => {
    const id = toEnvTokenKeyId(await hashApiKey("my-secret-token"));
    expect(id).toBe(`key_env_${createHash("sha256").update("my-secret-token").digest("hex").slice(0, 12)}`);
    expect(id).not.toContain("my-secret-token");
    expect(toEnvTokenKeyId(await hashApiKey("other-token"))).not.toBe(id);
  });
});
