import { describe, expect, it } from "vitest";
import { DEFAULT_EXPORT_TIMEOUT_MS, parseOtlpHeaders, readTraceSettings, type TraceSettings } from "./otel-settings.ts";

const BASE: TraceSettings = {
  url: "http://127.0.0.1:4318/v1/traces",
  headers: {},
  protocol: "http/protobuf",
  serviceName: "edgeswarm-agent",
  sampleRatio: 1,
  captureContent: false,
  timeoutMs: DEFAULT_EXPORT_TIMEOUT_MS,
};

describe("readTraceSettings", () => {
  it.each<[string, Record<string, string>, TraceSettings | null]>([
    ["nothing set: tracing off", {}, null],
    ["blank endpoint: off", { OTEL_EXPORTER_OTLP_ENDPOINT: "  " }, null],
    ["disabled wins over an endpoint", { OTEL_SDK_DISABLED: "true", OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" }, null],
    ["the endpoint gets /v1/traces", { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" }, BASE],
    ["a trailing slash is not doubled", { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318/" }, BASE],
    [
      "the traces endpoint is used as it is",
      { OTEL_EXPORTER_OTLP_ENDPOINT: "http://ignored:1", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://api.honeycomb.io/v1/traces" },
      { ...BASE, url: "https://api.honeycomb.io/v1/traces" },
    ],
    [
      "every setting",
      {
        OTEL_SDK_DISABLED: "false",
        OTEL_EXPORTER_OTLP_ENDPOINT: "https://cloud.langfuse.com/api/public/otel",
        OTEL_EXPORTER_OTLP_HEADERS: "Authorization=Basic%20cGs6c2s=,x-extra=1",
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_EXPORTER_OTLP_TIMEOUT: "2000",
        OTEL_SERVICE_NAME: "my-swarms",
        OTEL_TRACES_SAMPLER_ARG: "0.25",
        OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "true",
      },
      {
        url: "https://cloud.langfuse.com/api/public/otel/v1/traces",
        headers: { Authorization: "Basic cGs6c2s=", "x-extra": "1" },
        protocol: "http/json",
        serviceName: "my-swarms",
        sampleRatio: 0.25,
        captureContent: true,
        timeoutMs: 2000,
      },
    ],
  ])("%s", (_name, env, expected) => {
    expect(readTraceSettings(env, "edgeswarm-agent")).toEqual({ ok: true, value: expected });
  });

  it.each<[string, Record<string, string>, string]>([
    ["not a URL", { OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" }, "OTEL_EXPORTER_OTLP_ENDPOINT must be an http(s) URL"],
    ["grpc is not spoken", { OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }, "OTEL_EXPORTER_OTLP_PROTOCOL must be one of"],
    ["ratio above 1", { OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_TRACES_SAMPLER_ARG: "1.5" }, "OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1"],
    ["ratio not a number", { OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_TRACES_SAMPLER_ARG: "half" }, "OTEL_TRACES_SAMPLER_ARG"],
    ["a bad boolean", { OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "yes" }, "CAPTURE_MESSAGE_CONTENT"],
    ["a bad disable flag", { OTEL_SDK_DISABLED: "1" }, "OTEL_SDK_DISABLED"],
    ["a bad timeout", { OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_EXPORTER_OTLP_TIMEOUT: "0" }, "OTEL_EXPORTER_OTLP_TIMEOUT"],
  ])("%s: an error naming the setting", (_name, env, message) => {
    const read = readTraceSettings(env, "x");
    expect(read.ok).toBe(false);
    if (!read.ok) expect(read.error).toContain(message);
  });

  it("never shows the headers' content in its error", () => {
    const read = readTraceSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_EXPORTER_OTLP_HEADERS: "Authorization Basic sk-secret-123" }, "x");
    expect(read.ok).toBe(false);
    if (!read.ok) {
      expect(read.error).toContain("OTEL_EXPORTER_OTLP_HEADERS");
      expect(read.error).not.toContain("sk-secret-123");
      expect(read.error).not.toContain("Authorization");
    }
  });
});

describe("parseOtlpHeaders", () => {
  it.each<[string, string, Record<string, string> | null]>([
    ["empty", "", {}],
    ["one pair", "api-key=abc", { "api-key": "abc" }],
    ["spaces around entries", " a=1 , b=2 ", { a: "1", b: "2" }],
    ["a percent-encoded value", "Authorization=Basic%20eHg6eXk%3D", { Authorization: "Basic eHg6eXk=" }],
    ["an = in the value", "x-honeycomb-team=abc=", { "x-honeycomb-team": "abc=" }],
    ["no =", "abc", null],
    ["no name", "=abc", null],
    ["a bad escape", "a=%zz", null],
    ["a space in the name", "a b=1", null],
    ["a newline in the value", "a=1%0d%0aInjected: yes", null],
  ])("%s", (_name, text, expected) => {
    const read = parseOtlpHeaders(text);
    expect(read.ok ? read.value : null).toEqual(expected);
  });
});
