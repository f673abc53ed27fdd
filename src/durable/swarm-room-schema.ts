// The SwarmRoom's SQLite schema (one database per swarm). Documented in docs/data.md.
// Versioned in `schema_version` (Durable Object SQLite refuses `PRAGMA user_version` with
// SQLITE_AUTH): a new version appends statements, never edits old ones.

const SCHEMA_V1 = `
CREATE TABLE IF NOT EXISTS swarm (
  id              TEXT PRIMARY KEY,
  tenant          TEXT NOT NULL,
  name            TEXT NOT NULL,
  model           TEXT NOT NULL,
  system          TEXT,
  limits          TEXT NOT NULL,
  response_format TEXT,
  metadata        TEXT,
  origin          TEXT NOT NULL,
  state           TEXT NOT NULL,
  window          INTEGER NOT NULL,
  task_count      INTEGER NOT NULL,
  created_at      INTEGER NOT NULL,
  finished_at     INTEGER,
  index_dirty     INTEGER NOT NULL DEFAULT 1
);
CREATE TABLE IF NOT EXISTS tasks (
  seq           INTEGER PRIMARY KEY,
  id            TEXT NOT NULL UNIQUE,
  prompt        TEXT NOT NULL,
  state         TEXT NOT NULL,
  attempts      INTEGER NOT NULL DEFAULT 0,
  deadline      INTEGER,
  retry_at      INTEGER,
  output        TEXT,
  finish_reason TEXT,
  error_class   TEXT,
  error_message TEXT,
  started_at    INTEGER,
  finished_at   INTEGER
);
CREATE INDEX IF NOT EXISTS tasks_by_state ON tasks (state, seq);
CREATE INDEX IF NOT EXISTS tasks_by_deadline ON tasks (deadline) WHERE deadline IS NOT NULL;
CREATE TABLE IF NOT EXISTS calls (
  call_id           TEXT PRIMARY KEY,
  task_id           TEXT NOT NULL,
  attempt           INTEGER NOT NULL,
  turn              INTEGER NOT NULL,
  model             TEXT NOT NULL,
  status            TEXT NOT NULL,
  error_class       TEXT,
  prompt_tokens     INTEGER,
  cached_tokens     INTEGER,
  completion_tokens INTEGER,
  reasoning_tokens  INTEGER,
  total_tokens      INTEGER,
  cost_usd          REAL,
  latency_ms        INTEGER NOT NULL,
  created_at        INTEGER NOT NULL,
  flushed           INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS calls_by_task ON calls (task_id);
CREATE INDEX IF NOT EXISTS calls_unflushed ON calls (flushed) WHERE flushed = 0;
`;

// v2 (resilience): fallback models, the adaptive window's credit, the retry budget, why the swarm
// waits or ended, long tasks and the model of a task's current attempt, circuit breakers per model.
const SCHEMA_V2 = `
ALTER TABLE swarm ADD COLUMN fallback TEXT;
ALTER TABLE swarm ADD COLUMN window_credit REAL NOT NULL DEFAULT 0;
ALTER TABLE swarm ADD COLUMN retries_used INTEGER NOT NULL DEFAULT 0;
ALTER TABLE swarm ADD COLUMN reason TEXT;
ALTER TABLE tasks ADD COLUMN long INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN model TEXT;
CREATE TABLE IF NOT EXISTS circuits (
  model            TEXT PRIMARY KEY,
  state            TEXT NOT NULL,
  failures         INTEGER NOT NULL,
  first_failure_at INTEGER,
  opened_at        INTEGER,
  probes           INTEGER NOT NULL
);
`;

// v3: when the adaptive window last shrank (it shrinks at most once a second).
const SCHEMA_V3 = `
ALTER TABLE swarm ADD COLUMN window_decreased_at INTEGER;
`;

// v4 (economics): the weighted model mix, the budget, per-task reservations and per-call charges.
const SCHEMA_V4 = `
ALTER TABLE swarm ADD COLUMN model_mix TEXT;
ALTER TABLE swarm ADD COLUMN budget TEXT;
ALTER TABLE tasks ADD COLUMN reserved_usd REAL NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN reserved_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE calls ADD COLUMN charged_usd REAL NOT NULL DEFAULT 0;
ALTER TABLE calls ADD COLUMN charged_tokens INTEGER NOT NULL DEFAULT 0;
`;

// v5: the tenant month the swarm reserved against, and whether it has settled there.
const SCHEMA_V5 = `
ALTER TABLE swarm ADD COLUMN tenant_month TEXT;
ALTER TABLE swarm ADD COLUMN tenant_settled INTEGER NOT NULL DEFAULT 0;
`;

// v6: the spec's reducer (JSON; NULL = collect).
const SCHEMA_V6 = `
ALTER TABLE swarm ADD COLUMN reduce TEXT;
`;

// v7 (agents): task kinds (the planner's and the reducers' calls run as tasks), per-turn
// checkpoints, engine tasks' model and settings, the tools, the goal and its plan, the llm
// reduction's progress, and the scratchpad the swarm's agents share.
const SCHEMA_V7 = `
ALTER TABLE tasks ADD COLUMN kind TEXT NOT NULL DEFAULT 'task';
ALTER TABLE tasks ADD COLUMN checkpoint TEXT;
ALTER TABLE tasks ADD COLUMN model_hint TEXT;
ALTER TABLE tasks ADD COLUMN override TEXT;
ALTER TABLE tasks ADD COLUMN tool_calls INTEGER NOT NULL DEFAULT 0;
ALTER TABLE swarm ADD COLUMN tools TEXT;
ALTER TABLE swarm ADD COLUMN http_allowlist TEXT;
ALTER TABLE swarm ADD COLUMN parallel_tool_calls INTEGER;
ALTER TABLE swarm ADD COLUMN goal TEXT;
ALTER TABLE swarm ADD COLUMN planner TEXT;
ALTER TABLE swarm ADD COLUMN plan_attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE swarm ADD COLUMN plan_errors TEXT;
ALTER TABLE swarm ADD COLUMN reduction TEXT;
CREATE INDEX IF NOT EXISTS tasks_by_kind ON tasks (kind, state, seq);
CREATE TABLE IF NOT EXISTS scratchpad (
  key        TEXT PRIMARY KEY,
  value      TEXT NOT NULL,
  task_id    TEXT NOT NULL,
  updated_at INTEGER NOT NULL
);
`;

// v8 (continuous pull): fewer rows written per task. The ledger flush keeps a high-water mark of
// the calls it sent (calls are appended in rowid order and never deleted) instead of marking each
// row, so a call costs no second write and no partial index; the kind index keeps only engine
// tasks (plan, reduce), so a sub-task's state changes write no entry in it. Durable Object SQLite
// bills every row written, indexes included.
const SCHEMA_V8 = `
CREATE TABLE IF NOT EXISTS ledger_sync (id INTEGER PRIMARY KEY CHECK (id = 1), flushed_rowid INTEGER NOT NULL);
INSERT OR IGNORE INTO ledger_sync (id, flushed_rowid)
  SELECT 1, COALESCE((SELECT MIN(rowid) - 1 FROM calls WHERE flushed = 0), (SELECT MAX(rowid) FROM calls), 0);
DROP INDEX IF EXISTS calls_unflushed;
DROP INDEX IF EXISTS tasks_by_kind;
CREATE INDEX IF NOT EXISTS tasks_by_engine_kind ON tasks (kind, state, seq) WHERE kind != 'task';
`;

// v9 (nothing lost when the machine dies): a task's lease (`deadline`) is short and renewed by its
// lane's heartbeats, bounded by `run_until`; every model call is noted in `open_calls` before it
// is sent, so a call whose outcome dies with its lane becomes an `unknown` ledger row, not nothing.
// `open_calls` has no index beside its key: it holds the calls in flight (about the window), so a
// scan is cheap, and an index would double the rows each call writes (Durable Object SQLite bills
// every row written, index entries included).
const SCHEMA_V9 = `
ALTER TABLE tasks ADD COLUMN run_until INTEGER;
CREATE TABLE IF NOT EXISTS open_calls (
  call_id       TEXT PRIMARY KEY,
  task_id       TEXT NOT NULL,
  attempt       INTEGER NOT NULL,
  turn          INTEGER NOT NULL,
  model         TEXT NOT NULL,
  prompt_tokens INTEGER NOT NULL,
  max_tokens    INTEGER NOT NULL,
  started_at    INTEGER NOT NULL,
  lane          TEXT,
  note_until    INTEGER
);
`;

// v10 (standby tasks, src/core/standby.ts): a running task with `standby = 1` is leased to its lane
// outside the window, not started yet; the lane starts it in the place of a task that ended.
const SCHEMA_V10 = `
ALTER TABLE tasks ADD COLUMN standby INTEGER NOT NULL DEFAULT 0;
`;

// v11: no index on the lease's end. Only running tasks hold one (the grant sets it, a heartbeat moves
// it, every other transition clears it), so the alarm finds lapsed leases through tasks_by_state,
// among the running tasks (about the window), while each grant, heartbeat and end wrote one or two
// more index rows for it (Durable Object SQLite bills every row written, index entries included).
const SCHEMA_V11 = `
DROP INDEX IF EXISTS tasks_by_deadline;
`;

// v12 (limits.hedge): a turn's backup call is a ledger row of its own (call id `…:turn:h`), marked
// 1 (its answer was not kept) or 2 (it was); the index holds the backups only.
const SCHEMA_V12 = `
ALTER TABLE calls ADD COLUMN hedge INTEGER NOT NULL DEFAULT 0;
CREATE INDEX IF NOT EXISTS calls_hedged ON calls (hedge) WHERE hedge >= 1;
`;

// v13 (MCP servers): the catalog pinned at submit (src/core/mcp-catalog.ts PinnedMcpServer[], JSON;
// NULL = no MCP server): each server's url, era and tools with a hash per tool definition.
const SCHEMA_V13 = `
ALTER TABLE swarm ADD COLUMN mcp_catalog TEXT;
`;

// v14 (fail fast, src/core/failure-streak.ts): the swarm's run of the same permanent failure, as JSON.
const SCHEMA_V14 = `
ALTER TABLE swarm ADD COLUMN failure_streak TEXT;
`;

// v15 (prompt-cache warm-up, src/durable/swarm-warmup.ts): NULL = no task is held; 0 = the first
// task is yet to be granted; above 0 = the rest are held until then (epoch ms) or a call is recorded.
const SCHEMA_V15 = `
ALTER TABLE swarm ADD COLUMN warmup_until INTEGER;
`;

// v16 (batches, the OpenAI Batch API): a batch's swarm names its input file's R2 key; each task's
// prompt is then the byte range of its line in that file ("offset:length"), read when it runs.
const SCHEMA_V16 = `
ALTER TABLE swarm ADD COLUMN batch_input TEXT;
`;

// v17 (batch parts, src/durable/swarm-batch-output.ts): a batch swarm's lines that ended and are
// not yet in a part (filled by the trigger batch_line_ended, created for batch swarms only), and the
// parts written so far of each file ('output', 'error').
const SCHEMA_V17 = `
CREATE TABLE IF NOT EXISTS batch_ended (seq INTEGER PRIMARY KEY);
CREATE TABLE IF NOT EXISTS batch_parts (
  kind  TEXT PRIMARY KEY,
  parts INTEGER NOT NULL,
  lines INTEGER NOT NULL,
  bytes INTEGER NOT NULL
);
`;

// v18: two rows fewer written a call (Durable Object SQLite bills every row written, index entries
// included: docs/data.md). A ledger row wrote three (the row, its call_id key, calls_by_task) and a
// noted call two (the row, its call_id key). A task's calls are found by a range of call ids
// instead of calls_by_task (call ids are `swarm:task:attempt:turn[:h]`, task ids hold no ':':
// src/core/ids.ts callIdRange), and `open_calls` is keyed by its call id alone (WITHOUT ROWID: the
// table is its key's B-tree). `calls` keeps its rowid: the ledger flush walks it in rowid order.
const SCHEMA_V18 = `
DROP INDEX IF EXISTS calls_by_task;
CREATE TABLE open_calls_v18 (
  call_id       TEXT PRIMARY KEY,
  task_id       TEXT NOT NULL,
  attempt       INTEGER NOT NULL,
  turn          INTEGER NOT NULL,
  model         TEXT NOT NULL,
  prompt_tokens INTEGER NOT NULL,
  max_tokens    INTEGER NOT NULL,
  started_at    INTEGER NOT NULL,
  lane          TEXT,
  note_until    INTEGER
) WITHOUT ROWID;
INSERT INTO open_calls_v18 (call_id, task_id, attempt, turn, model, prompt_tokens, max_tokens, started_at, lane, note_until)
  SELECT call_id, task_id, attempt, turn, model, prompt_tokens, max_tokens, started_at, lane, note_until FROM open_calls;
DROP TABLE open_calls;
ALTER TABLE open_calls_v18 RENAME TO open_calls;
`;

const MIGRATIONS: readonly string[] = [
  SCHEMA_V1,
  SCHEMA_V2,
  SCHEMA_V3,
  SCHEMA_V4,
  SCHEMA_V5,
  SCHEMA_V6,
  SCHEMA_V7,
  SCHEMA_V8,
  SCHEMA_V9,
  SCHEMA_V10,
  SCHEMA_V11,
  SCHEMA_V12,
  SCHEMA_V13,
  SCHEMA_V14,
  SCHEMA_V15,
  SCHEMA_V16,
  SCHEMA_V17,
  SCHEMA_V18,
];

/** Brings the room's database to the newest schema; cheap when it is already there. */
export function migrateSwarmRoom(sql: SqlStorage): void {
  sql.exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)");
  const current = sql.exec<{ version: number }>("SELECT version FROM schema_version").toArray()[0]?.version ?? 0;
  for (let version = current; version < MIGRATIONS.length; version += 1) {
    sql.exec(MIGRATIONS[version] ?? "");
  }
  if (current < MIGRATIONS.length) {
    sql.exec("DELETE FROM schema_version");
    sql.exec("INSERT INTO schema_version (version) VALUES (?)", MIGRATIONS.length);
  }
}
