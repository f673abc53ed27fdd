// A Worker's bundle size and startup CPU against the platform's limits, as the deploy prints them.
// No I/O.

const KIB = 1024;
const MIB = 1024 * KIB;

/**
 * Worker size: 64 MiB uncompressed on every plan. The compressed limits (Workers Free 3 MB, Paid
 * 10 MB after gzip) were removed on 2026-09-04:
 * https://developers.cloudflare.com/workers/platform/limits/#worker-size,
 * https://developers.cloudflare.com/changelog/post/2026-09-04-increased-worker-size-limit/
 * (cloudflare/cloudflare-docs#33241), and wrangler's own bundle reporter compares the uncompressed
 * size with 64 MiB since cloudflare/workers-sdk#14001 (MAX_UNCOMPRESSED_SIZE_BYTES in 4.156).
 * The former compressed limits are kept for the printout: older accounts' docs still quote them.
 */
export const WORKER_SIZE_LIMIT_BYTES = 64 * MIB;
export const FORMER_GZIP_LIMITS = { free: 3 * MIB, paid: 10 * MIB } as const;

/**
 * Worker startup time: 1 second to parse and run the global scope, on every plan
 * (https://developers.cloudflare.com/workers/platform/limits/#worker-startup-time; raised from
 * 400 ms: https://developers.cloudflare.com/changelog/2025-10-10-increased-startup-time).
 */
export const STARTUP_LIMIT_MS = 1_000;

/** Above this share of a limit the line says "near the limit". */
const NEAR = 0.7;

export interface WorkerMeasurement {
  worker: string;
  rawBytes: number;
  gzipBytes: number;
  /** CPU of the startup phase in the local workerd (self time of every sample but idle). */
  startupCpuMs: number;
  /** The largest self times of the startup phase, by function. */
  startupTop: ReadonlyArray<{ name: string; ms: number }>;
}

export type Verdict = "ok" | "near" | "over";

const verdictOf = (value: number, limit: number): Verdict => (value > limit ? "over" : value > NEAR * limit ? "near" : "ok");
const percent = (value: number, limit: number): string => `${((100 * value) / limit).toFixed(1)}%`;
export const formatKiB = (bytes: number): string => `${(bytes / KIB).toFixed(1)} KiB`;

export interface LimitReport {
  lines: string[];
  size: Verdict;
  startup: Verdict;
}

/** The lines the deploy prints for one Worker, and whether it fits. */
export function reportLimits(m: WorkerMeasurement): LimitReport {
  const size = verdictOf(m.rawBytes, WORKER_SIZE_LIMIT_BYTES);
  const startup = verdictOf(m.startupCpuMs, STARTUP_LIMIT_MS);
  const mark = (verdict: Verdict): string => (verdict === "ok" ? "ok" : verdict === "near" ? "NEAR THE LIMIT" : "OVER THE LIMIT");
  const top = m.startupTop
    .slice(0, 3)
    .map((row) => `${row.name} ${row.ms.toFixed(1)} ms`)
    .join(", ");
  return {
    size,
    startup,
    lines: [
      `${m.worker}`,
      `  size     ${formatKiB(m.rawBytes)} raw, ${percent(m.rawBytes, WORKER_SIZE_LIMIT_BYTES)} of the 64 MiB limit (all plans): ${mark(size)}`,
      `           ${formatKiB(m.gzipBytes)} gzipped (${percent(m.gzipBytes, FORMER_GZIP_LIMITS.free)} of the former Free 3 MB, ${percent(m.gzipBytes, FORMER_GZIP_LIMITS.paid)} of the former Paid 10 MB)`,
      `  startup  ${m.startupCpuMs.toFixed(1)} ms CPU in the local workerd, ${percent(m.startupCpuMs, STARTUP_LIMIT_MS)} of the 1 s limit: ${mark(startup)}`,
      ...(top ? [`           largest: ${top}`] : []),
    ],
  };
}
