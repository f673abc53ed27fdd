import { afterEach, describe, expect, it } from "vitest";
import { toOtlpJson, toOtlpProtobuf, type SpanBatch } from "../../src/core/otlp-encoding.ts";
import { SPAN_KIND } from "../../src/core/trace-span.ts";
import { toOtelVarArgs } from "./local-stack.ts";
import { startOtlpReceiver, type OtlpReceiver } from "./otlp-receiver.ts";

const BATCH: SpanBatch = {
  resource: { "service.name": "edgeswarm-agent" },
  scope: { name: "edgeswarm", version: "0.1.0" },
  spans: [
    {
      traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
      spanId: "00f067aa0ba902b7",
      parentSpanId: null,
      name: "chat mock-1",
      kind: SPAN_KIND.client,
      startMs: 1_764_000_000_000,
      endMs: 1_764_000_000_250,
      attributes: { "edgeswarm.swarm_id": "sw_a", "gen_ai.usage.input_tokens": 3 },
      status: { code: 0 },
    },
  ],
};

let receiver: OtlpReceiver | null = null;
afterEach(async () => {
  await receiver?.close();
  receiver = null;
});

describe("the OTLP receiver of npm run otel-dev", () => {
  it.each<[string, string, BodyInit]>([
    ["protobuf", "application/x-protobuf", Buffer.from(toOtlpProtobuf([BATCH]))],
    ["JSON", "application/json", toOtlpJson([BATCH])],
  ])("takes %s and answers the spans by swarm", async (_name, contentType, body) => {
    const got: unknown[] = [];
    receiver = await startOtlpReceiver({ port: 0, onSpans: (spans) => got.push(...spans) });
    const response = await fetch(`${receiver.url}/v1/traces`, { method: "POST", headers: { "content-type": contentType }, body });
    expect(response.status).toBe(200);
    const expected = { ...BATCH.spans[0], service: "edgeswarm-agent" };
    expect(got).toEqual([expected]);
    expect(await (await fetch(`${receiver.url}/spans?swarm_id=sw_a`)).json()).toEqual([expected]);
    expect(await (await fetch(`${receiver.url}/spans?swarm_id=sw_other`)).json()).toEqual([]);
  });

  it.each<[string, string, string, number]>([
    ["an unknown content type", "text/plain", "x", 400],
    ["a body that is not OTLP protobuf", "application/x-protobuf", "\u00ff\u00ff\u00ff", 400],
  ])("refuses %s", async (_name, contentType, body, status) => {
    receiver = await startOtlpReceiver({ port: 0, onSpans: () => {} });
    const response = await fetch(`${receiver.url}/v1/traces`, { method: "POST", headers: { "content-type": contentType }, body });
    expect(response.status).toBe(status);
    expect(receiver.spans()).toEqual([]);
  });
});

describe("toOtelVarArgs", () => {
  it.each<[string, NodeJS.ProcessEnv, Record<string, string>, string[]]>([
    ["nothing set", {}, {}, []],
    [
      "from the environment, other variables left out",
      { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318", PATH: "/bin" },
      {},
      ["--var", "OTEL_EXPORTER_OTLP_ENDPOINT:http://127.0.0.1:4318"],
    ],
    [
      "an override wins; blanks are left out",
      { OTEL_SERVICE_NAME: "env", OTEL_SDK_DISABLED: " " },
      { OTEL_SERVICE_NAME: "mine" },
      ["--var", "OTEL_SERVICE_NAME:mine"],
    ],
  ])("%s", (_name, env, overrides, args) => {
    expect(toOtelVarArgs(env, overrides)).toEqual(args);
  });
});

describe("a receiver without onSpans (a bench's, a test's)", () => {
  it("stores the bodies and decodes them when asked, over HTTP or spans()", async () => {
    receiver = await startOtlpReceiver({ port: 0 });
    const response = await fetch(`${receiver.url}/v1/traces`, {
      method: "POST",
      headers: { "content-type": "application/x-protobuf" },
      body: Buffer.from(toOtlpProtobuf([BATCH])),
    });
    expect(response.status).toBe(200);
    const expected = { ...BATCH.spans[0], service: "edgeswarm-agent" };
    expect(await (await fetch(`${receiver.url}/spans?swarm_id=sw_a`)).json()).toEqual([expected]);
    expect(receiver.spans()).toEqual([expected]);
  });
});
