import { describe, expect, it } from "vitest";
import { decideIdempotentReplay, isReplayableStatus, parseIdempotencyKey, toFingerprintInput, toIdempotentSwarmIdInput } from "./idempotency-key.ts";
import { isSwarmId, toSwarmId } from "./ids.ts";

describe("parseIdempotencyKey", () => {
  it.each([
    ["a uuid", "5f0c9a7e-3b1d-4c2a-9e8f-0123456789ab", true],
    ["one character", "k", true],
    ["200 characters", "k".repeat(200), true],
    ["spaces and punctuation", " retry #2: swarm/nightly ", true],
    ["empty", "", false],
    ["201 characters", "k".repeat(201), false],
    ["a tab", "a\tb", false],
    ["non-ASCII", "clé", false],
  ])("%s: %s", (_label, header, ok) => {
    expect(parseIdempotencyKey(header).ok).toBe(ok);
  });
});

describe("decideIdempotentReplay", () => {
  it.each([
    ["the same request, answered", { fingerprint: "f", status: 202, createdAt: 0 }, "f", "replay"],
    ["the same request, still running", { fingerprint: "f", status: null, createdAt: 0 }, "f", "in_progress"],
    ["another request, answered", { fingerprint: "f", status: 202, createdAt: 0 }, "g", "mismatch"],
    ["another request, still running", { fingerprint: "f", status: null, createdAt: 0 }, "g", "mismatch"],
  ] as const)("%s: %s", (_label, record, fingerprint, kind) => {
    expect(decideIdempotentReplay(record, fingerprint).kind).toBe(kind);
  });
});

describe("isReplayableStatus", () => {
  it.each([
    [201, true],
    [202, true],
    [400, true],
    [402, true],
    [409, false],
    [429, false],
    [500, false],
    [503, false],
  ])("%i: %s", (status, replayable) => {
    expect(isReplayableStatus(status)).toBe(replayable);
  });
});

describe("fingerprints and keyed swarm ids", () => {
  it("a fingerprint covers method, path, query and body", () => {
    const base = { method: "POST", path: "/v1/swarms", search: "", body: "{}" };
    const inputs = [base, { ...base, search: "?dry_run=1" }, { ...base, path: "/v1/schedules" }, { ...base, body: '{"a":1}' }].map(toFingerprintInput);
    expect(new Set(inputs).size).toBe(4);
  });

  it("the swarm id input differs per tenant and key, and any digest makes a valid swarm id", () => {
    expect(toIdempotentSwarmIdInput("tn_a", "k")).not.toBe(toIdempotentSwarmIdInput("tn_b", "k"));
    expect(toIdempotentSwarmIdInput("tn_a", "k1")).not.toBe(toIdempotentSwarmIdInput("tn_a", "k2"));
    expect(isSwarmId(toSwarmId(new Uint8Array(32).fill(255)))).toBe(true);
    expect(isSwarmId(toSwarmId(new Uint8Array(32)))).toBe(true);
  });
});
