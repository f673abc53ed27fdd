// The client's one error type: the API's error body as a typed value (its code, details and
// request id), or a failure to reach the API at all (`network`) or to read its answer (`bad_response`).
import type { ApiErrorCode, ErrorDetail } from "../core/errors.ts";

export type ClientErrorCode = ApiErrorCode | "network" | "bad_response";

export class EdgeswarmError extends Error {
  readonly code: ClientErrorCode;
  /** HTTP status; 0 when no answer arrived. */
  readonly status: number;
  readonly details: ErrorDetail[];
  readonly requestId: string | null;
  /** Seconds, from Retry-After on a 429. */
  readonly retryAfterS: number | null;

  constructor(init: {
    code: ClientErrorCode;
    status: number;
    message: string;
    details?: ErrorDetail[];
    requestId?: string | null;
    retryAfterS?: number | null;
  }) {
    super(init.message);
    this.name = "EdgeswarmError";
    this.code = init.code;
    this.status = init.status;
    this.details = init.details ?? [];
    this.requestId = init.requestId ?? null;
    this.retryAfterS = init.retryAfterS ?? null;
  }
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The error of a non-2xx answer: the API's JSON error body when it has one. */
export function toEdgeswarmError(status: number, text: string, retryAfter: string | null): EdgeswarmError {
  let body: unknown = null;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: a proxy's page, say
  }
  const retryAfterS = retryAfter !== null && /^\d+$/.test(retryAfter) ? Number(retryAfter) : null;
  const error = isRecord(body) && isRecord(body.error) ? body.error : null;
  if (error !== null && typeof error.code === "string" && typeof error.message === "string") {
    const details = Array.isArray(error.details)
      ? error.details.filter(isRecord).map((d) => ({ path: String(d.path ?? ""), message: String(d.message ?? "") }))
      : [];
    return new EdgeswarmError({
      code: error.code as ApiErrorCode,
      status,
      message: error.message,
      details,
      requestId: typeof error.request_id === "string" ? error.request_id : null,
      retryAfterS,
    });
  }
  return new EdgeswarmError({ code: status >= 500 ? "internal" : "bad_response", status, message: `HTTP ${status}: ${text.slice(0, 200)}`, retryAfterS });
}
