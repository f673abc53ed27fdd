// The swarm's money: the worst case a task's attempt or the whole swarm can cost, what is committed
// (charged plus reserved, from SwarmTotals), the budget's end (every open task skipped), its status
// view, and the tenant's monthly reservation and settlement (the TenantBudget Durable Object).
// It never picks a model (SwarmRouting does) and never grants a task.
import { callsPerAttempt } from "../core/agent-limits.ts";
import { worstCaseAttempt, worstCaseCall, type Amount } from "../core/budget.ts";
import { toOfferedToolBytes } from "../core/mcp-catalog.ts";
import type { ErrorDetail } from "../core/errors.ts";
import { toHedgeLimit } from "../core/hedge-policy.ts";
import { PLAN_MAX_PROMPT_CHARS } from "../core/planner.ts";
import { resolvePrice, type ModelPrice, type PriceTable } from "../core/pricing.ts";
import type { WeightedModel } from "../core/route-model.ts";
import { PlannerSpecSchema, type Budget } from "../core/spec-schema.ts";
import { IN_FLIGHT_TASK_STATES, type BudgetView, type StartSwarmInput } from "../core/swarm-contract.ts";
import { toBudgetMonth, type TenantCap } from "../core/tenant-budget.ts";
import { engineModels, PLAN_ATTEMPTS, plannerOutputTokens, reducerContextTokens, reducerModel } from "./swarm-phases.ts";
import { OverrideSchema, type SwarmRow, type TaskRow } from "./swarm-room-rows.ts";
import type { SwarmRouting } from "./swarm-routing.ts";
import type { SwarmStore } from "./swarm-store.ts";
import type { SwarmTotals } from "./swarm-totals.ts";
import type { TenantBudget } from "./tenant-budget.ts";

/** A start refused because the tenant's month cannot pay for one call. */
type TenantRefusal = { created: false; code: "budget_exceeded"; refused: ErrorDetail[] };

const toCapText = (cap: { max_usd_per_month?: number | undefined; max_tokens_per_month?: number | undefined }): string =>
  [
    cap.max_usd_per_month !== undefined ? `$${cap.max_usd_per_month}` : null,
    cap.max_tokens_per_month !== undefined ? `${cap.max_tokens_per_month} tokens` : null,
  ]
    .filter((s) => s !== null)
    .join(" / ");

export class SwarmBudget {
  constructor(
    private readonly sql: SqlStorage,
    private readonly store: SwarmStore,
    private readonly totals: SwarmTotals,
    private readonly routing: SwarmRouting,
    private readonly prices: PriceTable,
    /** Monthly caps per tenant (absent: none are enforced). */
    private readonly tenantBudgets: DurableObjectNamespace<TenantBudget> | undefined,
  ) {}

  /**
   * Reserves the swarm's worst case against its tenant's month; what was granted becomes (or
   * tightens) the swarm's own budget, which the window then enforces call by call. Without a cap
   * (or the TenantBudget binding) the spec's budget stands as it is.
   */
  async reserveTenant(
    input: StartSwarmInput,
    mix: readonly WeightedModel[],
    cap: TenantCap | null,
  ): Promise<{ ok: true; budget: Budget | null; tenantMonth: string | null } | { ok: false; refused: TenantRefusal }> {
    const { spec } = input;
    let budget = spec.budget ?? null;
    let tenantMonth: string | null = null;
    if (cap !== null && this.tenantBudgets !== undefined) {
      tenantMonth = toBudgetMonth(input.createdAt);
      const worst = this.worstCaseOfSwarm(
        input,
        mix.map((m) => m.model),
      );
      const grant = await this.tenantBudget(input.tenant, tenantMonth).reserve({
        swarmId: input.swarmId,
        usd: Math.min(spec.budget?.max_usd ?? Number.POSITIVE_INFINITY, worst.usd),
        tokens: Math.min(spec.budget?.max_tokens ?? Number.POSITIVE_INFINITY, worst.tokens),
        maxUsd: cap.max_usd_per_month ?? null,
        maxTokens: cap.max_tokens_per_month ?? null,
      });
      // A grant that cannot pay for even one call would only skip every task: refuse the swarm.
      if ((grant.usd !== null && grant.usd < worst.oneCall.usd) || (grant.tokens !== null && grant.tokens < worst.oneCall.tokens)) {
        await this.tenantBudget(input.tenant, tenantMonth).settle({ swarmId: input.swarmId, usd: 0, tokens: 0 });
        return {
          ok: false,
          refused: {
            created: false,
            code: "budget_exceeded",
            refused: [{ path: "budget", message: `this tenant's monthly budget (${toCapText(cap)}) for ${tenantMonth} is spent` }],
          },
        };
      }
      budget = {
        fallback_at: budget?.fallback_at ?? 0.2,
        ...(budget?.fallback_tier !== undefined ? { fallback_tier: budget.fallback_tier } : {}),
        ...(grant.usd !== null || budget?.max_usd !== undefined
          ? { max_usd: Math.min(grant.usd ?? Number.POSITIVE_INFINITY, budget?.max_usd ?? Number.POSITIVE_INFINITY) }
          : {}),
        ...(grant.tokens !== null || budget?.max_tokens !== undefined
          ? { max_tokens: Math.min(grant.tokens ?? Number.POSITIVE_INFINITY, budget?.max_tokens ?? Number.POSITIVE_INFINITY) }
          : {}),
      };
    }
    return { ok: true, budget, tenantMonth };
  }

  /** A finished swarm's tenant reservation becomes what it was charged (retried by the alarm on failure). */
  async settleTenant(swarm: SwarmRow): Promise<void> {
    if (swarm.finished_at === null || swarm.tenant_month === null || swarm.tenant_settled !== 0) return;
    const charged = this.totals.charged();
    await this.tenantBudget(swarm.tenant, swarm.tenant_month).settle({ swarmId: swarm.id, usd: charged.usd, tokens: charged.tokens });
    this.sql.exec("UPDATE swarm SET tenant_settled = 1");
  }

  budgetView(swarm: SwarmRow): BudgetView | null {
    const budget = this.store.budget(swarm);
    if (budget === null) return null;
    const charged = this.totals.charged();
    const reserved = this.totals.reserved();
    const committed = { usd: charged.usd + reserved.usd, tokens: charged.tokens + reserved.tokens };
    return {
      max_usd: budget.max_usd ?? null,
      max_tokens: budget.max_tokens ?? null,
      charged_usd: charged.usd,
      charged_tokens: charged.tokens,
      reserved_usd: committed.usd - charged.usd,
      reserved_tokens: committed.tokens - charged.tokens,
      fallback_tier: budget.fallback_tier ?? null,
      routing_to_fallback_tier: this.routing.tierModels(swarm).length > 0 && this.routing.budgetRunningLow(swarm),
    };
  }

  private tenantBudget(tenant: string, month: string): DurableObjectStub<TenantBudget> {
    const namespace = this.tenantBudgets;
    if (namespace === undefined) throw new Error("TENANT_BUDGET is not bound");
    return namespace.get(namespace.idFromName(`${tenant}:${month}`));
  }

  /**
   * The most a whole swarm can cost (every task's worst call on its priciest model, max_attempts
   * times), and the worst case of its first call.
   */
  private worstCaseOfSwarm(input: StartSwarmInput, mixModels: string[]): Amount & { oneCall: Amount } {
    const models = [
      ...mixModels,
      ...(input.spec.fallback ?? []),
      ...engineModels({ goal: input.spec.goal, plannerModel: input.spec.planner?.model, reduce: input.spec.reduce }, mixModels[0] ?? ""),
    ];
    const prices = models.map((m) => resolvePrice(this.prices, m)).filter((p): p is ModelPrice => p !== null);
    const priciest = prices.reduce<ModelPrice | null>((top, p) => (top === null || p.output + p.input > top.output + top.input ? p : top), null);
    const encoder = new TextEncoder();
    const webhooks = (input.spec.tools ?? []).flatMap((tool) => (typeof tool === "string" ? [] : [tool]));
    // Every call of a sub-task's loop carries the tool definitions (planner and reducer calls carry none).
    const systemBytes = (input.spec.system === undefined ? 0 : encoder.encode(input.spec.system).length) + toOfferedToolBytes(webhooks, input.mcpCatalog ?? []);
    const { max_output_tokens, max_attempts } = input.spec.limits;
    const turns = callsPerAttempt(input.spec);
    const total = { usd: 0, tokens: 0, oneCall: { usd: 0, tokens: 0 } };
    const add = (promptBytes: number, outputTokens: number, calls: number): Amount => {
      const worst = worstCaseCall(promptBytes, outputTokens, priciest);
      total.usd += worst.usd * calls;
      total.tokens += worst.tokens * calls;
      return worst;
    };
    /** A sub-task: `max_attempts` attempts of its whole agent loop; returns one attempt's worst case. */
    const addAttempts = (promptBytes: number, outputTokens: number, calls: number, attempts: number): Amount => {
      const worst = worstCaseAttempt(promptBytes, outputTokens, calls, priciest);
      total.usd += worst.usd * attempts;
      total.tokens += worst.tokens * attempts;
      return worst;
    };
    // A goal's tasks are not known yet: every one of max_tasks at the largest prompt a plan may hold
    // (3 UTF-8 bytes a character covers every script but emoji), plus the planner's own calls.
    const prompts =
      input.spec.goal === undefined
        ? input.tasks.map((task) => encoder.encode(task.prompt).length)
        : new Array<number>(PlannerSpecSchema.parse(input.spec.planner ?? {}).max_tasks).fill(PLAN_MAX_PROMPT_CHARS * 3);
    if (input.spec.goal !== undefined) {
      const planner = PlannerSpecSchema.parse(input.spec.planner ?? {});
      total.oneCall = add(encoder.encode(input.spec.goal).length + 4_000, plannerOutputTokens(planner, max_output_tokens), PLAN_ATTEMPTS * max_attempts);
    }
    prompts.forEach((bytes, i) => {
      // A multi-turn task's context grows by each turn's answer and tool results.
      const worst = addAttempts(bytes + systemBytes, max_output_tokens, turns, max_attempts);
      if (i === 0 && input.spec.goal === undefined) total.oneCall = worst;
    });
    // Backups (limits.hedge) are calls like any other: the most the swarm may send, each at the largest prompt.
    const hedge = input.spec.limits.hedge;
    if (hedge !== undefined && prompts.length > 0) {
      add(prompts.reduce((a, b) => Math.max(a, b), 0) + systemBytes, max_output_tokens, toHedgeLimit(hedge, prompts.length));
    }
    if (input.spec.reduce?.kind === "llm") {
      // Each level at least halves the inputs, so all levels together take fewer calls than the tasks.
      const context = reducerContextTokens(input.spec.reduce, reducerModel(input.spec.reduce, mixModels[0] ?? ""), this.routing.gatewayContext);
      add(context, input.spec.reduce.max_output_tokens, Math.max(1, prompts.length) * max_attempts);
    }
    return total;
  }

  /**
   * The most one attempt of this task can cost on `model`: one call for an engine task; for a
   * sub-agent, every turn of its loop, each with the context grown by the turns before it.
   */
  worstCase(swarm: SwarmRow, task: TaskRow & { size: number }, model: string): Amount {
    const price = resolvePrice(this.prices, model);
    const encoder = new TextEncoder();
    // `size` counts characters; the worst case counts bytes (a byte per token at most).
    const promptBytes = this.sql.exec<{ n: number }>("SELECT LENGTH(CAST(prompt AS BLOB)) AS n FROM tasks WHERE id = ?", task.id).one().n;
    if (task.kind !== "task") {
      const override = this.sql.exec<{ o: string | null }>("SELECT override AS o FROM tasks WHERE id = ?", task.id).one().o;
      if (override !== null) {
        const parsed = OverrideSchema.parse(JSON.parse(override));
        return worstCaseCall(promptBytes + encoder.encode(parsed.system).length, parsed.maxOutputTokens, price);
      }
    }
    const systemBytes = (swarm.system === null ? 0 : this.systemBytes(swarm.system)) + this.toolBytes(swarm);
    return worstCaseAttempt(promptBytes + systemBytes, this.store.toRunConfig(swarm).limits.max_output_tokens, this.store.callsPerTask(swarm), price);
  }

  private toolBytesMemo: number | null = null;

  /** The swarm's webhook and MCP tool definitions, in bytes (fixed when it starts, so counted once). */
  private toolBytes(swarm: SwarmRow): number {
    if (this.toolBytesMemo !== null) return this.toolBytesMemo;
    const config = this.store.toRunConfig(swarm);
    const webhooks = config.tools.flatMap((tool) =>
      typeof tool === "string" ? [] : [{ name: tool.name, description: tool.description, parameters: JSON.parse(tool.parameters_json) as unknown }],
    );
    this.toolBytesMemo = toOfferedToolBytes(webhooks, config.mcpServers);
    return this.toolBytesMemo;
  }

  private systemBytesMemo: { text: string; bytes: number } | null = null;
  private systemBytes(system: string): number {
    if (this.systemBytesMemo?.text !== system) this.systemBytesMemo = { text: system, bytes: new TextEncoder().encode(system).length };
    return this.systemBytesMemo.bytes;
  }

  /** Charged plus every open reservation but this task's own. */
  committedExcept(task: TaskRow): Amount {
    const charged = this.totals.charged();
    const reserved = this.totals.reserved();
    const own = IN_FLIGHT_TASK_STATES.includes(task.state) ? { usd: task.reserved_usd, tokens: task.reserved_tokens } : { usd: 0, tokens: 0 };
    return { usd: charged.usd + reserved.usd - own.usd, tokens: charged.tokens + reserved.tokens - own.tokens };
  }

  /** The budget cannot cover another call: dispatch stops, running calls finish, the rest are skipped. */
  exhaustBudget(reason: string, now: number, alsoTaskId?: string): void {
    this.sql.exec(
      `UPDATE tasks SET state = 'skipped_budget', deadline = NULL, retry_at = NULL, reserved_usd = 0, reserved_tokens = 0, finished_at = ?
       WHERE state IN ('pending', 'dispatched', 'retry_wait') OR id = ?`,
      now,
      alsoTaskId ?? "",
    );
    this.sql.exec("UPDATE swarm SET reason = ?, index_dirty = 1", reason);
    this.totals.invalidate();
    console.warn(JSON.stringify({ event: "budget_exhausted", reason }));
  }
}
