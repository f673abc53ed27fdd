// The request bodies and queries of /v1/tenants, /v1/keys and /v1/audit, validated here so the
// handlers stay thin. No I/O; the clock is passed in. Errors are ErrorDetails with their paths.
import { z } from "zod";
import { ScopesSchema, type Scope } from "./api-scopes.ts";
import { toIssueDetails, type ErrorDetail } from "./errors.ts";
import { err, ok, type Result } from "./result.ts";
import { KeyRpmSchema, TenantLimitsPatchSchema, TenantLimitsSchema, type TenantLimits, type TenantLimitsPatch } from "./tenant-limits.ts";

/** A human label: 1–100 characters, no control characters. */
const NameSchema = z
  .string()
  .trim()
  .min(1, "must not be empty")
  .max(100)
  .regex(/^[^\p{Cc}]*$/u, "must not contain control characters");

const TenantIdSchema = z.string().regex(/^tn_[a-z0-9]{1,40}$/, "not a tenant id (tn_…)");

export const TenantCreateSchema = z.strictObject({
  name: NameSchema,
  limits: TenantLimitsSchema.default({}),
});
export type TenantCreate = z.infer<typeof TenantCreateSchema>;

export const TenantPatchSchema = z
  .strictObject({ name: NameSchema.optional(), limits: TenantLimitsPatchSchema.partial().optional() })
  .refine((patch) => patch.name !== undefined || patch.limits !== undefined, "give name or limits");
export type TenantPatch = { name?: string; limits?: Partial<TenantLimitsPatch> };

export const KeyCreateSchema = z.strictObject({
  tenant_id: TenantIdSchema,
  name: NameSchema,
  scopes: ScopesSchema,
  expires_at: z.iso.datetime({ offset: true, message: "must be an ISO 8601 date-time, e.g. 2027-01-31T00:00:00Z" }).nullable().optional(),
  rpm: KeyRpmSchema.nullable().optional(),
});

export interface KeyCreate {
  tenantId: string;
  name: string;
  scopes: Scope[];
  /** Epoch ms; null = never. */
  expiresAt: number | null;
  rpm: number | null;
}

function parseWith<S extends z.ZodType>(schema: S, input: unknown): Result<z.output<S>, ErrorDetail[]> {
  const parsed = schema.safeParse(input);
  return parsed.success ? ok(parsed.data) : err(toIssueDetails(parsed.error));
}

export function parseTenantCreate(input: unknown): Result<{ name: string; limits: TenantLimits }, ErrorDetail[]> {
  return parseWith(TenantCreateSchema, input);
}

export function parseTenantPatch(input: unknown): Result<TenantPatch, ErrorDetail[]> {
  return parseWith(TenantPatchSchema, input);
}

/** A key that expires must expire in the future (`now`, epoch ms). */
export function parseKeyCreate(input: unknown, now: number): Result<KeyCreate, ErrorDetail[]> {
  const parsed = parseWith(KeyCreateSchema, input);
  if (!parsed.ok) return parsed;
  const { tenant_id, name, scopes, expires_at, rpm } = parsed.value;
  const expiresAt = expires_at === undefined || expires_at === null ? null : Date.parse(expires_at);
  if (expiresAt !== null && expiresAt <= now) return err([{ path: "expires_at", message: "must be in the future" }]);
  return ok({ tenantId: tenant_id, name, scopes, expiresAt, rpm: rpm ?? null });
}

const limitParam = z
  .string()
  .regex(/^\d{1,4}$/, "must be a whole number")
  .transform(Number)
  .pipe(z.number().int().min(1).max(500))
  .default(100);

export const AuditQuerySchema = z.strictObject({
  limit: limitParam,
  cursor: z
    .string()
    .regex(/^aud_[0-9a-f]{12}[a-z2-7]{8}$/, "not a cursor returned by this API")
    .optional(),
  tenant_id: TenantIdSchema.optional(),
});

export const KeyListQuerySchema = z.strictObject({ tenant_id: TenantIdSchema.optional() });
