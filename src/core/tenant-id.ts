// A tenant's id: the API token it authenticates with, hashed. `tk_` + the first 16 hex chars of
// the token's SHA-256 — stable, and never the token itself. No I/O; SHA-256 through the WebCrypto
// `crypto.subtle` global (Workers, Node ≥ 20).

// The core's tsconfig has no DOM or Workers types: the WebCrypto members used here are declared.
declare const crypto: { subtle: { digest(algorithm: "SHA-256", data: Uint8Array): Promise<ArrayBuffer> } };
declare class TextEncoder {
  encode(input: string): Uint8Array;
}

export function toTenantIdFromDigest(digest: ArrayBuffer): string {
  return `tk_${Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0"))
    .join("")
    .slice(0, 16)}`;
}

export async function toTenantId(token: string): Promise<string> {
  return toTenantIdFromDigest(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(token)));
}
