import { describe, expect, it } from "vitest";
import { DeployConfigError, toDeployConfig } from "./deploy-config.ts";

const raw = {
  name: "edgeswarm-orchestrator",
  main: "workers/orchestrator/index.ts",
  assets: { directory: "./dashboard/dist", not_found_handling: "none" },
  d1_databases: [{ binding: "LEDGER_DB", database_name: "edgeswarm", database_id: "local-id", migrations_dir: "migrations" }],
  vars: { LANE_SLOTS: "128" },
};

describe("toDeployConfig", () => {
  it("puts the account's id in and rebases every path onto the deploy folder, leaving the original alone", () => {
    const copy = toDeployConfig(raw, "/repo", "/repo/.deploy", new Map([["edgeswarm", "uuid-1"]]));
    expect(copy).toEqual({
      ...raw,
      main: "../workers/orchestrator/index.ts",
      assets: { directory: "../dashboard/dist", not_found_handling: "none" },
      d1_databases: [{ binding: "LEDGER_DB", database_name: "edgeswarm", database_id: "uuid-1", migrations_dir: "../migrations" }],
    });
    expect(raw.d1_databases[0]?.database_id).toBe("local-id");
  });

  it.each([
    { name: "a config in a subfolder", configDir: "/repo/workers/agent", main: "index.ts", expected: "../workers/agent/index.ts" },
    { name: "a deploy folder below the config", configDir: "/repo/.deploy/..", main: "x.ts", expected: "../x.ts" },
  ])("rebases main for $name", ({ configDir, main, expected }) => {
    expect(toDeployConfig({ main }, configDir, "/repo/.deploy", new Map()).main).toBe(expected);
  });

  it.each([
    { name: "an unknown D1 database", config: raw, message: /no id for the D1 database edgeswarm/ },
    { name: "named environments", config: { ...raw, env: { staging: {} } }, message: /named environments/ },
    { name: "paths it does not rebase", config: { ...raw, build: { cwd: "x" } }, message: /\[build\]/ },
  ])("refuses $name", ({ config, message }) => {
    expect(() => toDeployConfig(config, "/repo", "/repo/.deploy", new Map())).toThrow(DeployConfigError);
    expect(() => toDeployConfig(config, "/repo", "/repo/.deploy", new Map())).toThrow(message);
  });
});
