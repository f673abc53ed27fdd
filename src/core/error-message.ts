// The text of something thrown, for logs and error values: an Error's message, anything else as a
// string. No I/O.

export function toErrorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
