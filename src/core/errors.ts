// The public error taxonomy of the HTTP API, mapped once to HTTP status, and the JSON error body.
// No I/O. Handlers raise ApiError; one onError turns it into `{ error: { code, message, details } }`.
import type { z } from "zod";

export type ApiErrorCode =
  | "invalid_spec"
  | "invalid_request"
  | "unauthorized"
  | "budget_exceeded"
  | "forbidden"
  | "not_found"
  | "conflict"
  | "payload_too_large"
  | "unsupported_media_type"
  | "rate_limited"
  | "internal";

export interface ErrorDetail {
  path: string;
  message: string;
}

export interface ErrorBody {
  error: { code: ApiErrorCode; message: string; details: ErrorDetail[]; request_id?: string };
}

export function toHttpStatus(code: ApiErrorCode): 400 | 401 | 402 | 403 | 404 | 409 | 413 | 415 | 429 | 500 {
  switch (code) {
    case "invalid_spec":
    case "invalid_request":
      return 400;
    case "unauthorized":
      return 401;
    case "budget_exceeded":
      return 402;
    case "forbidden":
      return 403;
    case "not_found":
      return 404;
    case "conflict":
      return 409;
    case "payload_too_large":
      return 413;
    case "unsupported_media_type":
      return 415;
    case "rate_limited":
      return 429;
    case "internal":
      return 500;
  }
}

/** An expected failure of a request: its message is public, so it never carries internals. */
export class ApiError extends Error {
  readonly code: ApiErrorCode;
  readonly details: ErrorDetail[];
  /** For `rate_limited`: whole seconds until a retry can succeed, sent as `Retry-After`. */
  readonly retryAfterS: number | undefined;
  constructor(code: ApiErrorCode, message: string, details: ErrorDetail[] = [], options: { retryAfterS?: number } = {}) {
    super(message);
    this.name = "ApiError";
    this.code = code;
    this.details = details;
    this.retryAfterS = options.retryAfterS;
  }
}

export function toErrorBody(code: ApiErrorCode, message: string, details: ErrorDetail[] = [], requestId?: string): ErrorBody {
  return { error: { code, message, details, ...(requestId ? { request_id: requestId } : {}) } };
}

/** `["tasks", 3, "prompt"]` → `"tasks.3.prompt"`; the root is `"(root)"`. */
export function toIssuePath(path: ReadonlyArray<PropertyKey>): string {
  return path.length === 0 ? "(root)" : path.map(String).join(".");
}

export function toIssueDetails(error: z.ZodError): ErrorDetail[] {
  return error.issues.map((issue) => ({ path: toIssuePath(issue.path), message: issue.message }));
}
