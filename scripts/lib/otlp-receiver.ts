// A local OTLP/HTTP trace receiver (127.0.0.1 only): takes POST /v1/traces in protobuf or JSON, as
// any collector would, and keeps what it got for `npm run otel-dev` to print and for tests to check
// (GET /spans?trace_id=… or ?swarm_id=… answers them as JSON, and GET /requests every request's
// headers and body in base64, for tests that run inside workerd).
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { fromOtlpJson, fromOtlpProtobuf } from "../../src/core/otlp-decoding.ts";
import type { SpanBatch } from "../../src/core/otlp-encoding.ts";
import type { ReceivedSpan } from "./span-tree.ts";

export interface OtlpReceiver {
  /** The endpoint to set as OTEL_EXPORTER_OTLP_ENDPOINT (no /v1/traces). */
  url: string;
  spans(): ReceivedSpan[];
  /** Every request body as received, with its headers (for the secret scan). */
  requests(): ReadonlyArray<{ contentType: string; headers: Record<string, string>; body: Buffer }>;
  close(): Promise<void>;
}

export interface OtlpReceiverOptions {
  port: number;
  /** Called with each request's spans once they are stored. */
  onSpans?: (spans: ReceivedSpan[]) => void;
}

/** Bodies larger than this are refused (413), as collectors cap theirs. */
const MAX_BODY_BYTES = 32 * 1024 * 1024;

export async function startOtlpReceiver(options: OtlpReceiverOptions): Promise<OtlpReceiver> {
  const requests: Array<{ contentType: string; headers: Record<string, string>; body: Buffer }> = [];
  // Decoded on arrival only for onSpans (otel-dev); else when asked (a bench's receiver, whose CPU
  // the measured run shares, only checks each body's content type while the swarm runs).
  const received: ReceivedSpan[] = [];
  let decodedUpTo = 0;
  const decodeStored = (): ReceivedSpan[] => {
    for (; decodedUpTo < requests.length; decodedUpTo += 1) {
      const request = requests[decodedUpTo];
      if (request === undefined) continue;
      const decoded = decode(request.contentType, request.body);
      if (decoded.ok) received.push(...toReceived(decoded.value));
    }
    return received;
  };

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const url = new URL(request.url ?? "/", "http://127.0.0.1");
    if (request.method === "GET" && url.pathname === "/spans") {
      const traceId = url.searchParams.get("trace_id");
      const swarmId = url.searchParams.get("swarm_id");
      const spans = decodeStored().filter(
        (span) => (traceId === null || span.traceId === traceId) && (swarmId === null || span.attributes["edgeswarm.swarm_id"] === swarmId),
      );
      return send(response, 200, "application/json", JSON.stringify(spans));
    }
    if (request.method === "GET" && url.pathname === "/requests") {
      return send(response, 200, "application/json", JSON.stringify(requests.map((r) => ({ ...r, body: r.body.toString("base64") }))));
    }
    if (request.method !== "POST" || url.pathname !== "/v1/traces") return send(response, 404, "text/plain", "not found");
    const body = await readBody(request);
    if (body === null) return send(response, 413, "text/plain", "body too large");
    const contentType = (request.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
    if (contentType !== "application/x-protobuf" && contentType !== "application/json") {
      return send(response, 400, "text/plain", `unsupported content-type ${JSON.stringify(contentType)}`);
    }
    const headers = Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k, String(v)]));
    if (options.onSpans !== undefined) {
      const decoded = decode(contentType, body);
      if (!decoded.ok) return send(response, 400, "text/plain", decoded.error);
      decodeStored();
      requests.push({ contentType, headers, body });
      decodedUpTo = requests.length;
      const spans = toReceived(decoded.value);
      received.push(...spans);
      options.onSpans(spans);
    } else {
      requests.push({ contentType, headers, body });
    }
    // An empty ExportTraceServiceResponse: full success.
    return contentType === "application/json" ? send(response, 200, "application/json", "{}") : send(response, 200, "application/x-protobuf", "");
  };

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => send(response, 500, "text/plain", String(error)));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans: () => [...decodeStored()],
    requests: () => [...requests],
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function decode(contentType: string, body: Buffer): { ok: true; value: SpanBatch[] } | { ok: false; error: string } {
  return contentType === "application/x-protobuf" ? fromOtlpProtobuf(new Uint8Array(body)) : fromOtlpJson(body.toString("utf8"));
}

function toReceived(batches: readonly SpanBatch[]): ReceivedSpan[] {
  return batches.flatMap((batch) => batch.spans.map((span) => ({ ...span, service: String(batch.resource["service.name"] ?? "") })));
}

function send(response: ServerResponse, status: number, contentType: string, body: string): void {
  response.writeHead(status, { "content-type": contentType, "content-length": Buffer.byteLength(body) });
  response.end(body);
}

async function readBody(request: IncomingMessage): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > MAX_BODY_BYTES) return null;
    chunks.push(buffer);
  }
  return Buffer.concat(chunks);
}
