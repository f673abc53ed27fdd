// D1 `files`: the index of a tenant's files (their bytes are R2 objects, src/files/file-objects.ts).
// Takes only the D1 database. Every read and delete is by tenant, so another tenant's file is absent.
import { z } from "zod";

export interface FileRow {
  id: string;
  tenant: string;
  purpose: string;
  filename: string;
  bytes: number;
  /** Epoch ms. */
  createdAt: number;
  /** A batch's output or error file: its bytes are `count` part objects under `prefix` (core/batch-parts.ts); null: one object. */
  parts: { prefix: string; count: number } | null;
}

export interface FilePage {
  files: FileRow[];
  hasMore: boolean;
}

export interface FileIndex {
  insert(row: FileRow): Promise<void>;
  get(tenant: string, id: string): Promise<FileRow | null>;
  /** Newest first; `after` is the id of the last file of the previous page (OpenAI's cursor). */
  list(tenant: string, page: { after: string | null; limit: number; purpose: string | null }): Promise<FilePage>;
  /** false when the tenant has no such file. */
  delete(tenant: string, id: string): Promise<boolean>;
}

const FileRowSchema = z.object({
  id: z.string(),
  tenant: z.string(),
  purpose: z.string(),
  filename: z.string(),
  bytes: z.number().int().nonnegative(),
  created_at: z.number(),
  parts_prefix: z.string().nullable().default(null),
  parts: z.number().int().nonnegative().nullable().default(null),
});

function toFileRow(row: unknown): FileRow {
  const parsed = FileRowSchema.parse(row);
  return {
    id: parsed.id,
    tenant: parsed.tenant,
    purpose: parsed.purpose,
    filename: parsed.filename,
    bytes: parsed.bytes,
    createdAt: parsed.created_at,
    parts: parsed.parts_prefix === null ? null : { prefix: parsed.parts_prefix, count: parsed.parts ?? 0 },
  };
}

export function createFileIndex(db: D1Database): FileIndex {
  return {
    async insert(row) {
      await db
        .prepare("INSERT INTO files (id, tenant, purpose, filename, bytes, created_at, parts_prefix, parts) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
        .bind(row.id, row.tenant, row.purpose, row.filename, row.bytes, row.createdAt, row.parts?.prefix ?? null, row.parts?.count ?? null)
        .run();
    },

    async get(tenant, id) {
      const row = await db.prepare("SELECT * FROM files WHERE tenant = ? AND id = ?").bind(tenant, id).first();
      return row === null ? null : toFileRow(row);
    },

    async list(tenant, { after, limit, purpose }) {
      // The cursor file's own place (created_at, id); an unknown `after` starts from the top, as OpenAI's does.
      const anchor =
        after === null
          ? null
          : await db.prepare("SELECT created_at FROM files WHERE tenant = ? AND id = ?").bind(tenant, after).first<{ created_at: number }>();
      const { results } = await db
        .prepare(
          `SELECT * FROM files WHERE tenant = ?1 AND (?2 IS NULL OR purpose = ?2)
             AND (?3 IS NULL OR created_at < ?3 OR (created_at = ?3 AND id < ?4))
           ORDER BY created_at DESC, id DESC LIMIT ?5`,
        )
        .bind(tenant, purpose, anchor?.created_at ?? null, after ?? "", limit + 1)
        .all();
      const files = results.map(toFileRow);
      return { files: files.slice(0, limit), hasMore: files.length > limit };
    },

    async delete(tenant, id) {
      const result = await db.prepare("DELETE FROM files WHERE tenant = ? AND id = ?").bind(tenant, id).run();
      return result.meta.changes > 0;
    },
  };
}
