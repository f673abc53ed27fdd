import { describe, expect, it } from "vitest";
import { type KnownState, orderWorkers, planDeploy, validateConfigs, type WorkerConfig } from "./deploy-plan.ts";

// Two Workers shaped like this repository's: the orchestrator hosts the Durable Objects and sends
// to the queues, the agent consumes them and binds the orchestrator's classes by script_name.
const orchestrator = (): WorkerConfig => ({
  configPath: "wrangler.toml",
  name: "orch",
  compatibility_date: "2026-11-01",
  vars: { LANE_SLOTS: "128" },
  d1_databases: [{ binding: "LEDGER_DB", database_name: "ledger", database_id: "local-id", migrations_dir: "migrations" }],
  queues: { producers: [{ binding: "TASK_QUEUE", queue: "tasks" }] },
  r2_buckets: [],
  durable_objects: { bindings: [{ name: "SWARM_ROOM", class_name: "SwarmRoom" }] },
  migrations: [{ tag: "v1", new_sqlite_classes: ["SwarmRoom"] }],
  secrets: { required: ["API_TOKENS", "WEBHOOK_SECRET"] },
});
const agent = (): WorkerConfig => ({
  configPath: "workers/agent/wrangler.toml",
  name: "agent",
  compatibility_date: "2026-11-01",
  vars: {},
  d1_databases: [],
  queues: { consumers: [{ queue: "tasks", dead_letter_queue: "tasks-dlq" }, { queue: "tasks-dlq" }] },
  r2_buckets: [],
  durable_objects: { bindings: [{ name: "SWARM_ROOM", class_name: "SwarmRoom", script_name: "orch" }] },
  migrations: [],
  secrets: { required: ["MODEL_API_KEY", "WEBHOOK_SECRET"] },
});
const WORKERD = { workerdCompatibilityDate: "2026-11-02" };

describe("validateConfigs", () => {
  it("accepts the two Workers as they are", () => {
    expect(validateConfigs([orchestrator(), agent()], WORKERD)).toEqual([]);
  });

  const cases: { name: string; change: (o: WorkerConfig, a: WorkerConfig) => void; file: string; key: string; message: RegExp; severity?: string }[] = [
    {
      name: "a compatibility_date later than workerd's",
      change: (o) => {
        o.compatibility_date = "2026-12-01";
      },
      file: "wrangler.toml",
      key: "compatibility_date",
      message: /later than the installed workerd's 2026-11-02/,
    },
    {
      name: "no compatibility_date",
      change: (_o, a) => {
        a.compatibility_date = undefined;
      },
      file: "workers/agent/wrangler.toml",
      key: "compatibility_date",
      message: /missing/,
    },
    {
      name: "a producer nobody consumes",
      change: (o) => {
        o.queues = {
          producers: [
            { binding: "TASK_QUEUE", queue: "tasks" },
            { binding: "LONG", queue: "tasks-long" },
          ],
        };
      },
      file: "wrangler.toml",
      key: "queues.producers[1].queue",
      message: /no config consumes tasks-long/,
    },
    {
      name: "a consumer of a queue nobody sends to",
      change: (o) => {
        o.queues = { producers: [{ binding: "TASK_QUEUE", queue: "task" }] };
      },
      file: "workers/agent/wrangler.toml",
      key: "queues.consumers[0].queue",
      message: /no config sends to tasks/,
    },
    {
      name: "a dead-letter queue nobody consumes",
      change: (_o, a) => {
        a.queues = { consumers: [{ queue: "tasks", dead_letter_queue: "tasks-dlq" }] };
      },
      file: "workers/agent/wrangler.toml",
      key: "queues.consumers[0].dead_letter_queue",
      message: /no config consumes tasks-dlq/,
      severity: "warning",
    },
    {
      name: "a script_name that is not the orchestrator's name",
      change: (_o, a) => {
        a.durable_objects = { bindings: [{ name: "SWARM_ROOM", class_name: "SwarmRoom", script_name: "edgeswarm" }] };
      },
      file: "workers/agent/wrangler.toml",
      key: "durable_objects.bindings[0].script_name",
      message: /no config names a Worker "edgeswarm" \(Workers: orch, agent\)/,
    },
    {
      name: "a bound class its host does not create",
      change: (_o, a) => {
        a.durable_objects = { bindings: [{ name: "KEY_POOL", class_name: "KeyPool", script_name: "orch" }] };
      },
      file: "workers/agent/wrangler.toml",
      key: "durable_objects.bindings[0].class_name",
      message: /hosts no KeyPool/,
    },
    {
      name: "an own class without a migration",
      change: (_o, a) => {
        a.durable_objects = { bindings: [{ name: "LANE_EXECUTOR", class_name: "LaneExecutor" }] };
      },
      file: "workers/agent/wrangler.toml",
      key: "durable_objects.bindings[0].class_name",
      message: /no \[\[migrations\]\] entry creates LaneExecutor/,
    },
    {
      name: "a class deleted by a later migration",
      change: (o) => {
        o.migrations = [
          { tag: "v1", new_sqlite_classes: ["SwarmRoom"] },
          { tag: "v2", deleted_classes: ["SwarmRoom"] },
        ];
      },
      file: "wrangler.toml",
      key: "durable_objects.bindings[0].class_name",
      message: /no \[\[migrations\]\] entry creates SwarmRoom/,
    },
    {
      name: "a migration tag used twice",
      change: (o) => {
        o.migrations = [
          { tag: "v1", new_sqlite_classes: ["SwarmRoom"] },
          { tag: "v1", new_sqlite_classes: ["KeyPool"] },
        ];
      },
      file: "wrangler.toml",
      key: "migrations[1].tag",
      message: /used twice/,
    },
    {
      name: "a secret that a var shadows",
      change: (o) => {
        o.vars = { API_TOKENS: "x" };
      },
      file: "wrangler.toml",
      key: "secrets.required[0]",
      message: /binding API_TOKENS is also vars.API_TOKENS/,
    },
    {
      name: "one database with two ids",
      change: (_o, a) => {
        a.d1_databases = [{ binding: "LEDGER_DB", database_name: "ledger", database_id: "other-id" }];
      },
      file: "workers/agent/wrangler.toml",
      key: "d1_databases[0].database_id",
      message: /other-id here and local-id in wrangler.toml/,
    },
    {
      name: "a queue with two consumers",
      change: (o) => {
        o.queues = { producers: [{ binding: "TASK_QUEUE", queue: "tasks" }], consumers: [{ queue: "tasks" }] };
      },
      file: "workers/agent/wrangler.toml",
      key: "queues.consumers[0].queue",
      message: /consumed by orch too/,
    },
    {
      name: "two Workers of one name",
      change: (_o, a) => {
        a.name = "orch";
      },
      file: "workers/agent/wrangler.toml",
      key: "name",
      message: /also the name in wrangler.toml/,
    },
  ];
  it.each(cases)("reports $name at its file and key", ({ change, file, key, message, severity }) => {
    const [o, a] = [orchestrator(), agent()];
    change(o, a);
    const problems = validateConfigs([o, a], WORKERD);
    expect(problems).toContainEqual(expect.objectContaining({ file, key, message: expect.stringMatching(message), severity: severity ?? "error" }));
  });
});

describe("orderWorkers", () => {
  it.each([
    { name: "the host first, whatever the configs' order", input: () => [agent(), orchestrator()], expected: ["orch", "agent"] },
    {
      name: "the configs' order when nobody binds another",
      input: () => [{ ...agent(), durable_objects: { bindings: [] } }, orchestrator()],
      expected: ["agent", "orch"],
    },
  ])("$name", ({ input, expected }) => {
    expect(orderWorkers(input())?.map((w) => w.name)).toEqual(expected);
  });

  it("finds no order for a cycle, and validation says so", () => {
    const o = orchestrator();
    o.durable_objects = { bindings: [...o.durable_objects.bindings, { name: "X", class_name: "LaneExecutor", script_name: "agent" }] };
    const a = { ...agent(), migrations: [{ tag: "v1", new_sqlite_classes: ["LaneExecutor"] }] };
    expect(orderWorkers([o, a])).toBeNull();
    expect(validateConfigs([o, a], WORKERD)).toContainEqual(
      expect.objectContaining({ key: "durable_objects.bindings", message: expect.stringMatching(/cycle/) }),
    );
  });
});

const offline: KnownState = { source: "offline", d1: new Map(), queues: new Set(), r2Buckets: new Set(), secrets: new Map() };
const deployConfigOf = (worker: string) => `.deploy/${worker}.wrangler.json`;

describe("planDeploy", () => {
  it("offline, lists every resource of both configs as would ensure, with its command", () => {
    const plan = planDeploy({ workers: [orchestrator(), agent()], known: offline, suppliedSecrets: new Set(), deployConfigOf });
    expect(plan.resources.map((r) => [r.kind, r.name, r.presence, r.create.join(" ")])).toEqual([
      ["D1 database", "ledger", "would ensure", "d1 create ledger"],
      ["queue", "tasks", "would ensure", "queues create tasks"],
      ["queue", "tasks-dlq", "would ensure", "queues create tasks-dlq"],
    ]);
    expect(plan.resources.find((r) => r.name === "tasks")?.usedBy).toEqual(["orch sends (TASK_QUEUE)", "agent consumes"]);
    expect(plan.secrets.map((s) => `${s.worker}:${s.name}:${s.status}:${s.put.join(" ")}`)).toEqual([
      "orch:API_TOKENS:unknown:secret put API_TOKENS -c wrangler.toml",
      "orch:WEBHOOK_SECRET:unknown:secret put WEBHOOK_SECRET -c wrangler.toml",
      "agent:MODEL_API_KEY:unknown:secret put MODEL_API_KEY -c workers/agent/wrangler.toml",
      "agent:WEBHOOK_SECRET:unknown:secret put WEBHOOK_SECRET -c workers/agent/wrangler.toml",
    ]);
    expect(plan.blockers).toEqual([]);
  });

  it("reads new resources from the configs: an R2 bucket and a Durable Object class the agent hosts", () => {
    const a = agent();
    a.r2_buckets = [{ binding: "ARTIFACTS", bucket_name: "artifacts", jurisdiction: "eu" }];
    a.durable_objects = { bindings: [...a.durable_objects.bindings, { name: "LANE_EXECUTOR", class_name: "LaneExecutor" }] };
    a.migrations = [{ tag: "v1", new_sqlite_classes: ["LaneExecutor"] }];
    const plan = planDeploy({ workers: [orchestrator(), a], known: offline, suppliedSecrets: new Set(), deployConfigOf });
    expect(plan.resources.find((r) => r.kind === "R2 bucket")).toMatchObject({
      name: "artifacts",
      create: ["r2", "bucket", "create", "artifacts", "--jurisdiction", "eu"],
    });
    expect(plan.durableObjects).toEqual([
      { className: "SwarmRoom", host: "orch", migrationTags: ["v1"], boundBy: ["orch (SWARM_ROOM)", "agent (SWARM_ROOM)"] },
      { className: "LaneExecutor", host: "agent", migrationTags: ["v1"], boundBy: ["agent (LANE_EXECUTOR)"] },
    ]);
  });

  const stepCases: { name: string; known: KnownState; supplied: string[]; steps: string[]; blockers: number }[] = [
    {
      name: "a fresh account: creates everything, secrets missing block the deploy",
      known: { ...offline, source: "account" },
      supplied: [],
      steps: [
        "d1 create ledger",
        "queues create tasks",
        "queues create tasks-dlq",
        "-",
        "d1 migrations apply ledger --remote -c .deploy/orch.wrangler.json",
        "deploy -c .deploy/orch.wrangler.json",
        "deploy -c .deploy/agent.wrangler.json",
        "-",
      ],
      blockers: 4,
    },
    {
      name: "everything there: nothing created, secrets set, deploys in order",
      known: {
        source: "account",
        d1: new Map([["ledger", "uuid-1"]]),
        queues: new Set(["tasks", "tasks-dlq"]),
        r2Buckets: new Set(),
        secrets: new Map([
          ["orch", new Set(["API_TOKENS", "WEBHOOK_SECRET"])],
          ["agent", new Set(["MODEL_API_KEY", "WEBHOOK_SECRET"])],
        ]),
      },
      supplied: [],
      steps: [
        "-",
        "d1 migrations apply ledger --remote -c .deploy/orch.wrangler.json",
        "deploy -c .deploy/orch.wrangler.json",
        "deploy -c .deploy/agent.wrangler.json",
        "-",
      ],
      blockers: 0,
    },
    {
      name: "secrets supplied: uploaded with the deploys, nothing blocks",
      known: { ...offline, source: "account", d1: new Map([["ledger", "uuid-1"]]), queues: new Set(["tasks", "tasks-dlq"]) },
      supplied: ["API_TOKENS", "WEBHOOK_SECRET", "MODEL_API_KEY"],
      steps: [
        "-",
        "d1 migrations apply ledger --remote -c .deploy/orch.wrangler.json",
        "deploy -c .deploy/orch.wrangler.json",
        "deploy -c .deploy/agent.wrangler.json",
        "-",
      ],
      blockers: 0,
    },
  ];
  it.each(stepCases)("$name", ({ known, supplied, steps, blockers }) => {
    const plan = planDeploy({ workers: [agent(), orchestrator()], known, suppliedSecrets: new Set(supplied), deployConfigOf });
    expect(plan.workerOrder).toEqual(["orch", "agent"]);
    expect(plan.steps.map((s) => s.command?.join(" ") ?? "-")).toEqual(steps);
    expect(plan.blockers).toHaveLength(blockers);
    if (supplied.length > 0) expect(plan.steps.find((s) => s.title === "deploy agent")?.uploadsSecrets).toEqual(["MODEL_API_KEY", "WEBHOOK_SECRET"]);
  });

  it("takes what the local record lists as existing, offline", () => {
    const plan = planDeploy({
      workers: [orchestrator(), agent()],
      known: { ...offline, d1: new Map([["ledger", "uuid-1"]]) },
      suppliedSecrets: new Set(),
      deployConfigOf,
    });
    expect(plan.resources[0]).toMatchObject({ name: "ledger", presence: "exists", id: "uuid-1" });
  });
});
