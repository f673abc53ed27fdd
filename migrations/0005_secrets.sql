-- Tenant secrets (PUT /v1/secrets/:name): values an MCP server's `credential` names, sent as
-- `Authorization: Bearer`. Only ciphertext is stored: AES-256-GCM under a key derived per tenant
-- (HKDF-SHA-256) from the SECRETS_KEY Worker secret, with `<tenant>:<name>` as additional data, so a
-- row copied to another tenant or name does not decrypt (src/secrets/secret-box.ts).
CREATE TABLE IF NOT EXISTS tenant_secrets (
  tenant_id  TEXT NOT NULL,
  name       TEXT NOT NULL,
  iv         TEXT NOT NULL,
  ciphertext TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (tenant_id, name)
);
