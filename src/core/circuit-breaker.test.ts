import { describe, expect, it } from "vitest";
import {
  acquireCircuit,
  CLOSED_CIRCUIT,
  DEFAULT_CIRCUIT,
  isUpstreamHealthFailure,
  recordCircuitOutcome,
  toCurrentCircuit,
  toHalfOpenAt,
  type Circuit,
} from "./circuit-breaker.ts";
import { ERROR_CLASSES, type ErrorClass } from "./error-class.ts";

const settings = { failureThreshold: 3, windowMs: 10_000, cooldownMs: 5_000, halfOpenProbes: 1 };

function fail(times: number, start: Circuit = CLOSED_CIRCUIT, at = 0, step = 100): Circuit {
  let c = start;
  for (let i = 0; i < times; i += 1) c = recordCircuitOutcome(c, "failure", at + i * step, settings);
  return c;
}

describe("circuit breaker", () => {
  it("opens after a run of failures within the window, not before", () => {
    expect(fail(2).state).toBe("closed");
    const open = fail(3);
    expect(open).toMatchObject({ state: "open", failures: 3, openedAt: 200 });
    expect(toHalfOpenAt(open, settings)).toBe(5_200);
  });

  it("starts a new run when the failures are further apart than the window", () => {
    let c = recordCircuitOutcome(CLOSED_CIRCUIT, "failure", 0, settings);
    c = recordCircuitOutcome(c, "failure", 1_000, settings);
    c = recordCircuitOutcome(c, "failure", 20_000, settings);
    expect(c).toMatchObject({ state: "closed", failures: 1, firstFailureAt: 20_000 });
  });

  it("a success resets the run", () => {
    const c = recordCircuitOutcome(fail(2), "success", 300, settings);
    expect(c).toEqual(CLOSED_CIRCUIT);
    expect(recordCircuitOutcome(c, "failure", 400, settings).state).toBe("closed");
  });

  it.each([
    ["during the cooldown", 1_000, false, "open"],
    ["after the cooldown (a probe)", 5_200, true, "half_open"],
  ] as const)("an open circuit %s lets a call through: %s", (_label, at, allowed, state) => {
    const result = acquireCircuit(fail(3), at, settings);
    expect(result.allowed).toBe(allowed);
    expect(result.circuit.state).toBe(state);
  });

  it("half-open lets only `halfOpenProbes` calls through, and a probe's outcome decides", () => {
    const first = acquireCircuit(fail(3), 6_000, settings);
    expect(first.allowed).toBe(true);
    const second = acquireCircuit(first.circuit, 6_001, settings);
    expect(second.allowed).toBe(false);
    expect(recordCircuitOutcome(second.circuit, "success", 6_100, settings)).toEqual(CLOSED_CIRCUIT);
    const reopened = recordCircuitOutcome(second.circuit, "failure", 6_100, settings);
    expect(reopened).toMatchObject({ state: "open", openedAt: 6_100 });
    expect(toCurrentCircuit(reopened, 11_099, settings).state).toBe("open");
    expect(toCurrentCircuit(reopened, 11_100, settings).state).toBe("half_open");
  });

  it("ignores a late success while open (only a probe closes it)", () => {
    const open = fail(3);
    expect(recordCircuitOutcome(open, "success", 1_000, settings)).toEqual(open);
  });

  it("has sane defaults", () => {
    expect(DEFAULT_CIRCUIT.failureThreshold).toBeGreaterThan(1);
    expect(DEFAULT_CIRCUIT.halfOpenProbes).toBeGreaterThanOrEqual(1);
  });

  const health: ErrorClass[] = ["upstream_timeout", "upstream_connection", "upstream_error", "malformed_response", "truncated_stream"];
  it.each(ERROR_CLASSES.map((c) => [c, health.includes(c)] as const))("%s counts as an upstream health failure: %s", (errorClass, counts) => {
    expect(isUpstreamHealthFailure(errorClass)).toBe(counts);
  });
});
