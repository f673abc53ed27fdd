// Starts one swarm from a validated, planned spec: the single path shared by POST /v1/swarms and cron.
// The SwarmRoom stores the tasks, writes the D1 index row and starts dispatch; nothing is kept here.
import { admitSwarm } from "../../src/core/admit-swarm.ts";
import { ApiError } from "../../src/core/errors.ts";
import { checkToolTargets } from "../../src/core/tool-targets.ts";
import type { PinnedMcpServer } from "../../src/core/mcp-catalog.ts";
import type { PlannedSwarm } from "../../src/core/parse-swarm-spec.ts";
import { toModelLabel } from "../../src/core/route-model.ts";
import type { LanePrior, StartSwarmInput } from "../../src/core/swarm-contract.ts";
import type { TenantLimits } from "../../src/core/tenant-limits.ts";
import { checkTenantLimits } from "../../src/core/tenant-limits.ts";
import type { Context } from "hono";
import type { AppEnv } from "./app-env.ts";
import { recordAuditEvent, toAuditActor, type AuditActor } from "./audit-trail.ts";
import type { OrchestratorDeps } from "./composition.ts";

export type StartSwarmDeps = Pick<
  OrchestratorDeps,
  "swarmRooms" | "swarmIndex" | "newSwarmId" | "now" | "config" | "admission" | "audit" | "newAuditId" | "mcpCatalogs" | "secrets" | "secretBox"
>;

/** Whose swarm it is: the tenant, its limits as read on this request, and who asked (null: cron). */
export interface SwarmOwner {
  tenant: string;
  limits: TenantLimits;
  actor: AuditActor | null;
}

export interface StartOptions {
  /**
   * The id derived from the request's Idempotency-Key. A room that already exists under it was
   * started by an earlier request with the key (concurrent, or one that died before answering):
   * that swarm is the answer, and nothing starts twice.
   */
  keyedId?: string;
  /** A rerun's parent swarm (POST /v1/swarms/:id/rerun). */
  parentId?: string;
  /** A batch's input file (R2 key): the tasks' prompts are its lines' byte ranges. */
  batchInput?: string;
}

export async function startSwarm(
  deps: StartSwarmDeps,
  owner: SwarmOwner,
  swarm: PlannedSwarm,
  origin: StartSwarmInput["origin"],
  options: StartOptions = {},
): Promise<{ swarmId: string }> {
  const { tenant, limits } = owner;
  const { keyedId, parentId, batchInput } = options;
  requireReachableTools(swarm, deps.config);
  requireAdmission(swarm, deps, owner);
  await requireSwarmSlot(deps, owner);
  const mcpCatalog = await requireMcpCatalogs(swarm, deps, tenant);
  const swarmId = keyedId ?? deps.newSwarmId();
  const tenantCap = deps.admission(tenant, limits).tenantCap;
  const input: StartSwarmInput = { swarmId, tenant, spec: swarm.spec, tasks: swarm.tasks, createdAt: deps.now(), origin, tenantCap };
  const lanePrior = await readLanePrior(deps, tenant, swarm);
  if (lanePrior !== null) input.lanePrior = lanePrior;
  if (parentId !== undefined) input.parentId = parentId;
  if (mcpCatalog.length > 0) input.mcpCatalog = mcpCatalog;
  if (batchInput !== undefined) input.batchInput = batchInput;
  const { created, refused, code } = await deps.swarmRooms.start(input);
  // The room refuses what it cannot honour: a tenant whose monthly budget is spent (402), and again
  // (should the settings differ) what admission refuses (400).
  if (refused !== undefined && refused.length > 0) {
    if (code === "budget_exceeded") throw new ApiError("budget_exceeded", "this tenant's monthly budget is spent", refused);
    throw new ApiError("invalid_spec", "the swarm spec cannot be run as given", refused);
  }
  // 100 random bits make a collision practically impossible; if the room says otherwise, the id
  // source is broken, and that must be loud rather than hand the caller someone else's swarm.
  if (!created && keyedId === undefined) throw new Error(`SwarmRoom ${swarmId} already existed when it was started`);
  // Started by an earlier request with the same Idempotency-Key: that start was audited.
  if (!created) return { swarmId };
  // The swarm runs whatever happens next: a failed audit write must not answer 500 for a started
  // swarm (the client would start it again); it is logged, with the request id, for the operator.
  try {
    await recordAuditEvent(deps, owner.actor, {
      tenantId: tenant,
      action: "swarm.started",
      targetId: swarmId,
      details: { origin: origin.kind === "api" ? "api" : `schedule:${origin.scheduleId}`, tasks: swarm.tasks.length },
    });
  } catch (error) {
    console.error(`[${owner.actor?.requestId ?? "cron"}] audit write of swarm.started ${swarmId} failed`, error);
  }
  return { swarmId };
}

/**
 * Each MCP server's tool list is read once, here, and the spec's choice pinned for the swarm's life:
 * a server that cannot be read, a tool it lacks or a tool name used twice is a 400 naming
 * `mcp_servers.<i>…`. Runs before the room exists, so a refused spec leaves nothing behind.
 */
async function requireMcpCatalogs(
  swarm: PlannedSwarm,
  deps: Pick<StartSwarmDeps, "mcpCatalogs" | "secrets" | "secretBox">,
  tenant: string,
): Promise<PinnedMcpServer[]> {
  const servers = swarm.spec.mcp_servers ?? [];
  if (servers.length === 0) return [];
  const webhookNames = (swarm.spec.tools ?? []).flatMap((tool) => (typeof tool === "string" ? [] : [tool.name]));
  // A credential is the tenant's secret: its value opens here only for the one tool-list read; the
  // swarm keeps its ciphertext, which a lane opens in its own memory for its calls.
  const credential = async (name: string) => {
    const sealed = await deps.secrets.get(tenant, name);
    const bearer = sealed === null || deps.secretBox === null ? null : await deps.secretBox.open(tenant, name, sealed);
    return sealed === null || bearer === null ? null : { sealed, bearer };
  };
  const read = await deps.mcpCatalogs(servers, webhookNames, credential);
  if (!read.ok) throw new ApiError("invalid_spec", "the swarm's MCP servers cannot be used as given", read.error);
  return read.value;
}

/**
 * The tenant's latest measured lanes for this model (the room sizes its first lanes on them). A
 * prior only saves lanes: an index that cannot be read starts the swarm without one.
 */
async function readLanePrior(deps: Pick<StartSwarmDeps, "swarmIndex">, tenant: string, swarm: PlannedSwarm): Promise<LanePrior | null> {
  try {
    return await deps.swarmIndex.lanePrior(tenant, toModelLabel(swarm.spec.model));
  } catch (error) {
    console.error(`lane prior of tenant ${tenant} unreadable; starting without one`, error);
    return null;
  }
}

/** The swarm's owner when a request starts it: the caller's tenant, limits and key. */
export function toSwarmOwner(c: Context<AppEnv>): SwarmOwner {
  return { tenant: c.var.tenant, limits: c.var.caller.limits, actor: toAuditActor(c) };
}

/**
 * The tenant's `max_concurrent_swarms`, counted on the D1 index (the room writes its row as it starts).
 * Two starts racing for the last slot can both pass: the limit is a guard against runaway use, not
 * an exact semaphore.
 */
async function requireSwarmSlot(deps: Pick<OrchestratorDeps, "swarmIndex">, owner: SwarmOwner): Promise<void> {
  const max = owner.limits.max_concurrent_swarms;
  if (max === undefined) return;
  const active = await deps.swarmIndex.countActive(owner.tenant);
  if (active >= max) {
    throw new ApiError("conflict", `the tenant already runs ${active} swarms (max_concurrent_swarms: ${max}); wait for one to end or cancel one`, [
      { path: "max_concurrent_swarms", message: `${active} of ${max} running` },
    ]);
  }
}

/**
 * Tools that could only ever reach refused addresses are refused now (400), not as tool errors
 * later: when a swarm starts, and when a schedule is saved (`at` = where the spec sits in the body).
 */
export function requireReachableTools(swarm: PlannedSwarm, config: Pick<OrchestratorDeps["config"], "allowPrivateNetwork">, at = ""): void {
  const targets = checkToolTargets(swarm.spec, config.allowPrivateNetwork);
  if (targets.length > 0) {
    throw new ApiError(
      "invalid_spec",
      "the swarm's tools target addresses they may not reach",
      targets.map((p) => ({ ...p, path: `${at}${p.path}` })),
    );
  }
}

/**
 * A spec the engine cannot honour as configured (a model the gateway does not serve, a fallback tier
 * no gateway model has, a USD budget over a model without a price) is refused with 400 before any
 * SwarmRoom exists: when a swarm starts, and when a schedule is saved (`at` as above).
 */
export function requireAdmission(swarm: PlannedSwarm, deps: Pick<OrchestratorDeps, "admission">, owner: Pick<SwarmOwner, "tenant" | "limits">, at = ""): void {
  // The tenant's own limits first (tasks per swarm, allowed models): they name the field to change.
  const limited = checkTenantLimits(swarm.spec, swarm.spec.goal === undefined ? swarm.tasks.length : null, owner.limits);
  if (limited.length > 0) {
    throw new ApiError(
      "invalid_spec",
      "the swarm spec exceeds the tenant's limits",
      limited.map((d) => ({ ...d, path: `${at}${d.path}` })),
    );
  }
  const admitted = admitSwarm(swarm.spec, deps.admission(owner.tenant, owner.limits));
  if (!admitted.ok) {
    throw new ApiError(
      "invalid_spec",
      "the swarm spec cannot be run as given",
      admitted.error.map((d) => ({ ...d, path: `${at}${d.path}` })),
    );
  }
}
