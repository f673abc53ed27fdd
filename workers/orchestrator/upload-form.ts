// Reads a multipart/form-data upload (POST /v1/files) as it streams: the `file` part's bytes go to
// `onFile` as they arrive, other fields are kept as short strings, in whichever order the parts
// come (the Node SDK sends `file` first, the Python SDK `purpose` first). It never holds the file.
import { getMultipartBoundary, MultipartParseError, MultipartParser, type MultipartPart } from "@mjackson/multipart-parser";
import { ApiError } from "../../src/core/errors.ts";

/**
 * The parser enqueues a part's bytes as fast as the request body yields them, whatever its reader
 * takes (its ReadableStream has no backpressure towards the parser): the request body is read only
 * while less than this much has been handed to the parts and not yet taken by their readers.
 */
const MAX_UNREAD_BYTES = 1024 * 1024;
/** A form field (`purpose`) is a word; anything longer is refused, never buffered. */
const MAX_FIELD_BYTES = 1_024;

export interface UploadForm<T> {
  /** Every text field by name (the last one wins). */
  fields: Map<string, string>;
  /** What `onFile` returned for the `file` part. */
  file: { filename: string; written: T };
}

export type FileSink<T> = (filename: string, chunks: AsyncIterable<Uint8Array>) => Promise<T>;

/**
 * Parses the form; `onFile` consumes the `file` part's bytes (and may throw to stop the upload).
 * A form that is not multipart/form-data is 415; a broken one, or one without a file, 400.
 */
export async function readUploadForm<T>(contentType: string | undefined, body: ReadableStream<Uint8Array> | null, onFile: FileSink<T>): Promise<UploadForm<T>> {
  const mediaType = contentType?.split(";")[0]?.trim().toLowerCase();
  if (mediaType !== "multipart/form-data") {
    throw new ApiError("unsupported_media_type", "upload a file as multipart/form-data", [{ path: "content-type", message: `got ${mediaType ?? "none"}` }]);
  }
  const boundary = contentType === undefined ? null : getMultipartBoundary(contentType);
  if (boundary === null || body === null) throw invalidForm("the multipart body or its boundary is missing");

  const flow = new ReadFlow();
  const fields = new Map<string, string>();
  // Set by the part handler (a closure), read after the parse.
  const seen: { file: { filename: string; written: Promise<T> } | null } = { file: null };
  const onPart = async (part: MultipartPart): Promise<void> => {
    const chunks = flow.take(part.body);
    const filename = part.filename;
    if (filename !== undefined || part.name === "file") {
      if (part.name !== "file") throw invalidForm(`unexpected file part "${part.name ?? ""}"; the file goes in the part named "file"`, "file");
      if (seen.file !== null) throw invalidForm("the form holds more than one file", "file");
      const written = onFile(filename ?? "file", chunks);
      seen.file = { filename: filename ?? "file", written };
      await written;
      return;
    }
    fields.set(part.name ?? "", await readField(part.name ?? "", chunks));
  };
  const parser = new MultipartParser(boundary, { maxHeaderSize: 8 * 1024 });
  try {
    await parser.parse(flow.feed(body), (part) => flow.watch(onPart(part)));
  } catch (error) {
    flow.stop(error);
    // The file's writer sees the stop as an error and aborts what it wrote; wait for that.
    await seen.file?.written.catch(() => {});
    if (error instanceof MultipartParseError) throw invalidForm(error.message);
    throw error;
  }
  const uploaded = seen.file;
  if (uploaded === null) throw invalidForm('the form has no file part (a part named "file" with a filename)', "file");
  return { fields, file: { filename: uploaded.filename, written: await uploaded.written } };
}

function invalidForm(message: string, path = "(body)"): ApiError {
  return new ApiError("invalid_request", `the upload form is invalid: ${message}`, [{ path, message }]);
}

async function readField(name: string, chunks: AsyncIterable<Uint8Array>): Promise<string> {
  const decoder = new TextDecoder();
  let text = "";
  let size = 0;
  for await (const chunk of chunks) {
    size += chunk.byteLength;
    if (size > MAX_FIELD_BYTES) throw invalidForm(`field "${name}" is longer than ${MAX_FIELD_BYTES} bytes`, name);
    text += decoder.decode(chunk, { stream: true });
  }
  return text + decoder.decode();
}

/**
 * Backpressure between the request body and the parts' readers, and one stop for all of them: a
 * reader that fails stops the body, and a body that fails (or a parse error) stops every reader.
 */
class ReadFlow {
  #unread = 0;
  #wake: (() => void) | null = null;
  #failure: { error: unknown } | null = null;
  #stopped: Promise<never>;
  #stop: (error: unknown) => void = () => {};

  constructor() {
    this.#stopped = new Promise<never>((_, reject) => {
      this.#stop = reject;
    });
    // Nobody may be waiting on it when it rejects.
    this.#stopped.catch(() => {});
  }

  stop(error: unknown): void {
    if (this.#failure !== null) return;
    this.#failure = { error };
    this.#stop(error);
    this.#wakeUp();
  }

  /** A part's handler: its failure stops the upload at once, not when the body ends. */
  watch(handling: Promise<void>): Promise<void> {
    handling.catch((error: unknown) => this.stop(error));
    return handling;
  }

  /** The request body's chunks, each only once the parts' readers have room for it. */
  async *feed(body: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
    const reader = body.getReader();
    try {
      for (;;) {
        while (this.#unread > MAX_UNREAD_BYTES && this.#failure === null) await new Promise<void>((resolve) => (this.#wake = resolve));
        if (this.#failure !== null) throw this.#failure.error;
        const { done, value } = await reader.read();
        if (done) return;
        this.#unread += value.byteLength;
        yield value;
      }
    } finally {
      releaseQuietly(reader);
    }
  }

  /** A part's bytes, counted out of the unread total as they are taken. */
  async *take(body: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
    const reader = body.getReader();
    try {
      for (;;) {
        const { done, value } = await Promise.race([reader.read(), this.#stopped]);
        if (done) return;
        this.#unread -= value.byteLength;
        this.#wakeUp();
        yield value;
      }
    } finally {
      releaseQuietly(reader);
    }
  }

  #wakeUp(): void {
    const wake = this.#wake;
    this.#wake = null;
    wake?.();
  }
}

/** Releasing a reader with a read still pending (after a stop) may throw; the stream is dropped anyway. */
function releaseQuietly(reader: ReadableStreamDefaultReader<Uint8Array>): void {
  try {
    reader.releaseLock();
  } catch {
    // Nothing to release into: the upload has failed.
  }
}
