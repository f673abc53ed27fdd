// `npm run bench:trace-logs -- LOG...`: saved outputs of `npm run bench -- --trace`, read back: each
// run's comparison again (with the pairing of this checkout), then all runs' swarms together, each
// run's pairs kept to itself. Several benches of one commit on a noisy machine settle what one
// cannot. No stack: it only reads the files.
import { readFileSync } from "node:fs";
import { newProgram, parseOrExit } from "./lib/parse-options.ts";
import { toErrorMessage } from "../src/core/error-message.ts";
import { compareTracedRuns, formatTraceComparison, parseTracedRounds } from "./lib/trace-comparison.ts";

/** Issue "Traces where teams already look": CPU a task traced ≤ 1.05× untraced. */
const TARGET = 1.05;

const program = newProgram("npm run bench:trace-logs --")
  .description("Saved outputs of `npm run bench -- --trace`, read back: each run's comparison, then all runs' swarms together. No stack.")
  .argument("<LOG...>", "saved outputs of npm run bench -- --trace");
parseOrExit(program);
const files = program.args;

function readLog(file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch (error) {
    console.error(`cannot read ${file}: ${toErrorMessage(error)}`);
    process.exit(2);
  }
}
const runs = files.map((file) => ({ file, rounds: parseTracedRounds(readLog(file)) }));
const pooled = files.length > 1 ? [{ file: `all ${files.length} runs`, rounds: null }] : [];
for (const { file, rounds } of [...runs, ...pooled]) {
  const comparison = compareTracedRuns(rounds === null ? runs.map((run) => run.rounds) : [rounds], { target: TARGET });
  console.log(`${file}:`);
  if (comparison === null) console.log("  no comparison: a side has no swarm");
  else for (const line of formatTraceComparison(comparison, TARGET)) console.log(line);
}
