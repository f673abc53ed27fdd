// Refuses request bodies above a byte limit with 413 payload_too_large, naming the limit.
// A declared Content-Length is checked before any byte is read; a chunked body is counted as it streams.
import { createMiddleware } from "hono/factory";
import { bodyLimit } from "hono/body-limit";
import { ApiError } from "../../src/core/errors.ts";
import type { AppEnv } from "./app-env.ts";

function tooLarge(maxBytes: number): ApiError {
  return new ApiError("payload_too_large", `request body exceeds the limit of ${maxBytes} bytes`);
}

/**
 * The limit is the configured MAX_BODY_BYTES (read per request from the composed deps). A file
 * upload (POST /v1/files) streams to R2 under FILES_MAX_BYTES instead, counted by its route.
 */
export function limitBodySize() {
  return createMiddleware<AppEnv>(async (c, next) => {
    if (c.req.method === "POST" && c.req.path === "/v1/files") return next();
    const maxBytes = c.var.deps.config.maxBodyBytes;
    const declared = c.req.header("content-length");
    // Hono's bodyLimit trusts Content-Length only without Transfer-Encoding; a declared size above
    // the limit is refused either way, so a huge upload is never read at all.
    if (declared !== undefined && /^\d+$/.test(declared) && Number(declared) > maxBytes) throw tooLarge(maxBytes);
    return bodyLimit({
      maxSize: maxBytes,
      onError: () => {
        throw tooLarge(maxBytes);
      },
    })(c, next);
  });
}
