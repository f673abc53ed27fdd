-- edgeswarm D1 schema v2: tenants, their API keys (hashed, never the secret) and the audit trail.
-- Documented column by column in docs/data.md. Times are epoch milliseconds (UTC).

-- One row per tenant. `tn_default` always exists: the API_TOKENS secret's tokens (and the token
-- `npm start` prints) are admin keys of it, so a setup from before tenants keeps working.
CREATE TABLE tenants (
  id                TEXT PRIMARY KEY,            -- tn_… (tn_default for the default tenant)
  name              TEXT NOT NULL,
  limits            TEXT NOT NULL DEFAULT '{}',  -- JSON: rpm, max_concurrent_swarms, max_tasks_per_swarm, monthly_usd, models
  created_at        INTEGER NOT NULL,
  updated_at        INTEGER NOT NULL,
  deleted_at        INTEGER                      -- set by DELETE /v1/tenants/:id; its keys are revoked with it
);
INSERT INTO tenants (id, name, limits, created_at, updated_at) VALUES ('tn_default', 'default', '{}', 0, 0);

-- One row per API key. The key itself is shown once (create, rotate) and never stored: `secret_hash`
-- is the SHA-256 of the whole key, `prefix` its first characters, by which a presented key is found.
CREATE TABLE api_keys (
  id                TEXT PRIMARY KEY,            -- key_…
  tenant_id         TEXT NOT NULL REFERENCES tenants (id),
  name              TEXT NOT NULL,
  scopes            TEXT NOT NULL,               -- JSON array of admin | run | read
  prefix            TEXT NOT NULL,               -- es_<live|local>_ + 8 hex chars: public, shown in listings
  secret_hash       TEXT NOT NULL,               -- lowercase hex SHA-256 of the whole key
  rpm               INTEGER,                     -- the key's own API requests a minute (under the tenant's); NULL = only the tenant's
  expires_at        INTEGER,                     -- NULL = never
  created_at        INTEGER NOT NULL,
  rotated_at        INTEGER,
  revoked_at        INTEGER                      -- NULL = live; a revoked key is refused on the next request
);
CREATE UNIQUE INDEX api_keys_by_prefix ON api_keys (prefix);
CREATE INDEX api_keys_by_tenant ON api_keys (tenant_id, created_at DESC);

-- Who did what: key, tenant and swarm lifecycle events. Never holds a key secret or a request body.
CREATE TABLE audit_log (
  id                TEXT PRIMARY KEY,            -- aud_…
  tenant_id         TEXT NOT NULL,               -- the tenant the event concerns
  actor_key_id      TEXT,                        -- key_… (or key_env_… for an API_TOKENS token); NULL for cron
  action            TEXT NOT NULL,               -- key.created | key.rotated | key.revoked | tenant.created | tenant.updated | tenant.deleted | swarm.started | swarm.cancelled | swarm.rerun
  target_id         TEXT NOT NULL,               -- the key, tenant or swarm id
  request_id        TEXT,                        -- the request's id (X-Request-Id); NULL for cron
  details           TEXT NOT NULL DEFAULT '{}',  -- JSON: names, scopes, changed limit names; never a secret
  created_at        INTEGER NOT NULL
);
CREATE INDEX audit_by_tenant_time ON audit_log (tenant_id, created_at DESC, id DESC);
CREATE INDEX audit_by_time ON audit_log (created_at DESC, id DESC);
