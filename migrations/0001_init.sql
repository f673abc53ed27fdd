-- edgeswarm D1 schema v1: the swarm index, the token ledger and cron schedules.
-- Documented column by column in docs/data.md. Times are epoch milliseconds (UTC).

-- One row per swarm: written by the orchestrator when the swarm starts, updated by its
-- SwarmRoom in the same batched flush as the ledger rows.
CREATE TABLE swarms (
  id                TEXT PRIMARY KEY,            -- sw_…
  tenant            TEXT NOT NULL,               -- id of the API token that created it
  name              TEXT NOT NULL,
  model             TEXT NOT NULL,
  state             TEXT NOT NULL,               -- running | completed | completed_with_failures | failed | cancelled
  task_count        INTEGER NOT NULL,
  origin            TEXT NOT NULL,               -- api | schedule:<schedule id>
  metadata          TEXT,                        -- JSON object from the spec, or NULL
  created_at        INTEGER NOT NULL,
  finished_at       INTEGER,
  succeeded         INTEGER NOT NULL DEFAULT 0,
  failed            INTEGER NOT NULL DEFAULT 0,
  cancelled         INTEGER NOT NULL DEFAULT 0,
  skipped_budget    INTEGER NOT NULL DEFAULT 0,
  calls             INTEGER NOT NULL DEFAULT 0,
  prompt_tokens     INTEGER NOT NULL DEFAULT 0,
  cached_tokens     INTEGER NOT NULL DEFAULT 0,
  completion_tokens INTEGER NOT NULL DEFAULT 0,
  total_tokens      INTEGER NOT NULL DEFAULT 0,
  cost_usd          REAL NOT NULL DEFAULT 0
);
CREATE INDEX swarms_by_tenant ON swarms (tenant, created_at DESC, id DESC);

-- One row per upstream model call, keyed by the deterministic call id. Rows are flushed from the
-- SwarmRoom in batches with INSERT OR IGNORE, so a repeated flush never double-counts.
CREATE TABLE ledger (
  call_id           TEXT PRIMARY KEY,            -- swarm:task:attempt:turn
  swarm_id          TEXT NOT NULL,
  task_id           TEXT NOT NULL,
  attempt           INTEGER NOT NULL,
  turn              INTEGER NOT NULL,
  tenant            TEXT NOT NULL,
  model             TEXT NOT NULL,
  status            TEXT NOT NULL,               -- ok | error
  error_class       TEXT,                        -- see docs/data.md; NULL when status = ok
  prompt_tokens     INTEGER,                     -- NULL: the upstream reported no usage
  cached_tokens     INTEGER,                     -- part of prompt_tokens
  completion_tokens INTEGER,
  reasoning_tokens  INTEGER,                     -- part of completion_tokens
  total_tokens      INTEGER,
  cost_usd          REAL,                        -- NULL: no usage, or no price for the model
  latency_ms        INTEGER NOT NULL,
  created_at        INTEGER NOT NULL             -- when the call started
);
CREATE INDEX ledger_by_swarm ON ledger (swarm_id);
CREATE INDEX ledger_by_time ON ledger (created_at);
CREATE INDEX ledger_by_tenant_time ON ledger (tenant, created_at);

-- Saved swarm specs that cron starts. scheduled() runs every minute and starts each enabled
-- schedule whose cron matches; last_run_minute makes a repeated trigger in the same minute a no-op.
CREATE TABLE schedules (
  id                TEXT PRIMARY KEY,            -- sch_…
  tenant            TEXT NOT NULL,
  name              TEXT NOT NULL,
  cron              TEXT NOT NULL,               -- 5-field UTC cron expression
  spec              TEXT NOT NULL,               -- the swarm spec, JSON
  enabled           INTEGER NOT NULL DEFAULT 1,
  created_at        INTEGER NOT NULL,
  last_run_minute   INTEGER,                     -- epoch minute of the last start
  last_swarm_id     TEXT
);
CREATE INDEX schedules_by_tenant ON schedules (tenant, created_at DESC);
