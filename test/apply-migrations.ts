// Setup file for the Worker projects: applies the D1 migrations to the local ledger database.
import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";

await applyD1Migrations(env.LEDGER_DB, env.TEST_MIGRATIONS);
