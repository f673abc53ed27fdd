// The bench's floor (`npm run bench -- --floor`): the least a client can do for the workload. W
// workers over node:http keep-alive sockets send the same streamed requests as the pool, and read
// each body whole, with no SDK, no event parsing and no retries: a call counts as done when its
// answer is a 200 that ends with the stream's "[DONE]". Its wall over the ideal is what this machine
// and the mock allow any runner; what the pool and edgeswarm take above it is their own work a call.
// Runs as a child process (json-child.ts), so its CPU figure is its own.
import http from "node:http";
import { z } from "zod";
import { runJsonChild, serveJsonChild } from "./json-child.ts";
import { RunnerWorkloadSchema } from "./runner-workload.ts";

/** The workload, from the mock's plain-HTTP base URL (`http://127.0.0.1:PORT/v1`). */
export const BareClientOptionsSchema = RunnerWorkloadSchema.extend({ baseURL: z.url({ protocol: /^http$/ }) });
export type BareClientOptions = z.input<typeof BareClientOptionsSchema>;

export const BareClientResultSchema = z.object({
  tasks: z.number(),
  /** Calls answered 200 to their end. */
  ok: z.number(),
  /** Calls that got another status, broke off or timed out: the floor does not retry them. */
  failed: z.number(),
  wall_ms: z.number(),
  /** Epoch ms of the first call and of the last call's end. */
  started_at: z.number(),
  ended_at: z.number(),
  /** process.cpuUsage() over the run: user + system. */
  cpu_ms: z.number(),
});
export type BareClientResult = z.infer<typeof BareClientResultSchema>;

/** The end of a streamed answer: the last bytes of a body that ends with it. */
const DONE = "[DONE]";

export async function runBareClient(input: BareClientOptions): Promise<BareClientResult> {
  const options = BareClientOptionsSchema.parse(input);
  const url = new URL(`${options.baseURL.replace(/\/+$/, "")}/chat/completions`);
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.concurrency });
  const headers = { "content-type": "application/json", authorization: `Bearer ${options.apiKey}` };

  const callOnce = (prompt: string): Promise<boolean> =>
    new Promise((resolve) => {
      const messages = options.system === undefined ? [] : [{ role: "system", content: options.system }];
      messages.push({ role: "user", content: prompt });
      const body = JSON.stringify({ model: options.model, messages, max_tokens: options.maxTokens, stream: true, stream_options: { include_usage: true } });
      const request = http.request(
        url,
        { method: "POST", agent, headers: { ...headers, "content-length": Buffer.byteLength(body) }, timeout: options.timeoutMs },
        (response) => {
          let tail = "";
          response.setEncoding("utf8");
          response.on("data", (chunk: string) => {
            tail = (tail + chunk).slice(-32);
          });
          response.on("end", () => resolve(response.statusCode === 200 && tail.includes(DONE)));
          response.on("error", () => resolve(false));
        },
      );
      request.on("timeout", () => request.destroy(new Error("timeout")));
      request.on("error", () => resolve(false));
      request.end(body);
    });

  let ok = 0;
  let failed = 0;
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < options.prompts.length; i = next++) {
      if (await callOnce(options.prompts[i] ?? "")) ok += 1;
      else failed += 1;
    }
  };
  const cpuBefore = process.cpuUsage();
  const startedAt = Date.now();
  const t0 = performance.now();
  await Promise.all(Array.from({ length: Math.min(options.concurrency, options.prompts.length) }, worker));
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpuBefore);
  agent.destroy();
  return { tasks: options.prompts.length, ok, failed, wall_ms: wallMs, started_at: startedAt, ended_at: Date.now(), cpu_ms: (cpu.user + cpu.system) / 1000 };
}

/** Runs the bare client in a child process. */
export function runBareClientChild(options: BareClientOptions): Promise<BareClientResult> {
  return runJsonChild(import.meta.filename, options, BareClientResultSchema);
}

if (import.meta.main) await serveJsonChild(BareClientOptionsSchema, runBareClient);
