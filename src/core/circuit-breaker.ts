// A circuit breaker per model of a swarm, as pure state transitions. No I/O.
// closed → (a run of upstream failures within a window) → open → (cooldown) → half_open
// → a probe succeeds → closed, or fails → open again. While open the model is not used.
import type { ErrorClass } from "./error-class.ts";
import type { CircuitState } from "./swarm-contract.ts";

export interface CircuitSettings {
  /** Upstream failures in a row (within `windowMs`) that open the circuit. */
  failureThreshold: number;
  windowMs: number;
  /** How long an open circuit stays open before it lets probes through. */
  cooldownMs: number;
  /** Calls allowed through a half-open circuit at once. */
  halfOpenProbes: number;
}

export const DEFAULT_CIRCUIT: CircuitSettings = { failureThreshold: 5, windowMs: 30_000, cooldownMs: 15_000, halfOpenProbes: 2 };

export interface Circuit {
  state: CircuitState;
  /** Failures in the current run. */
  failures: number;
  firstFailureAt: number | null;
  openedAt: number | null;
  /** Probes handed out while half-open. */
  probes: number;
}

export const CLOSED_CIRCUIT: Circuit = { state: "closed", failures: 0, firstFailureAt: null, openedAt: null, probes: 0 };

/**
 * Failures that say the upstream is unhealthy. Rate limits are the window's business (it shrinks),
 * and permanent errors are about the request, not the upstream's health.
 */
export function isUpstreamHealthFailure(errorClass: ErrorClass): boolean {
  switch (errorClass) {
    case "upstream_timeout":
    case "upstream_connection":
    case "upstream_error":
    case "malformed_response":
    case "truncated_stream":
      return true;
    default:
      return false;
  }
}

/** The circuit as of `now`: an open circuit whose cooldown passed is half-open. */
export function toCurrentCircuit(circuit: Circuit, now: number, settings: CircuitSettings = DEFAULT_CIRCUIT): Circuit {
  if (circuit.state === "open" && circuit.openedAt !== null && now >= circuit.openedAt + settings.cooldownMs) {
    return { ...circuit, state: "half_open", probes: 0 };
  }
  return circuit;
}

/** Whether a call may use the model now, and the circuit after handing it out (a probe counts). */
export function acquireCircuit(circuit: Circuit, now: number, settings: CircuitSettings = DEFAULT_CIRCUIT): { allowed: boolean; circuit: Circuit } {
  const current = toCurrentCircuit(circuit, now, settings);
  switch (current.state) {
    case "closed":
      return { allowed: true, circuit: current };
    case "open":
      return { allowed: false, circuit: current };
    case "half_open":
      if (current.probes >= settings.halfOpenProbes) return { allowed: false, circuit: current };
      return { allowed: true, circuit: { ...current, probes: current.probes + 1 } };
  }
}

export function recordCircuitOutcome(circuit: Circuit, outcome: "success" | "failure", now: number, settings: CircuitSettings = DEFAULT_CIRCUIT): Circuit {
  const current = toCurrentCircuit(circuit, now, settings);
  if (outcome === "success") return current.state === "open" ? current : CLOSED_CIRCUIT;
  if (current.state === "half_open") return { ...current, state: "open", openedAt: now, probes: 0, failures: current.failures + 1 };
  if (current.state === "open") return current;
  const inWindow = current.firstFailureAt !== null && now - current.firstFailureAt <= settings.windowMs;
  const failures = inWindow ? current.failures + 1 : 1;
  const firstFailureAt = inWindow ? current.firstFailureAt : now;
  if (failures >= settings.failureThreshold) return { state: "open", failures, firstFailureAt, openedAt: now, probes: 0 };
  return { ...current, failures, firstFailureAt };
}

/** When an open circuit half-opens; null unless open. */
export function toHalfOpenAt(circuit: Circuit, settings: CircuitSettings = DEFAULT_CIRCUIT): number | null {
  return circuit.state === "open" && circuit.openedAt !== null ? circuit.openedAt + settings.cooldownMs : null;
}
