-- edgeswarm D1 schema v12: one row fewer written a model call. D1 bills every row written, index
-- entries included ("Rows written … $1.00 / million" after the first 50 million a month:
-- developers.cloudflare.com/d1/platform/pricing/). `ledger_by_time (created_at)` served no query:
-- usage reports and the tenant's month walk `ledger_by_tenant_time`, a swarm's rows `ledger_by_swarm`
-- (docs/data.md, "D1: ledger"). A ledger row now writes four rows: itself, its call_id key and two
-- index entries.
DROP INDEX IF EXISTS ledger_by_time;
