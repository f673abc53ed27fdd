// What the bench gives each runner it puts beside edgeswarm (the promise pool, the bare client):
// the same upstream, prompts, window, output cap and per-call deadline.
import { z } from "zod";

export const RunnerWorkloadSchema = z.object({
  /** OpenAI-compatible base URL, e.g. `http://127.0.0.1:PORT/v1`. */
  baseURL: z.string(),
  apiKey: z.string(),
  model: z.string(),
  prompts: z.array(z.string()).min(1),
  /** A system prompt every call sends first (bench --shared-prefix), as edgeswarm's swarm does. */
  system: z.string().optional(),
  /** W: calls in flight at once. */
  concurrency: z.number().int().positive(),
  maxTokens: z.number().int().positive(),
  /** One call's deadline: the pool's covers headers and body, the bare client's its socket's silence. */
  timeoutMs: z.number().int().positive(),
});
export type RunnerWorkload = z.input<typeof RunnerWorkloadSchema>;

/** When a runner ran and what it cost its process: part of each runner's result. */
export const RunnerTimesSchema = z.object({
  wall_ms: z.number(),
  /** Epoch ms of the first call and of the last task's end (the run's wall, for figures sampled outside). */
  started_at: z.number(),
  ended_at: z.number(),
  /** process.cpuUsage() over the run: user + system. */
  cpu_ms: z.number(),
});
export type RunnerTimes = z.infer<typeof RunnerTimesSchema>;

/** Runs `each` over the prompts, W (`concurrency`) at a time, each worker taking the next prompt, and times the run. */
export async function runPrompts(prompts: readonly string[], concurrency: number, each: (prompt: string) => Promise<void>): Promise<RunnerTimes> {
  const cpuBefore = process.cpuUsage();
  const startedAt = Date.now();
  const t0 = performance.now();
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < prompts.length; i = next++) await each(prompts[i] ?? "");
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, prompts.length) }, worker));
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpuBefore);
  return { wall_ms: wallMs, started_at: startedAt, ended_at: Date.now(), cpu_ms: (cpu.user + cpu.system) / 1000 };
}
