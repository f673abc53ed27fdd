// KeyPool through its RPC surface on the real local Durable Object: admission against RPM, TPM and
// in-flight limits, token settlement, cooldown after a 429, quarantine after a rejected key.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { AcquireResponse, KeyLimits } from "../core/key-pool-contract.ts";

let counter = 0;
function pool() {
  counter += 1;
  return env.KEY_POOL.get(env.KEY_POOL.idFromName(`key-test-${Date.now()}-${counter}`));
}
const limits = (l: Partial<KeyLimits>): KeyLimits => ({ rpm: null, tpm: null, maxInFlight: null, ...l });
const granted = (r: AcquireResponse): string => {
  if (!r.granted) throw new Error(`expected a permit, got ${JSON.stringify(r)}`);
  return r.permitId;
};

describe("KeyPool", () => {
  it("admits up to rpm calls a minute, then says how long to wait", async () => {
    const key = pool();
    for (let i = 0; i < 3; i += 1) granted(await key.acquire({ limits: limits({ rpm: 3 }), tokens: 10, leaseMs: 30_000 }));
    const refused = await key.acquire({ limits: limits({ rpm: 3 }), tokens: 10, leaseMs: 30_000 });
    expect(refused).toMatchObject({ granted: false, reason: "rpm" });
    expect(!refused.granted && refused.retryAfterMs).toBeGreaterThan(55_000);
    expect((await key.status()).requestsLastMinute).toBe(3);
  });

  it("counts reserved tokens against tpm and settles them to what the call used", async () => {
    const key = pool();
    const first = granted(await key.acquire({ limits: limits({ tpm: 1_000 }), tokens: 800, leaseMs: 30_000 }));
    expect(await key.acquire({ limits: limits({ tpm: 1_000 }), tokens: 300, leaseMs: 30_000 })).toMatchObject({ granted: false, reason: "tpm" });
    await key.release({ permitId: first, tokens: 150, outcome: "ok", retryAfterMs: null });
    granted(await key.acquire({ limits: limits({ tpm: 1_000 }), tokens: 300, leaseMs: 30_000 }));
    expect((await key.status()).tokensLastMinute).toBe(450);
    expect(await key.acquire({ limits: limits({ tpm: 1_000 }), tokens: 1_001, leaseMs: 30_000 })).toEqual({
      granted: false,
      retryAfterMs: null,
      reason: "too_large",
    });
  });

  it("limits calls in flight; a release frees the slot, twice is the same as once", async () => {
    const key = pool();
    const a = granted(await key.acquire({ limits: limits({ maxInFlight: 1 }), tokens: 1, leaseMs: 30_000 }));
    expect(await key.acquire({ limits: limits({ maxInFlight: 1 }), tokens: 1, leaseMs: 30_000 })).toMatchObject({ granted: false, reason: "in_flight" });
    await key.release({ permitId: a, tokens: 1, outcome: "ok", retryAfterMs: null });
    await key.release({ permitId: a, tokens: 1, outcome: "rate_limited", retryAfterMs: 60_000 });
    granted(await key.acquire({ limits: limits({ maxInFlight: 1 }), tokens: 1, leaseMs: 30_000 }));
    expect((await key.status()).cooldownUntil).toBeNull(); // the repeated release changed nothing
  });

  it("cools a key down for the upstream's Retry-After after a 429", async () => {
    const key = pool();
    const a = granted(await key.acquire({ limits: limits({}), tokens: 1, leaseMs: 30_000 }));
    await key.release({ permitId: a, tokens: null, outcome: "rate_limited", retryAfterMs: 5_000 });
    const refused = await key.acquire({ limits: limits({}), tokens: 1, leaseMs: 30_000 });
    expect(refused).toMatchObject({ granted: false, reason: "cooldown" });
    expect(!refused.granted && refused.retryAfterMs).toBeGreaterThan(4_000);
  });

  it("quarantines a key the upstream rejected until an operator clears it", async () => {
    const key = pool();
    const a = granted(await key.acquire({ limits: limits({}), tokens: 1, leaseMs: 30_000 }));
    await key.release({ permitId: a, tokens: null, outcome: "key_rejected", retryAfterMs: null });
    expect(await key.acquire({ limits: limits({}), tokens: 1, leaseMs: 30_000 })).toEqual({ granted: false, retryAfterMs: null, reason: "quarantined" });
    expect((await key.status()).quarantined).toMatchObject({ reason: expect.stringContaining("rejected") });
    await key.clearQuarantine();
    granted(await key.acquire({ limits: limits({}), tokens: 1, leaseMs: 30_000 }));
  });

  it("reclaims the permit of a caller that died (lease expired) from the in-flight count", async () => {
    const key = pool();
    granted(await key.acquire({ limits: limits({ maxInFlight: 1 }), tokens: 1, leaseMs: 0 }));
    // The shortest lease is 1 s.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    granted(await key.acquire({ limits: limits({ maxInFlight: 1 }), tokens: 1, leaseMs: 30_000 }));
  });
});
