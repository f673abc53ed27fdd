// The Worker's `scheduled` handler. wrangler.toml fires it every minute; runSchedules decides which
// saved schedules start, and wakeSwarms resumes any unfinished swarm whose alarm was lost. Locally cron never fires by itself: with `wrangler dev` running, trigger it with
// `curl "http://127.0.0.1:8787/cdn-cgi/handler/scheduled?cron=*+*+*+*+*"`.
import { composeDeps } from "./composition.ts";
import { runSchedules } from "./run-schedules.ts";
import { wakeSwarms } from "./wake-swarms.ts";

/** Expired Idempotency-Key records dropped per tick at most. */
const IDEMPOTENCY_PURGE_LIMIT = 1_000;

export const scheduled: ExportedHandlerScheduledHandler<Env> = async (controller, env) => {
  const deps = composeDeps(env);
  const outcomes = await runSchedules(deps, { scheduledTime: controller.scheduledTime, cron: controller.cron });
  const started = outcomes.filter((o) => o.kind === "started").length;
  const failed = outcomes.filter((o) => o.kind === "failed").length;
  const wake = await wakeSwarms(deps);
  const purged = await deps.idempotency.purgeExpired(controller.scheduledTime, IDEMPOTENCY_PURGE_LIMIT);
  console.log(
    `cron "${controller.cron}" at ${new Date(controller.scheduledTime).toISOString()}: ${outcomes.length} due, ${started} started, ${failed} failed; ` +
      `${wake.checked} unfinished swarms, ${wake.woken} woken, ${wake.failed} unreachable; ${purged} expired idempotency keys dropped`,
  );
};
