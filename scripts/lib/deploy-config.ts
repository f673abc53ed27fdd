// The deploy's own copy of a Worker's wrangler config: the committed config as parsed, with the
// account's D1 ids in place of the local one and its relative paths rebased onto the folder the copy
// is written to (wrangler resolves them against the config file). No I/O; the committed
// wrangler.toml is never rewritten. The local stack's agent configs are copies made the same way
// (scripts/lib/agent-configs.ts).
import path from "node:path";

/** The path keys of a wrangler config that this repository's configs use, or might. */
const TOP_LEVEL_PATHS = ["main", "base_dir", "tsconfig"] as const;

export class DeployConfigError extends Error {}

/**
 * `raw` is the config as parsed (wrangler's experimental_readRawConfig), `configDir` the folder of
 * the committed file, `deployDir` the folder of the copy; `d1Ids` maps database_name → id.
 */
export function toDeployConfig(
  raw: Readonly<Record<string, unknown>>,
  configDir: string,
  deployDir: string,
  d1Ids: ReadonlyMap<string, string>,
): Record<string, unknown> {
  if ("env" in raw) throw new DeployConfigError("named environments ([env.*]) are not supported by npm run deploy");
  for (const key of ["site", "build", "wasm_modules", "text_blobs", "data_blobs"]) {
    if (key in raw) throw new DeployConfigError(`[${key}] holds paths that npm run deploy does not rebase yet`);
  }
  const rebase = (value: string): string => {
    const relative = path.relative(deployDir, path.resolve(configDir, value));
    return relative.startsWith(".") ? relative : `./${relative}`;
  };
  const copy: Record<string, unknown> = structuredClone({ ...raw });
  for (const key of TOP_LEVEL_PATHS) {
    const value = copy[key];
    if (typeof value === "string") copy[key] = rebase(value);
  }
  const assets = copy.assets;
  if (isRecord(assets) && typeof assets.directory === "string") assets.directory = rebase(assets.directory);
  if (Array.isArray(copy.d1_databases)) {
    copy.d1_databases = copy.d1_databases.map((db: unknown) => {
      if (!isRecord(db)) return db;
      const name = String(db.database_name);
      const id = d1Ids.get(name);
      if (id === undefined) throw new DeployConfigError(`no id for the D1 database ${name}`);
      // wrangler's default migrations_dir is "migrations" next to the config: explicit, so it moves too.
      return { ...db, database_id: id, migrations_dir: rebase(typeof db.migrations_dir === "string" ? db.migrations_dir : "migrations") };
    });
  }
  return copy;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
