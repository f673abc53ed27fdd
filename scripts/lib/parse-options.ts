// Parses a script's command line with its commander program, the scripts' one convention: commander
// prints the help, or the error and then the help; --help exits 0, anything else it refused exits 2.
import { Command, CommanderError } from "commander";

/**
 * A script's program, named as its user types it (`npm run bench --`): add its description, options
 * and arguments, then `parseOrExit` it. An error prints the help after it; commander throws instead
 * of exiting, so `parseOrExit` decides the exit code.
 */
export function newProgram(name: string): Command {
  return new Command(name).showHelpAfterError().exitOverride();
}

/** `program` must come from `newProgram` (or be built with `.showHelpAfterError().exitOverride()`). */
export function parseOrExit(program: Command): void {
  try {
    program.parse();
  } catch (error) {
    if (error instanceof CommanderError) process.exit(error.exitCode === 0 ? 0 : 2);
    throw error;
  }
}
