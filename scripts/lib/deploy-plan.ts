// The deploy's plan: from the Workers' wrangler configs and what is known to exist, the configs'
// problems, the resources and secrets a deploy needs, the Workers' order and each step's wrangler
// command. No I/O: scripts/deploy.ts reads the configs, asks the account and runs the steps. Every
// resource comes from the configs, so a binding added to either config is planned without a change here.

/** What the plan reads of a Worker's config: a structural subset of wrangler's (unstable_readConfig). */
export interface WorkerConfig {
  /** The config file as the user names it (`wrangler.toml`, `workers/agent/wrangler.toml`). */
  configPath: string;
  name: string | undefined;
  compatibility_date: string | undefined;
  vars: Record<string, unknown>;
  d1_databases: ReadonlyArray<{ binding: string; database_name?: string | undefined; database_id?: string | undefined; migrations_dir?: string | undefined }>;
  queues: {
    producers?: ReadonlyArray<{ binding: string; queue: string }> | undefined;
    consumers?: ReadonlyArray<{ queue: string; dead_letter_queue?: string | undefined }> | undefined;
  };
  r2_buckets: ReadonlyArray<{ binding: string; bucket_name?: string | undefined; jurisdiction?: string | undefined }>;
  durable_objects: { bindings: ReadonlyArray<{ name: string; class_name: string; script_name?: string | undefined }> };
  migrations: ReadonlyArray<{
    tag: string;
    new_classes?: readonly string[] | undefined;
    new_sqlite_classes?: readonly string[] | undefined;
    renamed_classes?: ReadonlyArray<{ from: string; to: string }> | undefined;
    deleted_classes?: readonly string[] | undefined;
  }>;
  secrets?: { required?: readonly string[] | undefined } | undefined;
}

/** A config problem, located: the file and the key (wrangler's own path syntax, `queues.consumers[0].queue`). */
export interface ConfigProblem {
  severity: "error" | "warning";
  file: string;
  key: string;
  message: string;
}

/** A wrangler command line after `npx wrangler`. */
export type WranglerArgs = readonly string[];

export const formatCommand = (args: WranglerArgs): string => ["npx", "wrangler", ...args].join(" ");

const problem = (severity: ConfigProblem["severity"], worker: WorkerConfig, key: string, message: string): ConfigProblem => ({
  severity,
  file: worker.configPath,
  key,
  message,
});

const workerLabel = (worker: WorkerConfig): string => worker.name ?? worker.configPath;
const producersOf = (worker: WorkerConfig) => worker.queues.producers ?? [];
const consumersOf = (worker: WorkerConfig) => worker.queues.consumers ?? [];

/** The Durable Object classes a Worker's [[migrations]] leave in place (created, renamed to, not deleted). */
export function toMigratedClasses(worker: WorkerConfig): Set<string> {
  const classes = new Set<string>();
  for (const migration of worker.migrations) {
    for (const name of [...(migration.new_classes ?? []), ...(migration.new_sqlite_classes ?? [])]) classes.add(name);
    for (const { from, to } of migration.renamed_classes ?? []) {
      classes.delete(from);
      classes.add(to);
    }
    for (const name of migration.deleted_classes ?? []) classes.delete(name);
  }
  return classes;
}

/**
 * What the engine relies on across the configs: dates the installed workerd can run, unique names,
 * each queue sent to by one config and consumed by another, Durable Object bindings that reach a
 * class their host creates in its migrations, one id per D1 database, secrets that no var shadows.
 * Types and required fields are wrangler's own validation (it runs first, in readWorkerConfig).
 */
export function validateConfigs(workers: readonly WorkerConfig[], runtime: { workerdCompatibilityDate: string }): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const byName = new Map<string, WorkerConfig>();
  for (const worker of workers) {
    if (!worker.name) problems.push(problem("error", worker, "name", "a Worker needs a name"));
    else if (byName.has(worker.name))
      problems.push(problem("error", worker, "name", `"${worker.name}" is also the name in ${byName.get(worker.name)?.configPath}`));
    else byName.set(worker.name, worker);
    problems.push(...checkCompatibilityDate(worker, runtime.workerdCompatibilityDate), ...checkBindingNames(worker), ...checkMigrations(worker));
  }
  problems.push(...checkQueues(workers), ...checkDurableObjects(workers, byName), ...checkD1(workers));
  if (orderWorkers(workers) === null) {
    const first = workers[0];
    if (first !== undefined)
      problems.push(problem("error", first, "durable_objects.bindings", "the Workers bind each other's Durable Objects in a cycle: no deploy order works"));
  }
  return problems;
}

function checkCompatibilityDate(worker: WorkerConfig, workerdDate: string): ConfigProblem[] {
  const date = worker.compatibility_date;
  if (date === undefined) return [problem("error", worker, "compatibility_date", "missing")];
  if (!/^\d{4}-\d{2}-\d{2}$/.test(date)) return [problem("error", worker, "compatibility_date", `"${date}" is not YYYY-MM-DD`)];
  if (date > workerdDate) {
    return [
      problem(
        "error",
        worker,
        "compatibility_date",
        `${date} is later than the installed workerd's ${workerdDate}: local dev, tests and this check cannot run it`,
      ),
    ];
  }
  return [];
}

function checkBindingNames(worker: WorkerConfig): ConfigProblem[] {
  const seen = new Map<string, string>();
  const problems: ConfigProblem[] = [];
  const note = (name: string, key: string) => {
    const earlier = seen.get(name);
    if (earlier !== undefined) problems.push(problem("error", worker, key, `binding ${name} is also ${earlier}`));
    else seen.set(name, key);
  };
  worker.d1_databases.forEach((db, i) => {
    note(db.binding, `d1_databases[${i}].binding`);
    if (!db.database_name)
      problems.push(problem("error", worker, `d1_databases[${i}].database_name`, "missing: the deploy finds or creates the database by its name"));
  });
  producersOf(worker).forEach((producer, i) => {
    note(producer.binding, `queues.producers[${i}].binding`);
  });
  worker.r2_buckets.forEach((bucket, i) => {
    note(bucket.binding, `r2_buckets[${i}].binding`);
    if (!bucket.bucket_name) problems.push(problem("error", worker, `r2_buckets[${i}].bucket_name`, "missing"));
  });
  worker.durable_objects.bindings.forEach((binding, i) => {
    note(binding.name, `durable_objects.bindings[${i}].name`);
  });
  for (const name of Object.keys(worker.vars)) note(name, `vars.${name}`);
  (worker.secrets?.required ?? []).forEach((name, i) => {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) problems.push(problem("error", worker, `secrets.required[${i}]`, `"${name}" is not a valid binding name`));
    else note(name, `secrets.required[${i}]`);
  });
  return problems;
}

function checkMigrations(worker: WorkerConfig): ConfigProblem[] {
  const tags = new Set<string>();
  const problems: ConfigProblem[] = [];
  worker.migrations.forEach((migration, i) => {
    if (tags.has(migration.tag)) problems.push(problem("error", worker, `migrations[${i}].tag`, `tag "${migration.tag}" is used twice`));
    tags.add(migration.tag);
  });
  return problems;
}

function checkQueues(workers: readonly WorkerConfig[]): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const produced = new Set(workers.flatMap((w) => producersOf(w).map((p) => p.queue)));
  const deadLetters = new Set(workers.flatMap((w) => consumersOf(w).flatMap((c) => (c.dead_letter_queue ? [c.dead_letter_queue] : []))));
  const consumerOf = new Map<string, WorkerConfig>();
  for (const worker of workers) {
    consumersOf(worker).forEach((consumer, i) => {
      const other = consumerOf.get(consumer.queue);
      if (other !== undefined) {
        problems.push(
          problem("error", worker, `queues.consumers[${i}].queue`, `${consumer.queue} is consumed by ${workerLabel(other)} too: a queue has one consumer`),
        );
      }
      consumerOf.set(consumer.queue, worker);
      if (!produced.has(consumer.queue) && !deadLetters.has(consumer.queue)) {
        problems.push(
          problem("error", worker, `queues.consumers[${i}].queue`, `no config sends to ${consumer.queue} (producers: ${[...produced].join(", ") || "none"})`),
        );
      }
    });
  }
  for (const worker of workers) {
    producersOf(worker).forEach((producer, i) => {
      if (!consumerOf.has(producer.queue)) {
        const consumed = [...consumerOf.keys()].join(", ") || "none";
        problems.push(problem("error", worker, `queues.producers[${i}].queue`, `no config consumes ${producer.queue} (consumed: ${consumed})`));
      }
    });
    consumersOf(worker).forEach((consumer, i) => {
      if (consumer.dead_letter_queue && !consumerOf.has(consumer.dead_letter_queue)) {
        const key = `queues.consumers[${i}].dead_letter_queue`;
        problems.push(problem("warning", worker, key, `no config consumes ${consumer.dead_letter_queue}: dead letters would pile up unread`));
      }
    });
  }
  return problems;
}

function checkDurableObjects(workers: readonly WorkerConfig[], byName: ReadonlyMap<string, WorkerConfig>): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  for (const worker of workers) {
    const ownClasses = toMigratedClasses(worker);
    worker.durable_objects.bindings.forEach((binding, i) => {
      const key = `durable_objects.bindings[${i}]`;
      if (binding.script_name === undefined || binding.script_name === worker.name) {
        if (!ownClasses.has(binding.class_name))
          problems.push(problem("error", worker, `${key}.class_name`, `no [[migrations]] entry creates ${binding.class_name}`));
        return;
      }
      const host = byName.get(binding.script_name);
      if (host === undefined) {
        problems.push(
          problem("error", worker, `${key}.script_name`, `no config names a Worker "${binding.script_name}" (Workers: ${[...byName.keys()].join(", ")})`),
        );
      } else if (!toMigratedClasses(host).has(binding.class_name)) {
        problems.push(
          problem("error", worker, `${key}.class_name`, `${host.configPath} (${binding.script_name}) hosts no ${binding.class_name} in its [[migrations]]`),
        );
      }
    });
  }
  return problems;
}

function checkD1(workers: readonly WorkerConfig[]): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const idOf = new Map<string, { id: string | undefined; worker: WorkerConfig }>();
  for (const worker of workers) {
    worker.d1_databases.forEach((db, i) => {
      if (!db.database_name) return;
      const earlier = idOf.get(db.database_name);
      if (earlier === undefined) idOf.set(db.database_name, { id: db.database_id, worker });
      else if (earlier.id !== db.database_id) {
        const message = `database ${db.database_name} has id ${db.database_id} here and ${earlier.id} in ${earlier.worker.configPath}: local dev would run two databases`;
        problems.push(problem("error", worker, `d1_databases[${i}].database_id`, message));
      }
    });
  }
  return problems;
}

/**
 * The Workers in deploy order: a Worker that binds another's Durable Objects (script_name) comes
 * after it, since its deploy fails while the class is not there; otherwise the configs' order.
 * Null when the bindings form a cycle.
 */
export function orderWorkers(workers: readonly WorkerConfig[]): WorkerConfig[] | null {
  const names = new Set(workers.map((w) => w.name));
  const needs = (worker: WorkerConfig): Set<string> =>
    new Set(
      worker.durable_objects.bindings.flatMap((b) =>
        b.script_name !== undefined && b.script_name !== worker.name && names.has(b.script_name) ? [b.script_name] : [],
      ),
    );
  const ordered: WorkerConfig[] = [];
  const placed = new Set<string | undefined>();
  while (ordered.length < workers.length) {
    const next = workers.find((w) => !ordered.includes(w) && [...needs(w)].every((name) => placed.has(name)));
    if (next === undefined) return null;
    ordered.push(next);
    placed.add(next.name);
  }
  return ordered;
}

/** What is known to exist on the account. */
export interface KnownState {
  /**
   * `offline`: nothing was asked (dry run); what the local deploy record lists is taken as there.
   * `account`: the account's lists, so anything not in them is missing.
   */
  source: "offline" | "account";
  /** D1 database name → id. */
  d1: ReadonlyMap<string, string>;
  queues: ReadonlySet<string>;
  r2Buckets: ReadonlySet<string>;
  /** Secret names set on each Worker (by Worker name); a Worker not in the map: unknown offline, none set on the account. */
  secrets: ReadonlyMap<string, ReadonlySet<string>>;
}

export type Presence = "exists" | "create" | "would ensure";

export interface PlannedResource {
  kind: "D1 database" | "queue" | "R2 bucket";
  name: string;
  /** Who uses it and how, for the listing: `edgeswarm-orchestrator (LEDGER_DB)`. */
  usedBy: string[];
  presence: Presence;
  /** A D1 database's id when known. */
  id?: string;
  /** The command that creates it (run when `create`, shown when `would ensure`). */
  create: WranglerArgs;
}

export interface PlannedDurableObject {
  className: string;
  host: string;
  /** The host's [[migrations]] tags that mention the class: `wrangler deploy` of the host applies them. */
  migrationTags: string[];
  boundBy: string[];
}

export interface PlannedSecret {
  worker: string;
  configPath: string;
  name: string;
  /** `supplied`: the deploy uploads a value given to it (--secrets-file, --generate-secrets). */
  status: "set" | "supplied" | "missing" | "unknown";
  put: WranglerArgs;
}

export interface PlannedStep {
  title: string;
  /** Null: the script does it itself (writing the deploy configs, the smoke swarm). */
  command: WranglerArgs | null;
  /** A Worker's deploy: the secrets it uploads with `--secrets-file` (the script adds the flag). */
  uploadsSecrets?: string[];
}

export interface DeployPlan {
  resources: PlannedResource[];
  durableObjects: PlannedDurableObject[];
  secrets: PlannedSecret[];
  /** Worker names in deploy order. */
  workerOrder: string[];
  steps: PlannedStep[];
  /** Why the deploy cannot go on (missing secrets with no value supplied); empty when it can. */
  blockers: string[];
}

export interface PlanInput {
  workers: readonly WorkerConfig[];
  known: KnownState;
  /** Secret names the deploy has values for (from --secrets-file or --generate-secrets). */
  suppliedSecrets: ReadonlySet<string>;
  /** Where the generated config of a Worker (with the real ids) is written: the deploy runs wrangler on it. */
  deployConfigOf: (workerName: string) => string;
}

/** Every resource, Durable Object class, secret and step of a deploy, in the order they run. */
export function planDeploy(input: PlanInput): DeployPlan {
  const { workers, known } = input;
  const order = orderWorkers(workers) ?? [...workers];
  const presence = (exists: boolean): Presence => (exists ? "exists" : known.source === "offline" ? "would ensure" : "create");

  const resources: PlannedResource[] = [
    ...collectD1(workers).map(({ name, usedBy }): PlannedResource => {
      const id = known.d1.get(name);
      return { kind: "D1 database", name, usedBy, presence: presence(id !== undefined), ...(id !== undefined ? { id } : {}), create: ["d1", "create", name] };
    }),
    ...collectQueues(workers).map(
      ({ name, usedBy }): PlannedResource => ({
        kind: "queue",
        name,
        usedBy,
        presence: presence(known.queues.has(name)),
        create: ["queues", "create", name],
      }),
    ),
    ...collectBuckets(workers).map(
      ({ name, jurisdiction, usedBy }): PlannedResource => ({
        kind: "R2 bucket",
        name,
        usedBy,
        presence: presence(known.r2Buckets.has(name)),
        create: ["r2", "bucket", "create", name, ...(jurisdiction ? ["--jurisdiction", jurisdiction] : [])],
      }),
    ),
  ];

  const secrets = order.flatMap((worker) => {
    const name = workerLabel(worker);
    const set = known.secrets.get(name) ?? (known.source === "account" ? new Set<string>() : undefined);
    return (worker.secrets?.required ?? []).map(
      (secret): PlannedSecret => ({
        worker: name,
        configPath: worker.configPath,
        name: secret,
        status: set?.has(secret) ? "set" : input.suppliedSecrets.has(secret) ? "supplied" : set === undefined ? "unknown" : "missing",
        put: ["secret", "put", secret, "-c", worker.configPath],
      }),
    );
  });
  const blockers = secrets
    .filter((secret) => secret.status === "missing")
    .map((secret) => `${secret.worker} needs the secret ${secret.name}: ${formatCommand(secret.put)} (or pass it in --secrets-file)`);

  const steps: PlannedStep[] = [
    ...resources
      .filter((resource) => resource.presence !== "exists")
      .map((resource) => ({
        title: `${resource.presence === "create" ? "create" : "ensure"} the ${resource.kind} ${resource.name}`,
        command: resource.create,
      })),
    { title: `write the deploy configs (the real ids): ${order.map((w) => input.deployConfigOf(workerLabel(w))).join(", ")}`, command: null },
    ...migrationSteps(order, input.deployConfigOf),
    ...order.map((worker): PlannedStep => {
      const name = workerLabel(worker);
      const uploads = secrets.filter((s) => s.worker === name && s.status === "supplied").map((s) => s.name);
      return { title: `deploy ${name}`, command: ["deploy", "-c", input.deployConfigOf(name)], ...(uploads.length > 0 ? { uploadsSecrets: uploads } : {}) };
    }),
    { title: "run a smoke swarm against the deployed API and print its status and cost", command: null },
  ];

  return { resources, durableObjects: collectDurableObjects(workers), secrets, workerOrder: order.map(workerLabel), steps, blockers };
}

function migrationSteps(order: readonly WorkerConfig[], deployConfigOf: (workerName: string) => string): PlannedStep[] {
  const applied = new Set<string>();
  return order.flatMap((worker) =>
    worker.d1_databases.flatMap((db): PlannedStep[] => {
      if (!db.database_name || applied.has(db.database_name) || db.migrations_dir === undefined) return [];
      applied.add(db.database_name);
      return [
        {
          title: `apply the D1 migrations (${db.migrations_dir}/) to ${db.database_name}`,
          command: ["d1", "migrations", "apply", db.database_name, "--remote", "-c", deployConfigOf(workerLabel(worker))],
        },
      ];
    }),
  );
}

/** Entries by name in first-seen order, each with who uses it. */
function groupByName<T>(entries: ReadonlyArray<{ name: string; use: string; extra: T }>): { name: string; usedBy: string[]; extra: T }[] {
  const byName = new Map<string, { name: string; usedBy: string[]; extra: T }>();
  for (const { name, use, extra } of entries) {
    const entry = byName.get(name) ?? { name, usedBy: [], extra };
    if (!entry.usedBy.includes(use)) entry.usedBy.push(use);
    byName.set(name, entry);
  }
  return [...byName.values()];
}

function collectD1(workers: readonly WorkerConfig[]) {
  return groupByName(
    workers.flatMap((w) =>
      w.d1_databases.flatMap((db) => (db.database_name ? [{ name: db.database_name, use: `${workerLabel(w)} (${db.binding})`, extra: null }] : [])),
    ),
  );
}

function collectQueues(workers: readonly WorkerConfig[]) {
  return groupByName(
    workers.flatMap((w) => [
      ...producersOf(w).map((p) => ({ name: p.queue, use: `${workerLabel(w)} sends (${p.binding})`, extra: null })),
      ...consumersOf(w).flatMap((c) => [
        { name: c.queue, use: `${workerLabel(w)} consumes`, extra: null },
        ...(c.dead_letter_queue ? [{ name: c.dead_letter_queue, use: `dead letters of ${c.queue}`, extra: null }] : []),
      ]),
    ]),
  );
}

function collectBuckets(workers: readonly WorkerConfig[]) {
  return groupByName(
    workers.flatMap((w) =>
      w.r2_buckets.flatMap((b) => (b.bucket_name ? [{ name: b.bucket_name, use: `${workerLabel(w)} (${b.binding})`, extra: b.jurisdiction }] : [])),
    ),
  ).map(({ name, usedBy, extra }) => ({ name, usedBy, jurisdiction: extra }));
}

function collectDurableObjects(workers: readonly WorkerConfig[]): PlannedDurableObject[] {
  return workers.flatMap((host) =>
    [...toMigratedClasses(host)].map((className) => ({
      className,
      host: workerLabel(host),
      migrationTags: host.migrations
        .filter((m) => [...(m.new_classes ?? []), ...(m.new_sqlite_classes ?? []), ...(m.renamed_classes ?? []).map((r) => r.to)].includes(className))
        .map((m) => m.tag),
      boundBy: workers.flatMap((w) =>
        w.durable_objects.bindings
          .filter((b) => b.class_name === className && (b.script_name ?? w.name) === host.name)
          .map((b) => `${workerLabel(w)} (${b.name})`),
      ),
    })),
  );
}
