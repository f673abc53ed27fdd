// Reads a --latency option (the mock model's latency: MS, uniform:MIN:MAX, normal:MEAN:SD or
// lognormal:MEDIAN:P95), or exits 2 saying what was wrong, as readIntOption does for integers.
import { LATENCY_FORMS, type LatencySpec, parseLatency } from "../../dev/mock-model/latency.ts";

export { LATENCY_FORMS };

export function readLatencyOption(raw: string): LatencySpec {
  const latency = parseLatency(raw);
  if (!latency.ok) {
    // Its errors begin with "latency" and end with the forms it takes ("latency: lognormal needs 0 < median ≤ p95 (want …)").
    console.error(`--${latency.error}`);
    process.exit(2);
  }
  return latency.value;
}
