// Orchestrator Worker entry: wires the HTTP app, the cron handler and the Durable Object classes.
import { createApp } from "./app.ts";
import { scheduled } from "./scheduled.ts";

export { KeyPool } from "../../src/durable/key-pool.ts";
export { SwarmRoom } from "../../src/durable/swarm-room.ts";
export { TenantBudget } from "../../src/durable/tenant-budget.ts";
export { TenantLimiter } from "../../src/durable/tenant-limiter.ts";

const app = createApp();

export default {
  fetch: app.fetch,
  scheduled,
} satisfies ExportedHandler<Env>;
