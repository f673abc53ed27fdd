// Parses a script's command line with its commander program, the scripts' one convention: commander
// prints the help, or the error and then the help; --help exits 0, anything else it refused exits 2.
import { CommanderError, type Command } from "commander";

/** `program` must be built with `.showHelpAfterError().exitOverride()`. */
export function parseOrExit(program: Command): void {
  try {
    program.parse();
  } catch (error) {
    if (error instanceof CommanderError) process.exit(error.exitCode === 0 ? 0 : 2);
    throw error;
  }
}
