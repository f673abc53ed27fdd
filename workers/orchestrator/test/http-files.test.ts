// POST/GET/DELETE /v1/files through the Worker's real entry: multipart in either part order, sized
// and chunked, streamed into the real local R2 bucket in parts, the FILES_MAX_BYTES limit, paging.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { PART_BYTES } from "../../../src/files/file-objects.ts";
import { batchForm, callApi, createTenantKey } from "./call-api.ts";
import { readErrorBody } from "./error-body.ts";

const FileObjectSchema = z.strictObject({
  id: z.string().regex(/^file-[a-z2-7]{24}$/),
  object: z.literal("file"),
  bytes: z.number(),
  created_at: z.number(),
  filename: z.string(),
  purpose: z.literal("batch"),
  status: z.literal("processed"),
  expires_at: z.null(),
  status_details: z.null(),
});
const FileListSchema = z.strictObject({
  object: z.literal("list"),
  data: z.array(FileObjectSchema),
  first_id: z.string().nullable(),
  last_id: z.string().nullable(),
  has_more: z.boolean(),
});

const LINE = `${JSON.stringify({ custom_id: "r", method: "POST", url: "/v1/chat/completions", body: { model: "mock-1", messages: [] } })}\n`;
const encoder = new TextEncoder();

/** A multipart body of `fileBytes` bytes of repeated lines, sent chunked (no Content-Length), file part first. */
function chunkedForm(fileBytes: number, boundary = "----edgeswarm-test-boundary"): ReadableStream<Uint8Array> {
  const head = encoder.encode(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.jsonl"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
  const tail = encoder.encode(`\r\n--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n--${boundary}--\r\n`);
  const chunk = encoder.encode("x".repeat(63) + "\n".repeat(1)).slice(0, 64);
  const block = new Uint8Array(256 * 1024);
  for (let i = 0; i < block.length; i += chunk.length) block.set(chunk, i);
  let left = fileBytes;
  let stage: "head" | "body" | "tail" | "done" = "head";
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (stage === "head") {
        controller.enqueue(head);
        stage = "body";
      } else if (stage === "body") {
        const n = Math.min(left, block.length);
        if (n > 0) controller.enqueue(block.slice(0, n));
        left -= n;
        if (left === 0) stage = "tail";
      } else if (stage === "tail") {
        controller.enqueue(tail);
        stage = "done";
      } else {
        controller.close();
      }
    },
  });
}

async function upload(form: FormData | ReadableStream<Uint8Array>, token?: string, headers: Record<string, string> = {}): Promise<Response> {
  const contentType: Record<string, string> = form instanceof FormData ? {} : { "content-type": "multipart/form-data; boundary=----edgeswarm-test-boundary" };
  return callApi("/v1/files", { body: form, ...(token === undefined ? {} : { token }), headers: { ...contentType, ...headers } });
}

async function objectKeys(prefix: string): Promise<string[]> {
  return (await env.FILES_BUCKET.list({ prefix })).objects.map((o) => o.key);
}

describe("POST /v1/files", () => {
  it.each([
    ["file first (the Node SDK's order)", false],
    ["purpose first (the Python SDK's order)", true],
  ])("takes a form with the %s and serves the same bytes back", async (_order, purposeFirst) => {
    const content = LINE.repeat(3);
    const response = await upload(batchForm("requests.jsonl", content, { purposeFirst }));
    expect(response.status).toBe(200);
    const file = FileObjectSchema.parse(await response.json());
    expect(file).toMatchObject({ bytes: encoder.encode(content).length, filename: "requests.jsonl", purpose: "batch" });
    expect(Math.abs(file.created_at - Date.now() / 1_000)).toBeLessThan(600);
    const got = await callApi(`/v1/files/${file.id}`);
    expect(FileObjectSchema.parse(await got.json())).toEqual(file);
    const body = await callApi(`/v1/files/${file.id}/content`);
    expect(body.status).toBe(200);
    expect(await body.text()).toBe(content);
  });

  it("streams a chunked upload larger than MAX_BODY_BYTES into R2 in parts, byte for byte", async () => {
    const bytes = 2 * PART_BYTES + 12_345;
    const response = await upload(chunkedForm(bytes));
    expect(response.status).toBe(200);
    const file = FileObjectSchema.parse(await response.json());
    expect(file.bytes).toBe(bytes);
    const content = await callApi(`/v1/files/${file.id}/content`);
    expect(content.headers.get("content-length")).toBe(String(bytes));
    let read = 0;
    let wrong = 0;
    for await (const chunk of content.body ?? new ReadableStream()) {
      for (let i = 0; i < chunk.length; i += 4_099) if (chunk[i] !== ((read + i) % 64 === 63 ? 10 : 120)) wrong += 1;
      read += chunk.length;
    }
    expect({ read, wrong }).toEqual({ read: bytes, wrong: 0 });
    // 16 MiB up and down: seconds on a shared 2-core machine.
  }, 60_000);

  it("refuses a file past FILES_MAX_BYTES with 413, chunked or declared, and keeps no object", async () => {
    const tenant = await createTenantKey({ name: "uploader" });
    const chunked = await upload(chunkedForm(20 * 1024 * 1024 + 1), tenant.key);
    expect(chunked.status).toBe(413);
    const error = await readErrorBody(chunked);
    expect(error).toMatchObject({ code: "payload_too_large", details: [{ path: "file" }] });
    expect(error.message).toContain("FILES_MAX_BYTES");
    const declared = await callApi("/v1/files", {
      token: tenant.key,
      body: "x",
      headers: { "content-type": "multipart/form-data; boundary=b", "content-length": String(200 * 1024 * 1024) },
    });
    expect(declared.status).toBe(413);
    expect(await objectKeys(`files/${tenant.tenantId}/`)).toEqual([]);
    const list = FileListSchema.parse(await (await callApi("/v1/files", { token: tenant.key })).json());
    expect(list.data).toEqual([]);
  }, 60_000);

  it.each([
    ["a JSON body", { json: { file: "x", purpose: "batch" } }, 415, "content-type"],
    [
      "a form without a file",
      {
        body: (() => {
          const f = new FormData();
          f.append("purpose", "batch");
          return f;
        })(),
      },
      400,
      "file",
    ],
    [
      "a form without purpose",
      {
        body: (() => {
          const f = new FormData();
          f.append("file", new Blob(["{}\n"]), "a.jsonl");
          return f;
        })(),
      },
      400,
      "purpose",
    ],
    ["another purpose", { body: batchForm("a.jsonl", "{}\n", { purpose: "fine-tune" }) }, 400, "purpose"],
    [
      "two files",
      {
        body: (() => {
          const f = batchForm("a.jsonl", "{}\n");
          f.append("file", new Blob(["{}\n"]), "b.jsonl");
          return f;
        })(),
      },
      400,
      "file",
    ],
    ["a broken multipart body", { body: "--b\r\nnot a part", headers: { "content-type": "multipart/form-data; boundary=b" } }, 400, "(body)"],
  ])("refuses %s with the error shape naming the field", async (_case, options, status, path) => {
    const tenant = await createTenantKey({ name: "bad uploads" });
    const response = await callApi("/v1/files", { ...options, token: tenant.key });
    expect(response.status).toBe(status);
    expect((await readErrorBody(response)).details[0]?.path).toBe(path);
    expect(await objectKeys(`files/${tenant.tenantId}/`)).toEqual([]);
  });
});

describe("GET and DELETE /v1/files", () => {
  it("lists the tenant's files newest first, in pages by `after`, and deletes one (then 404)", async () => {
    const tenant = await createTenantKey({ name: "lister" });
    const ids: string[] = [];
    for (const name of ["a", "b", "c"]) {
      const file = FileObjectSchema.parse(await (await upload(batchForm(`${name}.jsonl`, LINE), tenant.key)).json());
      ids.push(file.id);
    }
    const first = FileListSchema.parse(await (await callApi("/v1/files?limit=2", { token: tenant.key })).json());
    expect(first.data.map((f) => f.filename)).toEqual(["c.jsonl", "b.jsonl"]);
    expect(first.has_more).toBe(true);
    const second = FileListSchema.parse(await (await callApi(`/v1/files?limit=2&after=${first.last_id}`, { token: tenant.key })).json());
    expect(second.data.map((f) => f.filename)).toEqual(["a.jsonl"]);
    expect(second.has_more).toBe(false);

    const deleted = await callApi(`/v1/files/${ids[0]}`, { method: "DELETE", token: tenant.key });
    expect(await deleted.json()).toEqual({ id: ids[0], object: "file", deleted: true });
    expect(await objectKeys(`files/${tenant.tenantId}/${ids[0]}`)).toEqual([]);
    for (const path of [`/v1/files/${ids[0]}`, `/v1/files/${ids[0]}/content`, "/v1/files/not-a-file-id"]) {
      const response = await callApi(path, { token: tenant.key });
      expect(response.status, path).toBe(404);
      expect((await readErrorBody(response)).code).toBe("not_found");
    }
    expect((await callApi(`/v1/files/${ids[0]}`, { method: "DELETE", token: tenant.key })).status).toBe(404);
  });

  it("refuses a bad limit with 400 naming it", async () => {
    const response = await callApi("/v1/files?limit=0");
    expect(response.status).toBe(400);
    expect((await readErrorBody(response)).details[0]?.path).toBe("limit");
  });
});
