// The CLI's exit codes (docs/cli-and-client.md): what a CI job branches on.
export const EXIT = {
  /** Every task succeeded (or the command did what it was asked). */
  ok: 0,
  /** The swarm ended with some task not succeeded. */
  notAllSucceeded: 1,
  /** Bad arguments, a missing token or URL, an unreadable spec file. */
  usage: 2,
  /** The API refused the request or could not be reached. */
  api: 3,
} as const;

/** A usage or configuration problem: the CLI exits 2 with this message. */
export class UsageError extends Error {}
