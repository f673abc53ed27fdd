// Deterministic fake files for GET /fixtures/<path>: a small source file or doc page whose content
// derives from the path only (no file system), so local examples have something to http_fetch.

import { createPrng } from "./prng.ts";
import { seedOf, sha256hex, words } from "./text.ts";

const PY = new Set(["py"]);
const JS = new Set(["ts", "tsx", "js", "jsx", "mjs", "cjs"]);

/** The text served for a fixture path (the part after /fixtures/). */
export function fixtureText(path: string): string {
  const hash = sha256hex(path);
  const ext = /\.([A-Za-z0-9]+)$/.exec(path)?.[1]?.toLowerCase() ?? "";
  if (PY.has(ext)) return sourceFile(path, hash, "py");
  if (JS.has(ext)) return sourceFile(path, hash, "js");
  return docPage(path, hash);
}

/**
 * Two or three small functions. Some paths get a TODO, a debug print or an over-long line (picked
 * by the hash), so the lint webhook has something to find in fetched fixtures.
 */
function sourceFile(path: string, hash: string, lang: "py" | "js"): string {
  const prng = createPrng(seedOf(hash));
  const count = 2 + (seedOf(hash) % 2);
  const comment = lang === "py" ? "#" : "//";
  const lines = [`${comment} [mock] fixture ${path} (sha ${hash.slice(0, 8)}): fake source, deterministic from the path.`, ""];
  for (let i = 0; i < count; i++) {
    const h = sha256hex(`${hash}:${i}`);
    const [a = "mock", b = "value"] = words(h, 2).split(" ");
    const doc = words(sha256hex(`${h}:doc`), 6);
    const n = Math.floor(prng.next() * 100);
    const quirk = Math.floor(prng.next() * 4);
    if (lang === "py") {
      lines.push(`def ${a}_${b}(value):`, `    """${doc}."""`);
      if (quirk === 1) lines.push(`    # TODO: ${words(sha256hex(`${h}:todo`), 4)}`);
      if (quirk === 2) lines.push(`    print(value)`);
      if (quirk === 3) lines.push(`    result = value + ${n}  # ${words(sha256hex(`${h}:long`), 14)}`);
      lines.push(`    return value + ${n}`, "", "");
    } else {
      lines.push(`/** ${doc}. */`, `export function ${a}${b.charAt(0).toUpperCase()}${b.slice(1)}(value: number): number {`);
      if (quirk === 1) lines.push(`  // TODO: ${words(sha256hex(`${h}:todo`), 4)}`);
      if (quirk === 2) lines.push(`  console.log(value);`);
      if (quirk === 3) lines.push(`  const result = value + ${n}; // ${words(sha256hex(`${h}:long`), 14)}`);
      lines.push(`  return value + ${n};`, "}", "");
    }
  }
  return `${lines.join("\n").trimEnd()}\n`;
}

function docPage(path: string, hash: string): string {
  const title = words(sha256hex(`${hash}:title`), 3);
  const section = words(sha256hex(`${hash}:section`), 2);
  return [
    `# [mock] ${title} (fixture ${path})`,
    "",
    `This page is a mock fixture (sha ${hash.slice(0, 8)}): ${words(sha256hex(`${hash}:p1`), 18)}.`,
    "",
    `## ${section}`,
    "",
    `${words(sha256hex(`${hash}:p2`), 14)}.`,
    "",
    `- ${words(sha256hex(`${hash}:i1`), 4)}`,
    `- ${words(sha256hex(`${hash}:i2`), 4)}`,
    `- ${words(sha256hex(`${hash}:i3`), 4)}`,
    "",
  ].join("\n");
}
