// The OpenTelemetry exporter settings both Workers read (the SDK's environment variables, by their
// standard names: opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/ and
// …/protocol/exporter/). Unset endpoint or OTEL_SDK_DISABLED=true: null, nothing is recorded.
// Errors name the setting; OTEL_EXPORTER_OTLP_HEADERS is a secret and its value is never shown. No I/O.
import { readBooleanSetting, readChoiceSetting, readIntSetting, readSecretSetting, type SettingsEnv } from "./env-settings.ts";
import { err, ok, type Result } from "./result.ts";

export const OTEL_SETTING_NAMES = [
  "OTEL_SDK_DISABLED",
  "OTEL_EXPORTER_OTLP_ENDPOINT",
  "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
  "OTEL_EXPORTER_OTLP_HEADERS",
  "OTEL_EXPORTER_OTLP_PROTOCOL",
  "OTEL_EXPORTER_OTLP_TIMEOUT",
  "OTEL_SERVICE_NAME",
  "OTEL_TRACES_SAMPLER_ARG",
  "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
] as const;
export type OtelSettingName = (typeof OTEL_SETTING_NAMES)[number];

export const OTLP_PROTOCOLS = ["http/protobuf", "http/json"] as const;
export type OtlpProtocol = (typeof OTLP_PROTOCOLS)[number];

export interface TraceSettings {
  /** The full URL spans are POSTed to (`…/v1/traces`). */
  url: string;
  /** Extra request headers (a backend's auth): never logged, never put in a span. */
  headers: Record<string, string>;
  protocol: OtlpProtocol;
  serviceName: string;
  /** Fraction of swarms traced (OTEL_TRACES_SAMPLER_ARG for traceidratio), 0–1. */
  sampleRatio: number;
  /** Whether prompts and answers go into chat spans. */
  captureContent: boolean;
  /** One export request's time limit, ms (its failure is dropped and counted). */
  timeoutMs: number;
}

/**
 * A flush waits this long at most (the spec's default is 10 s; a flush awaited at the end of a lane
 * or a consumer batch holds its invocation, so ours is shorter). OTEL_EXPORTER_OTLP_TIMEOUT sets it.
 */
export const DEFAULT_EXPORT_TIMEOUT_MS = 5_000;

const HTTP_URL = /^https?:\/\/[^/?#\s]+(\/[^\s]*)?$/i;

/** The Workers' trace settings; null = tracing off (no endpoint, or disabled). */
export function readTraceSettings(env: SettingsEnv<OtelSettingName>, defaultServiceName: string): Result<TraceSettings | null, string> {
  const errors: string[] = [];
  const disabled = readBooleanSetting(env, "OTEL_SDK_DISABLED", { fallback: false });
  if (disabled.ok && disabled.value) return ok(null);
  if (!disabled.ok) errors.push(disabled.error);

  const tracesEndpoint = readSecretSetting(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  const endpoint = readSecretSetting(env, "OTEL_EXPORTER_OTLP_ENDPOINT");
  // The signal-specific endpoint is used as it is; the general one gets the signal's path (spec).
  const url = tracesEndpoint ?? (endpoint === null ? null : `${endpoint.replace(/\/+$/, "")}/v1/traces`);
  if (url === null) return errors.length > 0 ? err(errors.join("; ")) : ok(null);
  if (!HTTP_URL.test(url)) {
    errors.push(
      `${tracesEndpoint === null ? "OTEL_EXPORTER_OTLP_ENDPOINT" : "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"} must be an http(s) URL, got ${JSON.stringify(url)}`,
    );
  }
  const headers = parseOtlpHeaders(env.OTEL_EXPORTER_OTLP_HEADERS ?? "");
  if (!headers.ok) errors.push(headers.error);
  const protocol = readChoiceSetting(env, "OTEL_EXPORTER_OTLP_PROTOCOL", OTLP_PROTOCOLS, "http/protobuf");
  if (!protocol.ok) errors.push(protocol.error);
  const timeoutMs = readIntSetting(env, "OTEL_EXPORTER_OTLP_TIMEOUT", { min: 1, max: 60_000, fallback: DEFAULT_EXPORT_TIMEOUT_MS });
  if (!timeoutMs.ok) errors.push(timeoutMs.error);
  const sampleRatio = readRatio(env.OTEL_TRACES_SAMPLER_ARG);
  if (!sampleRatio.ok) errors.push(sampleRatio.error);
  const captureContent = readBooleanSetting(env, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", { fallback: false });
  if (!captureContent.ok) errors.push(captureContent.error);
  if (!headers.ok || !protocol.ok || !timeoutMs.ok || !sampleRatio.ok || !captureContent.ok || errors.length > 0) return err(errors.join("; "));
  return ok({
    url,
    headers: headers.value,
    protocol: protocol.value,
    serviceName: readSecretSetting(env, "OTEL_SERVICE_NAME") ?? defaultServiceName,
    sampleRatio: sampleRatio.value,
    captureContent: captureContent.value,
    timeoutMs: timeoutMs.value,
  });
}

function readRatio(text: string | undefined): Result<number, string> {
  const raw = (text ?? "").trim();
  if (raw === "") return ok(1);
  const n = Number(raw);
  if (!/^\d*\.?\d+$/.test(raw) || !(n >= 0 && n <= 1)) return err(`OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1, got ${JSON.stringify(raw)}`);
  return ok(n);
}

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * OTEL_EXPORTER_OTLP_HEADERS: `name=value` pairs separated by commas, values percent-decoded (the
 * W3C Baggage format the spec names), e.g. `Authorization=Basic%20cGs6c2s=`. Only the setting's
 * shape is ever reported, never a name or value from it.
 */
export function parseOtlpHeaders(text: string): Result<Record<string, string>, string> {
  const headers: Record<string, string> = {};
  const bad = err("OTEL_EXPORTER_OTLP_HEADERS must be comma-separated name=value pairs, values percent-encoded (its content is not shown)");
  for (const entry of text.split(",")) {
    if (entry.trim() === "") continue;
    const at = entry.indexOf("=");
    if (at <= 0) return bad;
    const name = entry.slice(0, at).trim();
    let value: string;
    try {
      value = decodeURIComponent(entry.slice(at + 1).trim());
    } catch {
      return bad;
    }
    if (!HEADER_NAME.test(name) || /[\r\n]/.test(value)) return bad;
    headers[name] = value;
  }
  return ok(headers);
}
