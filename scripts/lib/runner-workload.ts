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
