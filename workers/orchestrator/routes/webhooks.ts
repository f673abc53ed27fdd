// /v1/webhooks/signing-key: the key the caller's swarms sign their webhook tool calls with, so the
// owner of a webhook can verify them (docs/agents-and-tools.md, "Verifying a webhook"). It is derived per tenant from the
// deployment's WEBHOOK_SECRET, which is never handed out.
import { Hono } from "hono";
import { ApiError } from "../../../src/core/errors.ts";
import { deriveWebhookKey, SIGNATURE_HEADER } from "../../../src/core/webhook-signature.ts";
import type { AppEnv } from "../app-env.ts";

export const webhookRoutes = new Hono<AppEnv>().get("/signing-key", async (c) => {
  const { deps, tenant } = c.var;
  const secret = deps.config.webhookSecret;
  if (secret === null)
    throw new ApiError("not_found", "webhook signing is not configured on this deployment (WEBHOOK_SECRET is unset), so webhook tools cannot be called");
  return c.json({
    tenant,
    key: await deriveWebhookKey(secret, tenant),
    header: SIGNATURE_HEADER,
    scheme: 't=<unix seconds>,v1=<lowercase hex HMAC-SHA256(key, "<t>.<raw body>")>',
  });
});
