// The bench's runners as child processes: one reads its options as JSON on stdin and writes its
// result as JSON on stdout, so that its CPU figure (process.cpuUsage) is its own, not the bench's
// or the mock model's it talks to. Used by the promise pool and the bare client.
import { spawn } from "node:child_process";
import type { z } from "zod";

/** Runs `script` under this Node with `input` on stdin; its stdout, parsed by `schema`, is the result. */
export async function runJsonChild<T>(script: string, input: unknown, schema: z.ZodType<T>, nodeArgs: readonly string[] = []): Promise<T> {
  const child = spawn(process.execPath, [...nodeArgs, script], { stdio: ["pipe", "pipe", "inherit"] });
  let out = "";
  child.stdout.on("data", (chunk: Buffer) => {
    out += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  child.stdin.end(JSON.stringify(input));
  const code = await exited;
  if (code !== 0) throw new Error(`${script} exited with code ${code}: ${out.slice(-2_000)}`);
  return schema.parse(JSON.parse(out));
}

/** The child's side: reads the options from stdin, parses them with `schema`, runs, writes the result. */
export async function serveJsonChild<I, O>(schema: z.ZodType<I>, run: (input: I) => Promise<O>): Promise<void> {
  let input = "";
  for await (const chunk of process.stdin) input += String(chunk);
  const result = await run(schema.parse(JSON.parse(input)));
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
