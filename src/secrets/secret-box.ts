// Encrypts and decrypts tenant secrets: AES-256-GCM under a key derived per tenant with HKDF-SHA-256
// from the SECRETS_KEY Worker secret (the tenant id is HKDF's info), `<tenant>:<name>` as additional
// data. Keys stay non-extractable CryptoKeys in this isolate's memory; nothing here logs or throws a
// value. Used by the orchestrator (to store, and for the submit-time tool-list read) and by the
// agent's lanes (for the Authorization header of MCP calls).
import type { SealedSecret } from "../core/tenant-secrets.ts";

export interface SecretBox {
  seal(tenant: string, name: string, value: string): Promise<SealedSecret>;
  /** The value, or null when the ciphertext does not open under this tenant and name (or SECRETS_KEY changed). */
  open(tenant: string, name: string, sealed: SealedSecret): Promise<string | null>;
}

const SALT = new TextEncoder().encode("edgeswarm tenant secrets v1");

export function createSecretBox(masterSecret: string): SecretBox {
  const master = crypto.subtle.importKey("raw", new TextEncoder().encode(masterSecret), "HKDF", false, ["deriveKey"]);
  const keys = new Map<string, Promise<CryptoKey>>();
  const keyOf = (tenant: string): Promise<CryptoKey> => {
    let key = keys.get(tenant);
    if (key === undefined) {
      key = master.then((base) =>
        crypto.subtle.deriveKey(
          { name: "HKDF", hash: "SHA-256", salt: SALT, info: new TextEncoder().encode(tenant) },
          base,
          { name: "AES-GCM", length: 256 },
          false,
          ["encrypt", "decrypt"],
        ),
      );
      keys.set(tenant, key);
    }
    return key;
  };
  const aad = (tenant: string, name: string): Uint8Array => new TextEncoder().encode(`${tenant}:${name}`);
  return {
    seal: async (tenant, name, value) => {
      const iv = crypto.getRandomValues(new Uint8Array(12));
      const sealed = await crypto.subtle.encrypt(
        { name: "AES-GCM", iv, additionalData: aad(tenant, name) },
        await keyOf(tenant),
        new TextEncoder().encode(value),
      );
      return { iv: toBase64(iv), ciphertext: toBase64(new Uint8Array(sealed)) };
    },
    open: async (tenant, name, sealed) => {
      try {
        const plain = await crypto.subtle.decrypt(
          { name: "AES-GCM", iv: fromBase64(sealed.iv), additionalData: aad(tenant, name) },
          await keyOf(tenant),
          fromBase64(sealed.ciphertext),
        );
        return new TextDecoder().decode(plain);
      } catch {
        return null;
      }
    },
  };
}

function toBase64(bytes: Uint8Array): string {
  let text = "";
  for (const b of bytes) text += String.fromCharCode(b);
  return btoa(text);
}

function fromBase64(text: string): Uint8Array {
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}
