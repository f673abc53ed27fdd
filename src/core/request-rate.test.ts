import { describe, expect, it } from "vitest";
import { refillBucket, takeRequest, type RateBucket } from "./request-rate.ts";

const T0 = 1_800_000_000_000;

/** Takes `n` requests at `now` against one limit, threading the bucket; answers each decision's admit and retry. */
function takeMany(rpm: number, n: number, now: number, start: RateBucket | null = null) {
  let bucket = start;
  const decisions: (true | number)[] = [];
  for (let i = 0; i < n; i++) {
    const decision = takeRequest([{ bucket, rpm }], now);
    if (decision.admit) {
      bucket = decision.buckets[0] ?? null;
      decisions.push(true);
    } else {
      decisions.push(decision.retryAfterS);
    }
  }
  return { decisions, bucket };
}

describe("takeRequest", () => {
  it.each([
    // rpm, requests at once, expected: true = admitted, n = refused with Retry-After n
    [1, 2, [true, 60]],
    [2, 3, [true, true, 30]],
    [60, 61, [...Array<true>(60).fill(true), 1]],
    [120, 121, [...Array<true>(120).fill(true), 1]],
    [7, 8, [...Array<true>(7).fill(true), 9]],
  ])("rpm %i: a burst of %i", (rpm, n, expected) => {
    expect(takeMany(rpm, n, T0).decisions).toEqual(expected);
  });

  it("refills at rpm/60 a second: an empty rpm-2 bucket admits again after 30 s, not before", () => {
    const { bucket } = takeMany(2, 2, T0);
    expect(takeRequest([{ bucket, rpm: 2 }], T0 + 29_000)).toEqual({ admit: false, retryAfterS: 1 });
    expect(takeRequest([{ bucket, rpm: 2 }], T0 + 30_000).admit).toBe(true);
  });

  it("is refused by the emptiest limit and takes from none then", () => {
    const full: RateBucket = { tokens: 100, at: T0 };
    const empty: RateBucket = { tokens: 0, at: T0 };
    const refused = takeRequest(
      [
        { bucket: full, rpm: 100 },
        { bucket: empty, rpm: 6 },
      ],
      T0,
    );
    expect(refused).toEqual({ admit: false, retryAfterS: 10 });
    const admitted = takeRequest(
      [
        { bucket: full, rpm: 100 },
        { bucket: { tokens: 3, at: T0 }, rpm: 6 },
      ],
      T0,
    );
    expect(admitted).toEqual({
      admit: true,
      buckets: [
        { tokens: 99, at: T0 },
        { tokens: 2, at: T0 },
      ],
    });
  });

  it("never refills above rpm, and a clock that steps back refills nothing", () => {
    expect(refillBucket({ tokens: 1, at: T0 }, 5, T0 + 3_600_000)).toEqual({ tokens: 5, at: T0 + 3_600_000 });
    expect(refillBucket({ tokens: 1, at: T0 }, 5, T0 - 10_000)).toEqual({ tokens: 1, at: T0 });
  });
});
