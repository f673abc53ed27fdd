// The body of POST /v1/schedules: a name, a 5-field UTC cron expression and the swarm spec it starts.
// No I/O. Validation reports every problem at once, with paths as sent (`cron`, `spec.tasks.0.prompt`).
import { z } from "zod";
import { parseCron, type CronSchedule } from "./cron.ts";
import { toIssuePath, type ErrorDetail } from "./errors.ts";
import { parseSwarmSpec, type PlannedSwarm } from "./parse-swarm-spec.ts";
import { err, ok, type Result } from "./result.ts";

export const ScheduleInputSchema = z.strictObject({
  name: z.string().min(1).max(100),
  // Printable ASCII only: JavaScript's \s would otherwise let a no-break space pass as a field separator.
  cron: z
    .string()
    .min(1)
    .max(200)
    .regex(/^[\x20-\x7e]*$/, "a cron expression is printable ASCII"),
  // Checked by parseSwarmSpec, so its issues read exactly as those of POST /v1/swarms.
  spec: z.unknown(),
  enabled: z.boolean().default(true),
});

export interface ScheduleInput {
  name: string;
  cron: CronSchedule;
  swarm: PlannedSwarm;
  enabled: boolean;
}

export function parseScheduleInput(input: unknown): Result<ScheduleInput, ErrorDetail[]> {
  const details: ErrorDetail[] = [];
  const envelope = ScheduleInputSchema.safeParse(input);
  if (!envelope.success) {
    details.push(...envelope.error.issues.map((issue) => ({ path: toIssuePath(issue.path), message: issue.message })));
  }
  const fields: Record<string, unknown> = typeof input === "object" && input !== null && !Array.isArray(input) ? { ...input } : {};

  // The envelope already reports a cron that is not a string of sane length; the parser reports the rest.
  const cronText = fields.cron;
  const cron = typeof cronText === "string" && cronText.length > 0 && cronText.length <= 200 ? parseCron(cronText) : null;
  if (cron !== null && !cron.ok) details.push({ path: "cron", message: cron.error });

  // A missing spec is the envelope's issue (zod 4 requires a z.unknown() key); a present one is checked here.
  const swarm = "spec" in fields ? parseSwarmSpec(fields.spec, ["spec"]) : null;
  if (swarm !== null && !swarm.ok) details.push(...swarm.error);

  if (!envelope.success || cron === null || !cron.ok || swarm === null || !swarm.ok) return err(details);
  return ok({ name: envelope.data.name, cron: cron.value, swarm: swarm.value, enabled: envelope.data.enabled });
}
