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
