// Splits a byte stream into lines ("\n", a trailing "\r" kept off) with each line's byte offset and
// length in the stream, holding only the line being read. No I/O: the caller brings the chunks.

export interface ByteLine {
  /** 1-based. */
  line: number;
  /** Where the line starts in the stream, in bytes. */
  offset: number;
  /** The line's bytes, without its "\n" (nor a "\r" before it). */
  bytes: Uint8Array;
}

const NEWLINE = 10;
const CARRIAGE_RETURN = 13;

/** Every line, blank ones included (the caller decides what a blank line means); a last line without "\n" too. */
export async function* splitLines(chunks: AsyncIterable<Uint8Array>): AsyncGenerator<ByteLine> {
  let line = 0;
  let offset = 0;
  let pending: Uint8Array[] = [];
  let pendingBytes = 0;
  const take = (tail: Uint8Array): ByteLine => {
    const bytes = new Uint8Array(pendingBytes + tail.byteLength);
    let at = 0;
    for (const piece of pending) {
      bytes.set(piece, at);
      at += piece.byteLength;
    }
    bytes.set(tail, at);
    pending = [];
    pendingBytes = 0;
    line += 1;
    const start = offset;
    // The next line starts after this one and its "\n".
    offset += bytes.byteLength + 1;
    const end = bytes.byteLength > 0 && bytes[bytes.byteLength - 1] === CARRIAGE_RETURN ? bytes.byteLength - 1 : bytes.byteLength;
    return { line, offset: start, bytes: bytes.subarray(0, end) };
  };
  for await (const chunk of chunks) {
    let start = 0;
    for (let i = chunk.indexOf(NEWLINE); i !== -1; i = chunk.indexOf(NEWLINE, start)) {
      const found = take(chunk.subarray(start, i));
      start = i + 1;
      yield found;
    }
    if (start < chunk.byteLength) {
      // Copied: the caller may reuse its chunk's buffer.
      pending.push(chunk.slice(start));
      pendingBytes += chunk.byteLength - start;
    }
  }
  if (pendingBytes > 0) yield take(new Uint8Array(0));
}
