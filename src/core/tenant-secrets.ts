// Tenant secrets as the API takes them: a name (path) and a write-only value (body). No I/O.
// The value is encrypted before it is stored (src/secrets/secret-box.ts) and never returned.
import { z } from "zod";

export const SecretNameSchema = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "a secret name is 1-64 letters, digits, '_' or '-'");

/** 8 KiB: a bearer token, never a document. */
export const MAX_SECRET_CHARS = 8_192;

export const SecretPutSchema = z.strictObject({
  value: z
    .string()
    .min(1, "value must not be empty")
    .max(MAX_SECRET_CHARS, `value is longer than ${MAX_SECRET_CHARS} characters`)
    // It travels as an HTTP header value: printable ASCII, no line breaks.
    .regex(/^[\x21-\x7e]+$/, "value must be printable ASCII without spaces (it is sent as a bearer token)"),
});

/** A secret as it is stored: ciphertext only (base64), and when it was written. */
export interface SealedSecret {
  iv: string;
  ciphertext: string;
}

/** What GET /v1/secrets shows of a secret: never its value. */
export interface SecretView {
  name: string;
  created_at: string;
  updated_at: string;
}
