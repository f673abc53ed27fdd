// What this machine's CPU allows a runner: the most calls it can start a millisecond, and so the
// most it can keep in flight on average, when each call costs `cpuMsPerCall` of CPU in all the
// processes it passes through (the runner's and the mock model's). The bench prints it next to
// the measured mean in flight, so a figure held back by the machine shows as such. Pure arithmetic.

export interface MachineCeiling {
  /** Calls the machine's cores can carry a millisecond, at this CPU per call. */
  callsPerMs: number;
  /** Little's law: callsPerMs × the mean time a call stays in flight. */
  inFlight: number;
}

/**
 * `cores` busy all the time, at `cpuMsPerCall` each, can start cores / cpuMsPerCall calls a ms;
 * each then stays in flight for `meanLatencyMs` (the upstream's), so on average at most
 * cores × meanLatencyMs / cpuMsPerCall are in flight. Null when the CPU per call is unknown or not
 * positive. A peak may lie above it for a while (a ramp's starts done before the first ends are
 * handled); a mean cannot, unless calls stay in flight longer than the upstream's latency.
 */
export function machineCeiling(input: { cores: number; cpuMsPerCall: number | null; meanLatencyMs: number }): MachineCeiling | null {
  const { cores, cpuMsPerCall, meanLatencyMs } = input;
  if (cpuMsPerCall === null || !(cpuMsPerCall > 0) || !(cores > 0) || !(meanLatencyMs >= 0)) return null;
  const callsPerMs = cores / cpuMsPerCall;
  return { callsPerMs, inFlight: callsPerMs * meanLatencyMs };
}
