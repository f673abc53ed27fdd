// The model-call bench's driver Worker: POST /run makes `calls` streamed chat completions against
// `baseURL`, `concurrency` at a time, by one of the paths below, and answers how many succeeded.
// It measures nothing itself: the bench reads workerd's CPU around each run.
import { readChatStream } from "../../src/model/chat-stream.ts";
import { createModelClient } from "../../src/model/model-client.ts";

/**
 * - `client`: edgeswarm's model client (the openai SDK builds and sends the request; our stream reader);
 * - `fetch-stream`: one bare `fetch` with the same body, read by the same stream reader;
 * - `fetch-text`: the bare `fetch`, its body read whole: what a call costs below any SSE parsing;
 * - `fetch-text-hop`: the same, sent through one more hop like miniflare's outbound interceptor
 *   (`HOP`, a service binding to this Worker, whose /hop does what the interceptor does), so
 *   `fetch-text-hop − fetch-text` is what that hop costs a call: every fetch of a local Worker
 *   takes it once, and production's none.
 */
const PATHS = ["client", "fetch-stream", "fetch-text", "fetch-text-hop"] as const;
type CallPath = (typeof PATHS)[number];

interface RunRequest {
  path: CallPath;
  baseURL: string;
  calls: number;
  concurrency: number;
}

const API_KEY = "mock-key-model-call-bench";

interface DriverEnv {
  /** This Worker again (wrangler.toml): the extra hop of `fetch-text-hop`. */
  HOP: Fetcher;
}

/** Where /hop sends a request on: the upstream URL it was asked for. */
const HOP_TARGET = "x-hop-target";

export default {
  async fetch(request, env): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === "/healthz") return new Response("ok");
    if (url.pathname === "/hop") return hop(request);
    if (url.pathname !== "/run" || request.method !== "POST") return new Response("not found", { status: 404 });
    const run = (await request.json()) as RunRequest;
    if (!PATHS.includes(run.path)) return Response.json({ error: `path must be one of ${PATHS.join(", ")}` }, { status: 400 });
    const call = caller(run, env);
    let next = 0;
    let ok = 0;
    await Promise.all(
      Array.from({ length: run.concurrency }, async () => {
        for (let i = next++; i < run.calls; i = next++) if (await call(i)) ok += 1;
      }),
    );
    return Response.json({ ok });
  },
} satisfies ExportedHandler<DriverEnv>;

/**
 * What miniflare's outbound interceptor does with a Worker's fetch (its `outbound.worker.js`, with
 * `stripCfConnectingIp` on, wrangler dev's default): copies the headers, drops CF-Connecting-IP, sets
 * CF-Worker, and fetches on.
 */
function hop(request: Request): Promise<Response> {
  const target = request.headers.get(HOP_TARGET);
  if (target === null) return Promise.resolve(Response.json({ error: `/hop needs the ${HOP_TARGET} header` }, { status: 400 }));
  const headers = new Headers(request.headers);
  headers.delete(HOP_TARGET);
  headers.delete("CF-Connecting-IP");
  headers.set("CF-Worker", "edgeswarm-model-call-bench.example.com");
  return fetch(new Request(target, request), { headers });
}

function body(i: number) {
  return {
    model: "mock-1",
    messages: [{ role: "user" as const, content: `model call bench ${i + 1}: summarize item ${i + 1}` }],
    max_tokens: 32,
    stream: true as const,
    stream_options: { include_usage: true },
  };
}

function caller(run: RunRequest, env: DriverEnv): (i: number) => Promise<boolean> {
  if (run.path === "client") {
    const client = createModelClient({ baseURL: run.baseURL, apiKey: API_KEY });
    return async (i) => {
      const result = await client.complete({
        model: "mock-1",
        messages: body(i).messages,
        tools: null,
        parallelToolCalls: null,
        maxOutputTokens: 32,
        timeoutMs: 30_000,
        responseFormat: null,
      });
      return result.ok;
    };
  }
  const headers = { authorization: `Bearer ${API_KEY}`, "content-type": "application/json", accept: "application/json" };
  const endpoint = `${run.baseURL.replace(/\/$/, "")}/chat/completions`;
  return async (i) => {
    const deadline = new AbortController();
    const init = { method: "POST", headers, body: JSON.stringify(body(i)), signal: deadline.signal };
    const response =
      run.path === "fetch-text-hop"
        ? await env.HOP.fetch("https://hop/hop", { ...init, headers: { ...headers, [HOP_TARGET]: endpoint } })
        : await fetch(endpoint, init);
    if (!response.ok) return false;
    if (run.path === "fetch-text" || run.path === "fetch-text-hop") return (await response.text()).includes("[DONE]");
    return (await readChatStream(response, deadline.signal, () => undefined)).completed;
  };
}
