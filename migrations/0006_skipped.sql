-- edgeswarm D1 schema v6: the swarms index counts tasks skipped by fail fast
-- (limits.stop_after_failures: a run of the same permanent failure stopped dispatch), next to
-- skipped_budget (docs/data.md).
ALTER TABLE swarms ADD COLUMN skipped INTEGER NOT NULL DEFAULT 0;
