// /v1/files: OpenAI's Files API for batch input (and the output and error files batches write).
// An upload streams from the request into R2 (upload-form.ts, src/files/file-objects.ts); D1 keeps
// the index. Shapes are OpenAI's File object and list page.
import { Hono } from "hono";
import { z } from "zod";
import { toBatchPartKeys } from "../../../src/core/batch-parts.ts";
import { ApiError } from "../../../src/core/errors.ts";
import { isFileId } from "../../../src/core/ids.ts";
import { FileTooLargeError } from "../../../src/files/file-objects.ts";
import type { AppEnv } from "../app-env.ts";
import type { FileRow } from "../file-index.ts";
import { parseQuery } from "../parse-query.ts";
import { readUploadForm } from "../upload-form.ts";

/** The purposes a user may upload for; `batch_output` files are the engine's own. */
const UPLOAD_PURPOSES = ["batch"] as const;
/** A form's parts beside the file (boundaries, headers, `purpose`) stay well under this. */
const FORM_OVERHEAD_BYTES = 64 * 1024;

export const ListFilesQuery = z.object({
  after: z.string().max(100).optional(),
  limit: z
    .string()
    .regex(/^\d{1,5}$/, "must be a whole number")
    .transform(Number)
    .pipe(z.number().int().min(1).max(10_000))
    .default(10_000),
  order: z.enum(["desc"]).optional(),
  purpose: z.string().max(50).optional(),
});

/** The R2 key of a tenant's file: tenant first, so no id can reach another tenant's bytes. */
export function toFileKey(tenant: string, fileId: string): string {
  return `files/${tenant}/${fileId}`;
}

/** OpenAI's File object. */
export function toFileObject(row: FileRow) {
  return {
    id: row.id,
    object: "file" as const,
    bytes: row.bytes,
    created_at: Math.floor(row.createdAt / 1_000),
    filename: row.filename,
    purpose: row.purpose,
    status: "processed" as const,
    expires_at: null,
    status_details: null,
  };
}

function notFound(): ApiError {
  return new ApiError("not_found", "file not found", [{ path: "file_id", message: "no such file for this tenant" }]);
}

export const fileRoutes = new Hono<AppEnv>()
  .post("/", async (c) => {
    const { deps, tenant } = c.var;
    const maxBytes = deps.config.filesMaxBytes;
    const declared = c.req.header("content-length");
    // A declared size far past the limit is refused before a byte is read; a chunked body is counted.
    if (declared !== undefined && /^\d+$/.test(declared) && Number(declared) > maxBytes + FORM_OVERHEAD_BYTES) throw tooLarge(maxBytes);
    const id = deps.newFileId();
    const key = toFileKey(tenant, id);
    let form: Awaited<ReturnType<typeof readUploadForm<number>>>;
    try {
      form = await readUploadForm(c.req.header("content-type"), c.req.raw.body, (_filename, chunks) => deps.fileObjects.write(key, chunks, maxBytes));
    } catch (error) {
      await deps.fileObjects.delete(key);
      if (error instanceof FileTooLargeError) throw tooLarge(maxBytes);
      throw error;
    }
    const purpose = form.fields.get("purpose");
    if (purpose === undefined || !(UPLOAD_PURPOSES as readonly string[]).includes(purpose)) {
      await deps.fileObjects.delete(key);
      throw new ApiError("invalid_request", `purpose must be one of: ${UPLOAD_PURPOSES.join(", ")}`, [
        { path: "purpose", message: purpose === undefined ? "missing" : `got ${JSON.stringify(purpose)}` },
      ]);
    }
    const row: FileRow = {
      id,
      tenant,
      purpose,
      filename: form.file.filename.slice(0, 255),
      bytes: form.file.written,
      createdAt: deps.now(),
      parts: null,
    };
    await deps.files.insert(row);
    return c.json(toFileObject(row), 200);
  })

  .get("/", async (c) => {
    const query = parseQuery(c, ListFilesQuery);
    const page = await c.var.deps.files.list(c.var.tenant, { after: query.after ?? null, limit: query.limit, purpose: query.purpose ?? null });
    const data = page.files.map(toFileObject);
    return c.json({ object: "list", data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: page.hasMore });
  })

  .get("/:id", async (c) => {
    const id = c.req.param("id");
    const row = isFileId(id) ? await c.var.deps.files.get(c.var.tenant, id) : null;
    if (row === null) throw notFound();
    return c.json(toFileObject(row));
  })

  .get("/:id/content", async (c) => {
    const id = c.req.param("id");
    const row = isFileId(id) ? await c.var.deps.files.get(c.var.tenant, id) : null;
    if (row === null) throw notFound();
    const headers = { "content-type": "application/octet-stream", "content-length": String(row.bytes) };
    if (row.parts !== null) {
      // A batch's file is its parts in order, streamed one after the other; FixedLengthStream
      // declares the length the row recorded (a JS stream body is otherwise sent chunked:
      // developers.cloudflare.com/workers/runtime-apis/streams/transformstream/#fixedlengthstream).
      const parts = c.var.deps.fileObjects.readConcatenated(toBatchPartKeys(row.parts));
      return new Response(parts.pipeThrough(new FixedLengthStream(row.bytes)), { headers });
    }
    const body = await c.var.deps.fileObjects.read(toFileKey(c.var.tenant, id));
    if (body === null) throw notFound();
    return new Response(body, { headers });
  })

  .delete("/:id", async (c) => {
    const id = c.req.param("id");
    const row = isFileId(id) ? await c.var.deps.files.get(c.var.tenant, id) : null;
    if (row === null || !(await c.var.deps.files.delete(c.var.tenant, id))) throw notFound();
    await c.var.deps.fileObjects.delete(row.parts === null ? toFileKey(c.var.tenant, id) : toBatchPartKeys(row.parts));
    return c.json({ id, object: "file", deleted: true });
  });

function tooLarge(maxBytes: number): ApiError {
  return new ApiError("payload_too_large", `the file exceeds the limit of ${maxBytes} bytes (FILES_MAX_BYTES)`, [
    { path: "file", message: `larger than ${maxBytes} bytes` },
  ]);
}
