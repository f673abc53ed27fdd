// Parses the API's JSON error body in tests, so assertions never cast a payload.
import { expect } from "vitest";
import { z } from "zod";

export const ErrorBodySchema = z.strictObject({
  error: z.strictObject({
    code: z.string(),
    message: z.string(),
    details: z.array(z.strictObject({ path: z.string(), message: z.string() })),
    request_id: z.string().optional(),
  }),
});
export type ErrorBody = z.infer<typeof ErrorBodySchema>;

export async function readErrorBody(response: Response): Promise<ErrorBody["error"]> {
  expect(response.headers.get("content-type")).toMatch(/^application\/json/);
  return ErrorBodySchema.parse(await response.json()).error;
}
