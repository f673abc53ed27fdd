// SHA-256 of text and lowercase hex of bytes: what keys, fingerprints and signatures are compared
// as. No I/O; SHA-256 through the WebCrypto `crypto.subtle` global (Workers, Node ≥ 20).

// The core's tsconfig has no DOM or Workers types: the WebCrypto members used here are declared.
declare const crypto: { subtle: { digest(algorithm: "SHA-256", data: Uint8Array): Promise<ArrayBuffer> } };
declare class TextEncoder {
  encode(input: string): Uint8Array;
}

/** Lowercase hex, two digits a byte. */
export function toHex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The SHA-256 digest of the text's UTF-8 bytes. */
export async function sha256(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
}

/** Lowercase hex SHA-256 of the text. */
export async function sha256Hex(text: string): Promise<string> {
  return toHex(await sha256(text));
}
