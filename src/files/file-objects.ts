// R2 adapter for uploaded and generated files (FILES_BUCKET): writes a stream of unknown length in
// fixed-size parts, so an upload is never held whole in the isolate, and reads objects whole or by
// byte range. Takes only the bucket; knows nothing of tenants, ids or HTTP.

/**
 * R2's multipart parts: every part but the last must be at least 5 MiB and all of one size
 * (developers.cloudflare.com/r2/objects/multipart-objects, "Limitations"). 8 MiB bounds what one
 * upload holds in memory at a time to one part being filled plus the one being sent.
 */
export const PART_BYTES = 8 * 1024 * 1024;

/** The stream was longer than the limit; what was written is aborted. */
export class FileTooLargeError extends Error {
  readonly maxBytes: number;
  constructor(maxBytes: number) {
    super(`the file exceeds the limit of ${maxBytes} bytes`);
    this.name = "FileTooLargeError";
    this.maxBytes = maxBytes;
  }
}

export interface ByteRange {
  offset: number;
  length: number;
}

export interface FileObjects {
  /**
   * Writes `chunks` as object `key` and returns its size. A stream of at most one part is one put
   * (R2's put needs a known length, which a streamed form part does not have); a longer one is a
   * multipart upload, aborted if the stream fails or passes `maxBytes` (FileTooLargeError).
   */
  write(key: string, chunks: AsyncIterable<Uint8Array>, maxBytes: number): Promise<number>;
  /** The object's bytes (the range only, when given); null when there is no such object. */
  read(key: string, range?: ByteRange): Promise<ReadableStream<Uint8Array> | null>;
  /** The bytes of a range, for small reads (one batch line). */
  readBytes(key: string, range: ByteRange): Promise<Uint8Array | null>;
  /**
   * The objects one after the other as one stream (a batch file's parts), each fetched only when
   * the reader has taken the one before: at most one chunk is held. A missing object errors the stream.
   */
  readConcatenated(keys: readonly string[]): ReadableStream<Uint8Array>;
  delete(keys: string | readonly string[]): Promise<void>;
}

/** R2's delete takes at most this many keys a call (developers.cloudflare.com/r2/api/workers/workers-api-reference, "delete"). */
const DELETE_KEYS_MAX = 1_000;

export function createFileObjects(bucket: R2Bucket): FileObjects {
  return {
    async write(key, chunks, maxBytes) {
      const part = new PartBuffer(PART_BYTES);
      let upload: R2MultipartUpload | null = null;
      const uploaded: R2UploadedPart[] = [];
      let total = 0;
      try {
        for await (const chunk of chunks) {
          total += chunk.byteLength;
          if (total > maxBytes) throw new FileTooLargeError(maxBytes);
          let rest = chunk;
          while (rest.byteLength > 0) {
            rest = part.fill(rest);
            if (part.isFull()) {
              upload ??= await bucket.createMultipartUpload(key);
              // Awaited before the buffer is filled again: one buffer serves the whole upload.
              uploaded.push(await upload.uploadPart(uploaded.length + 1, part.take()));
              part.reset();
            }
          }
        }
        if (upload === null) {
          await bucket.put(key, part.take());
          return total;
        }
        if (part.size() > 0 || uploaded.length === 0) uploaded.push(await upload.uploadPart(uploaded.length + 1, part.take()));
        await upload.complete(uploaded);
        return total;
      } catch (error) {
        if (upload !== null) await upload.abort().catch(() => {});
        throw error;
      }
    },

    async read(key, range) {
      const object = await bucket.get(key, range === undefined ? {} : { range: { offset: range.offset, length: range.length } });
      return object === null ? null : object.body;
    },

    async readBytes(key, range) {
      const object = await bucket.get(key, { range: { offset: range.offset, length: range.length } });
      return object === null ? null : new Uint8Array(await object.arrayBuffer());
    },

    readConcatenated(keys) {
      let next = 0;
      let reader: ReadableStreamDefaultReader<Uint8Array> | null = null;
      // highWaterMark 0: nothing is fetched before the reader asks.
      return new ReadableStream<Uint8Array>(
        {
          async pull(controller) {
            for (;;) {
              if (reader === null) {
                const key = keys[next];
                if (key === undefined) {
                  controller.close();
                  return;
                }
                next += 1;
                const object = await bucket.get(key);
                if (object === null) throw new Error(`the part ${key} is missing`);
                reader = object.body.getReader();
              }
              const chunk = await reader.read();
              if (chunk.done) {
                reader = null;
                continue;
              }
              controller.enqueue(chunk.value);
              return;
            }
          },
          async cancel(reason) {
            await reader?.cancel(reason);
          },
        },
        { highWaterMark: 0 },
      );
    },

    async delete(keys) {
      if (typeof keys === "string") {
        await bucket.delete(keys);
        return;
      }
      for (let i = 0; i < keys.length; i += DELETE_KEYS_MAX) await bucket.delete(keys.slice(i, i + DELETE_KEYS_MAX));
    },
  };
}

/** The part being filled: one fixed buffer for the whole upload, however many parts and chunks. */
class PartBuffer {
  readonly #capacity: number;
  #bytes: Uint8Array | null = null;
  #size = 0;
  constructor(capacity: number) {
    this.#capacity = capacity;
  }
  /** Copies as much of `chunk` as fits; returns the rest. */
  fill(chunk: Uint8Array): Uint8Array {
    this.#bytes ??= new Uint8Array(this.#capacity);
    const n = Math.min(chunk.byteLength, this.#capacity - this.#size);
    this.#bytes.set(chunk.subarray(0, n), this.#size);
    this.#size += n;
    return chunk.subarray(n);
  }
  isFull(): boolean {
    return this.#size === this.#capacity;
  }
  size(): number {
    return this.#size;
  }
  /** The part's bytes, valid until `reset`. */
  take(): Uint8Array {
    return this.#bytes === null ? new Uint8Array(0) : this.#bytes.subarray(0, this.#size);
  }
  /** The part was sent: the buffer is filled again from its start (never reallocated). */
  reset(): void {
    this.#size = 0;
  }
}
