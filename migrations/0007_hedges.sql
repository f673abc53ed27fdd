-- edgeswarm D1 schema v7: hedged calls (limits.hedge, docs/data.md). A turn's backup call is a ledger
-- row of its own (call id `swarm:task:attempt:turn:h`); `hedge` marks it, so a report can price the
-- backups apart from the calls they backed up.
ALTER TABLE ledger ADD COLUMN hedge INTEGER NOT NULL DEFAULT 0;
