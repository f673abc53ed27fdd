import { describe, expect, it } from "vitest";
import { decideAdmission, IN_FLIGHT_RETRY_MS, type Admission, type KeyHealth } from "./key-admission.ts";

const healthy: KeyHealth = { cooldownUntil: null, quarantined: false, inFlight: 0 };
const unlimited = { rpm: null, tpm: null, maxInFlight: null };
const at = (...times: number[]): Admission[] => times.map((t) => ({ at: t, tokens: 100 }));

describe("key admission", () => {
  it.each([
    ["unlimited", unlimited, healthy, at(), 10, { admit: true }],
    ["quarantined", unlimited, { ...healthy, quarantined: true }, at(), 10, { granted: false, retryAfterMs: null, reason: "quarantined" }],
    ["cooling down", unlimited, { ...healthy, cooldownUntil: 61_000 }, at(), 10, { granted: false, retryAfterMs: 1_000, reason: "cooldown" }],
    ["cooldown over", unlimited, { ...healthy, cooldownUntil: 59_000 }, at(), 10, { admit: true }],
    [
      "in flight full",
      { ...unlimited, maxInFlight: 2 },
      { ...healthy, inFlight: 2 },
      at(),
      10,
      { granted: false, retryAfterMs: IN_FLIGHT_RETRY_MS, reason: "in_flight" },
    ],
    ["under rpm", { ...unlimited, rpm: 3 }, healthy, at(10_000, 20_000), 10, { admit: true }],
    // the window is 61 s (60 s + 1 s margin): the admission at 10 s leaves at 71 s, 11 s from now
    ["at rpm", { ...unlimited, rpm: 3 }, healthy, at(10_000, 20_000, 30_000), 10, { granted: false, retryAfterMs: 11_000, reason: "rpm" }],
    ["old admissions slid out", { ...unlimited, rpm: 2 }, healthy, at(-1_000, 30_000), 10, { admit: true }],
    ["the margin keeps an admission 60.5 s old", { ...unlimited, rpm: 2 }, healthy, at(-500, 30_000), 10, { granted: false, retryAfterMs: 500, reason: "rpm" }],
    ["under tpm", { ...unlimited, tpm: 300 }, healthy, at(10_000, 20_000), 100, { admit: true }],
    [
      "over tpm: wait until enough tokens leave",
      { ...unlimited, tpm: 300 },
      healthy,
      at(10_000, 20_000),
      200,
      { granted: false, retryAfterMs: 11_000, reason: "tpm" },
    ],
    ["bigger than the whole tpm", { ...unlimited, tpm: 300 }, healthy, at(), 301, { granted: false, retryAfterMs: null, reason: "too_large" }],
  ] as const)("%s", (_label, limits, health, window, tokens, expected) => {
    expect(decideAdmission(limits, health, window, tokens, 60_000)).toEqual(expected);
  });

  it("never admits more than rpm calls in any 60 s window, however the calls arrive", () => {
    const window: Admission[] = [];
    const limits = { rpm: 5, tpm: null, maxInFlight: null };
    for (let now = 0; now < 300_000; now += 700) {
      if ("admit" in decideAdmission(limits, healthy, window, 1, now)) window.push({ at: now, tokens: 1 });
    }
    for (const a of window) {
      const inWindow = window.filter((b) => b.at > a.at - 60_000 && b.at <= a.at).length;
      expect(inWindow).toBeLessThanOrEqual(5);
    }
    expect(window.length).toBeGreaterThanOrEqual(20);
  });
});
