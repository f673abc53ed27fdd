-- edgeswarm D1 schema v4: files for the OpenAI-compatible Files and Batch API (docs/data.md).
-- A file's bytes are one R2 object (FILES_BUCKET, key `files/<tenant>/<id>`); this row is its index.
CREATE TABLE files (
  id          TEXT PRIMARY KEY,               -- file-<24 base32>
  tenant      TEXT NOT NULL,
  purpose     TEXT NOT NULL,                  -- batch | batch_output | user_data …
  filename    TEXT NOT NULL,
  bytes       INTEGER NOT NULL,
  created_at  INTEGER NOT NULL                -- epoch ms
);
CREATE INDEX files_by_tenant ON files (tenant, created_at DESC, id DESC);

-- A batch (POST /v1/batches): OpenAI's Batch object over a swarm whose tasks are the input file's
-- lines. Status, counts and file ids are kept here; usage is read from the swarm (its ledger sums).
CREATE TABLE batches (
  id                 TEXT PRIMARY KEY,        -- batch_<24 base32>
  tenant             TEXT NOT NULL,
  input_file_id      TEXT NOT NULL,
  endpoint           TEXT NOT NULL,
  completion_window  TEXT NOT NULL,
  metadata           TEXT,                    -- the user's metadata (JSON object of strings)
  swarm_id           TEXT,                    -- NULL until the file has been validated
  status             TEXT NOT NULL,           -- validating | failed | in_progress | finalizing | completed | expired | cancelling | cancelled
  errors             TEXT,                    -- JSON array of { code, message, line, param } when validation failed
  output_file_id     TEXT,
  error_file_id      TEXT,
  total              INTEGER NOT NULL DEFAULT 0,
  completed          INTEGER NOT NULL DEFAULT 0,
  failed             INTEGER NOT NULL DEFAULT 0,
  created_at         INTEGER NOT NULL,        -- epoch ms, as every *_at here
  in_progress_at     INTEGER,
  expires_at         INTEGER NOT NULL,
  finalizing_at      INTEGER,
  completed_at       INTEGER,
  failed_at          INTEGER,
  expired_at         INTEGER,
  cancelling_at      INTEGER,
  cancelled_at       INTEGER
);
CREATE INDEX batches_by_tenant ON batches (tenant, created_at DESC, id DESC);
