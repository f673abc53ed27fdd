// A local stand-in for the edgeswarm API for the CLI's and the client's tests: canned answers on
// 127.0.0.1 (an ephemeral port), every request recorded. The real API is tested in workerd; this
// checks only how the CLI and the client speak to it and what they print.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface Recorded {
  method: string;
  path: string;
  headers: IncomingMessage["headers"];
  body: unknown;
}

const counts = (succeeded: number, failed: number) => ({ queued: 0, running: 0, succeeded, failed, cancelled: 0, skipped_budget: 0, skipped: 0 });

export function statusOf(id: string, state: string, succeeded: number, failed: number, tasks = 2) {
  return {
    id,
    name: "t",
    state,
    tasks,
    counts: { ...counts(succeeded, failed), running: tasks - succeeded - failed },
    usage: { calls: succeeded + failed, prompt_tokens: 10, cached_tokens: 0, completion_tokens: 5, total_tokens: 15 },
    cost_usd: 0.0012,
    wall_s: 2.5,
    latency_ms: { p50: 200, p95: 260 },
    window: 4,
    max_window: 4,
    retries: { used: 0, budget: 10 },
    tool_calls: 0,
    reason: null,
    finished_at: "2031-01-01T00:00:03.000Z",
  };
}

const sse = (id: number, type: string, data: unknown) => `id: ${id}\nevent: ${type}\ndata: ${JSON.stringify(data)}\n\n`;

export interface FakeApi {
  url: string;
  requests: Recorded[];
  close(): Promise<void>;
}

function errorBody(code: string, message: string, details: { path: string; message: string }[] = []) {
  return { error: { code, message, details, request_id: "req-fake" } };
}

export async function startFakeApi(): Promise<FakeApi> {
  const requests: Recorded[] = [];
  let eventConnections = 0;
  const server: Server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    const url = new URL(req.url ?? "/", "http://x");
    const path = url.pathname;
    // A multipart upload is recorded as its text.
    const multipart = String(req.headers["content-type"] ?? "").startsWith("multipart/form-data");
    requests.push({
      method: req.method ?? "",
      path: `${path}${url.search}`,
      headers: req.headers,
      body: text === "" ? null : multipart ? text : JSON.parse(text),
    });
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    if (req.headers.authorization !== "Bearer t0k") return json(401, errorBody("unauthorized", "missing or wrong bearer token"));
    if (req.method === "POST" && path === "/v1/files" && multipart) {
      return json(200, { id: "file-abc", object: "file", bytes: 42, created_at: 1, filename: "in.jsonl", purpose: "batch", status: "processed" });
    }
    if (req.method === "GET" && path === "/v1/files/file-abc") return json(200, { id: "file-abc", object: "file", bytes: 42, filename: "in.jsonl" });
    if (req.method === "GET" && path === "/v1/files/file-abc/content") {
      res.writeHead(200, { "content-type": "application/octet-stream" });
      return res.end('{"custom_id":"a"}\n');
    }
    const batch = (id: string, status: string) => ({
      id,
      object: "batch",
      status,
      request_counts: { total: 3, completed: 2, failed: 1 },
      output_file_id: "file-out",
      error_file_id: null,
      metadata: { "edgeswarm.swarm_id": "sw_batch" },
    });
    if (req.method === "GET" && path === "/v1/batches") {
      return json(200, {
        object: "list",
        data: [batch("batch_2", "in_progress"), batch("batch_1", "completed")],
        first_id: "batch_2",
        last_id: "batch_1",
        has_more: true,
      });
    }
    if (req.method === "GET" && path === "/v1/batches/batch_1") return json(200, batch("batch_1", "completed"));
    if (req.method === "POST" && path === "/v1/batches/batch_2/cancel") return json(200, batch("batch_2", "cancelling"));
    if (req.method === "GET" && path.startsWith("/v1/batches/")) return json(404, errorBody("not_found", "batch not found"));
    const body = text === "" ? null : (JSON.parse(text) as Record<string, unknown>);
    if (req.method === "POST" && path === "/v1/swarms") {
      if (body?.name === "refuse") return json(400, errorBody("invalid_spec", "the swarm spec is invalid", [{ path: "tasks", message: "Required" }]));
      const id = body?.name === "mixed" ? "sw_mixed" : "sw_ok";
      return json(202, { id, state: "running", urls: { self: `/v1/swarms/${id}` } });
    }
    const events = /^\/v1\/swarms\/(sw_\w+)\/events$/.exec(path);
    if (req.method === "GET" && events) {
      const id = events[1] ?? "";
      res.writeHead(200, { "content-type": "text/event-stream" });
      if (id === "sw_mixed") {
        res.write(
          sse(1, "snapshot", {
            status: statusOf(id, "running", 0, 0),
            tasks: [
              ["a", "running", 1],
              ["b", "running", 1],
            ],
          }),
        );
        res.write(
          sse(2, "tasks", {
            tasks: [
              ["a", "succeeded", 1],
              ["b", "failed", 2],
            ],
          }),
        );
        res.end(sse(3, "done", { id, state: "completed_with_failures", status: statusOf(id, "completed_with_failures", 1, 1) }));
        return;
      }
      eventConnections += 1;
      if (eventConnections % 2 === 1) {
        // The first connection drops after two events: the client must resume after id 2.
        res.write(
          sse(1, "snapshot", {
            status: statusOf(id, "running", 0, 0),
            tasks: [
              ["a", "running", 1],
              ["b", "retry_wait", 1],
            ],
          }),
        );
        res.write(sse(2, "progress", { ...statusOf(id, "running", 1, 0), tasks: 2, eta_s: 1.5 }));
        setTimeout(() => res.socket?.destroy(), 20);
        return;
      }
      const after = Number(req.headers["last-event-id"] ?? 0);
      if (after < 2) res.write(sse(2, "progress", { ...statusOf(id, "running", 1, 0), tasks: 2, eta_s: 1.5 }));
      res.write(
        sse(3, "tasks", {
          tasks: [
            ["a", "succeeded", 1],
            ["b", "succeeded", 2],
          ],
        }),
      );
      res.end(sse(4, "done", { id, state: "completed", status: statusOf(id, "completed", 2, 0) }));
      return;
    }
    const results = /^\/v1\/swarms\/(sw_\w+)\/results$/.exec(path);
    if (req.method === "GET" && results) {
      const cursor = url.searchParams.get("cursor");
      const row = (taskId: string, output: string) => ({
        task_id: taskId,
        state: "succeeded",
        output,
        error: null,
        attempts: 1,
        tool_calls: 0,
        usage: { calls: 1, prompt_tokens: 1, cached_tokens: 0, completion_tokens: 1, total_tokens: 2 },
        cost_usd: 0.001,
        latency_ms: 100,
      });
      if (cursor === null) return json(200, { results: [row("a", 'says "hi", twice')], next_cursor: "1" });
      return json(200, { results: [row("b", "line one\nline | two")], next_cursor: null });
    }
    if (req.method === "GET" && path === "/v1/swarms/sw_ok") return json(200, statusOf("sw_ok", "completed", 2, 0));
    if (req.method === "GET" && path.startsWith("/v1/swarms/")) return json(404, errorBody("not_found", "swarm not found"));
    if (req.method === "POST" && path === "/v1/swarms/estimate") return json(200, { cost_usd: { min: 0.001, max: 0.01 } });
    if (req.method === "POST" && path === "/v1/keys")
      return json(201, { id: "key_1", key: "es_local_secret", prefix: "es_local_se", created_at: "x", expires_at: null, ...body });
    if (req.method === "POST" && path === "/v1/tenants") return json(201, { id: "tn_1", created_at: "x", limits: {}, ...body });
    if (req.method === "DELETE" && path.startsWith("/v1/keys/")) {
      res.writeHead(204);
      return res.end();
    }
    if (req.method === "POST" && path.startsWith("/v1/keys/") && path.endsWith("/rotate")) return json(200, { id: "key_1", key: "es_local_new" });
    if (req.method === "GET" && path === "/v1/usage")
      return json(200, { from: url.searchParams.get("from"), group_by: url.searchParams.get("group_by"), rows: [] });
    if (req.method === "GET" && path === "/v1/busy") {
      res.writeHead(429, { "content-type": "application/json", "retry-after": "7" });
      return res.end(JSON.stringify(errorBody("rate_limited", "slow down")));
    }
    return json(404, errorBody("not_found", `no route for ${req.method} ${path}`));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
