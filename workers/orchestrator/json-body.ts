// Reads a request body as JSON with the API's errors: 415 for another media type, 400 for bad JSON.
// The size limit is enforced earlier, by limitBodySize, before anything is buffered here.
import type { Context } from "hono";
import { ApiError } from "../../src/core/errors.ts";
import { findExcessJsonDepth, MAX_JSON_DEPTH } from "../../src/core/json-depth.ts";
import { findIllFormedString } from "../../src/core/well-formed-json.ts";

/** `application/json` or any `application/*+json`, with or without parameters (charset). */
function isJsonMediaType(contentType: string | undefined): boolean {
  const mediaType = contentType?.split(";")[0]?.trim().toLowerCase() ?? "";
  return mediaType === "application/json" || /^application\/[\w.+-]+\+json$/.test(mediaType);
}

export async function readJsonBody(c: Context): Promise<unknown> {
  if (!isJsonMediaType(c.req.header("content-type"))) {
    throw new ApiError("unsupported_media_type", "request body must be JSON (Content-Type: application/json)");
  }
  const text = await c.req.text();
  // Judged on the text, before JSON.parse and the recursive validators ever see the nesting.
  if (findExcessJsonDepth(text) !== null) {
    throw new ApiError("invalid_request", "request body is nested too deeply", [{ path: "(body)", message: `JSON may nest at most ${MAX_JSON_DEPTH} levels` }]);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    // The parser's message names the position of the problem; it says nothing about the server.
    const why = error instanceof SyntaxError ? error.message : "unparseable";
    throw new ApiError("invalid_request", "request body is not valid JSON", [{ path: "(body)", message: why }]);
  }
  const illFormed = findIllFormedString(value);
  if (illFormed !== null)
    throw new ApiError("invalid_request", "request body holds a string that is not well-formed Unicode", [
      { path: illFormed, message: "contains a lone surrogate" },
    ]);
  return value;
}
