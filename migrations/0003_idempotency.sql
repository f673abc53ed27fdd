-- edgeswarm D1 schema v3: Idempotency-Key on the POSTs that start something (docs/data.md).
-- One row per tenant and key, kept 24 h: the request's fingerprint and, once it answered, its
-- response, which a retry with the same key and request gets again.
CREATE TABLE idempotency_keys (
  tenant       TEXT NOT NULL,
  key          TEXT NOT NULL,                  -- the Idempotency-Key header, as sent (1-200 printable ASCII)
  fingerprint  TEXT NOT NULL,                  -- SHA-256 hex of method, path, query and body
  status       INTEGER,                        -- the response's HTTP status; NULL while the first request runs
  response     TEXT,                           -- the response body (JSON)
  location     TEXT,                           -- its Location header, if any
  created_at   INTEGER NOT NULL,
  expires_at   INTEGER NOT NULL,
  PRIMARY KEY (tenant, key)
);
CREATE INDEX idempotency_keys_by_expiry ON idempotency_keys (expires_at);
