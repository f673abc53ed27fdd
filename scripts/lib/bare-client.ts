// The bench's floor (`npm run bench -- --floor`): the least a client can do for the workload. W
// workers over node:http keep-alive sockets send the same streamed requests as the pool, and read
// each body whole, with no SDK, no event parsing and no retries: a call counts as done when its
// answer is a 200 that ends with the stream's "[DONE]". Its wall over the ideal is what this machine
// and the mock allow any runner; what the pool and edgeswarm take above it is their own work a call.
// Runs as a child process (json-child.ts), so its CPU figure is its own.
import http from "node:http";
import { z } from "zod";
import { runJsonChild, serveJsonChild } from "./json-child.ts";
import { RunnerTimesSchema, RunnerWorkloadSchema, runPrompts } from "./runner-workload.ts";

/** The workload, from the mock's plain-HTTP base URL (`http://127.0.0.1:PORT/v1`). */
export const BareClientOptionsSchema = RunnerWorkloadSchema.extend({ baseURL: z.url({ protocol: /^http$/ }) });
export type BareClientOptions = z.input<typeof BareClientOptionsSchema>;

export const BareClientResultSchema = RunnerTimesSchema.extend({
  tasks: z.number(),
  /** Calls answered 200 to their end. */
  ok: z.number(),
  /** Calls that got another status, broke off or timed out: the floor does not retry them. */
  failed: z.number(),
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
  const times = await runPrompts(options.prompts, options.concurrency, async (prompt) => {
    if (await callOnce(prompt)) ok += 1;
    else failed += 1;
  });
  agent.destroy();
  return { tasks: options.prompts.length, ok, failed, ...times };
}

/** Runs the bare client in a child process. */
export function runBareClientChild(options: BareClientOptions): Promise<BareClientResult> {
  return runJsonChild(import.meta.filename, options, BareClientResultSchema);
}

if (import.meta.main) await serveJsonChild(BareClientOptionsSchema, runBareClient);
