import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { anchorsOf, findBrokenLinks, formatBrokenLinks, type LinkLookup, linksOf, toSlug } from "./markdown-links.ts";

describe("GitHub's heading slugs", () => {
  it.each([
    ["Quick start", "quick-start"],
    ["Swarm spec (`POST /v1/swarms`)", "swarm-spec-post-v1swarms"],
    ["Planner: `goal` instead of `tasks`", "planner-goal-instead-of-tasks"],
    ["Tenants, keys and limits", "tenants-keys-and-limits"],
    ["Gateway: many keys, many models (`GATEWAY_CONFIG` on both Workers)", "gateway-many-keys-many-models-gateway_config-on-both-workers"],
    ["Live events (SwarmRoom → client, `src/core/live-events.ts`)", "live-events-swarmroom--client-srccorelive-eventsts"],
    ["1. The flow", "1-the-flow"],
    ["Why 950 calls in flight do not fit this machine", "why-950-calls-in-flight-do-not-fit-this-machine"],
    ["See [the docs](docs/api.md) here", "see-the-docs-here"],
    ["Before two workerd processes: 740bd77 → 0e4dd1a (`--rounds 3`)", "before-two-workerd-processes-740bd77--0e4dd1a---rounds-3"],
    ["Ünïcode stays", "ünïcode-stays"],
  ])("%s → #%s", (heading, slug) => {
    expect(toSlug(heading)).toBe(slug);
  });
});

describe("the anchors a document offers", () => {
  it.each([
    ["ATX headings, closing hashes dropped", "# Title\n## Usage ##\n", ["title", "usage"]],
    ["a repeated heading is numbered", "## Example\n## Example\n### Example\n", ["example", "example-1", "example-2"]],
    ["setext headings", "Title\n=====\nPart two\n---\n", ["title", "part-two"]],
    ["headings inside a code fence are not headings", "# Real\n```sh\n# a comment\n```\n~~~\n## Nope\n~~~\n", ["real"]],
    ["a table's rule is not a setext underline", "| a | b |\n| --- | --- |\n", []],
    ["HTML ids and names", '<a name="top"></a>\n<div id="faq"></div>\n', ["top", "faq"]],
    ["seven hashes are text", "####### no\n", []],
  ])("%s", (_name, markdown, anchors) => {
    expect([...anchorsOf(markdown)]).toEqual(anchors);
  });
});

describe("the links of a document", () => {
  it.each([
    ["an inline link", "see [the API](docs/api.md#routes).", ["docs/api.md#routes"]],
    ["an image", "![swarm](docs/screenshots/swarm-page.png)", ["docs/screenshots/swarm-page.png"]],
    ["code in the link text", "[`docs/benchmarks.md`](docs/benchmarks.md)", ["docs/benchmarks.md"]],
    ["a title after the target", '[a](a.md "A page")', ["a.md"]],
    ["an angle-bracketed target", "[a](<my page.md>)", ["my page.md"]],
    [
      "parentheses in the target",
      "[w](https://en.wikipedia.org/wiki/Fold_(higher-order_function))",
      ["https://en.wikipedia.org/wiki/Fold_(higher-order_function)"],
    ],
    ["brackets in the link text", "[see [1]](notes.md)", ["notes.md"]],
    ["two links on a line", "[a](a.md) and [b](#b)", ["a.md", "#b"]],
    ["a reference definition", "[api]: docs/api.md", ["docs/api.md"]],
    ["HTML href and src", '<a href="docs/x.md">x</a> <img src="y.png">', ["docs/x.md", "y.png"]],
    ["nothing inside inline code", "`[not](a-link.md)` but [this](one.md)", ["one.md"]],
    ["nothing inside a fence", "```md\n[not](a-link.md)\n```\n", []],
    ["a bracket that is not a link", "an array `[1, 2]` and [brackets] (spaced)", []],
  ])("%s", (_name, markdown, targets) => {
    expect(linksOf(markdown).map((l) => l.target)).toEqual(targets);
  });

  it("counts lines from 1, fences included", () => {
    expect(linksOf("```\n[x](y)\n```\n\n[a](b.md)")).toEqual([{ line: 5, target: "b.md" }]);
  });
});

describe("broken links", () => {
  const files: Record<string, string> = {
    "README.md": "# edgeswarm\n## Quick start\n",
    "docs/api.md": "# API\n## Tenants, keys and limits\n## Routes\n## Routes\n",
    "docs/screenshots/swarm-page.png": "",
    "src/core/ids.ts": "",
    LICENSE: "",
  };
  const lookup: LinkLookup = {
    pathExists: (path) => path in files || Object.keys(files).some((f) => f.startsWith(`${path}/`)),
    readMarkdown: (path) => (path.endsWith(".md") ? files[path] : undefined),
  };
  const check = (file: string, markdown: string) => findBrokenLinks(new Map([[file, markdown]]), lookup).map((b) => [b.target, b.reason]);

  it.each([
    ["README.md", "[api](docs/api.md)", []],
    ["README.md", "[limits](docs/api.md#tenants-keys-and-limits)", []],
    ["README.md", "[second routes](docs/api.md#routes-1)", []],
    ["README.md", "[third routes](docs/api.md#routes-2)", [["docs/api.md#routes-2", "missing_anchor"]]],
    ["README.md", "## Quick start\n[start](#quick-start) [gone](#install)", [["#install", "missing_anchor"]]],
    ["README.md", "[deploy](docs/deploy.md)", [["docs/deploy.md", "missing_file"]]],
    ["README.md", "![shot](docs/screenshots/swarm-page.png) [docs](docs/) [code](src/core/ids.ts#L3)", []],
    ["docs/guide.md", "[home](../README.md#quick-start) [shot](screenshots/swarm-page.png) [api](api.md#routes)", []],
    ["docs/guide.md", "## Routes\n[self](#routes) [self by name](guide.md#routes) [nope](guide.md#nope)", [["guide.md#nope", "missing_anchor"]]],
    ["docs/api.md", "[wrong base](docs/api.md)", [["docs/api.md", "missing_file"]]],
    ["docs/api.md", "[outside](../../elsewhere.md)", [["../../elsewhere.md", "missing_file"]]],
    ["docs/api.md", "[root-relative](/LICENSE) [encoded](../README.md#quick%2Dstart)", []],
    ["README.md", "[web](https://example.com/x.md#nope) [mail](mailto:a@b.c) [proto](//cdn.example/x)", []],
    ["README.md", "[upper](docs/api.md#Routes)", [["docs/api.md#Routes", "missing_anchor"]]],
  ])("%s: %s", (file, markdown, expected) => {
    expect(check(file, markdown)).toEqual(expected);
  });

  it("says where each one is", () => {
    const broken = findBrokenLinks(new Map([["README.md", "ok\n\n[x](nope.md) [y](#nope)"]]), lookup);
    expect(formatBrokenLinks(broken)).toEqual(["README.md:3 nope.md (no such file)", "README.md:3 #nope (no such heading)"]);
  });
});

describe("the repository's README.md and docs/", () => {
  it("have no broken relative link", () => {
    const root = join(import.meta.dirname, "..", "..");
    const documents = new Map<string, string>([["README.md", readFileSync(join(root, "README.md"), "utf8")]]);
    const walk = (dir: string) => {
      for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
        const path = `${dir}/${entry.name}`;
        if (entry.isDirectory()) walk(path);
        else if (entry.name.endsWith(".md")) documents.set(path, readFileSync(join(root, path), "utf8"));
      }
    };
    walk("docs");
    expect(documents.size).toBeGreaterThan(5);
    const broken = findBrokenLinks(documents, {
      pathExists: (path) => existsSync(join(root, path)),
      readMarkdown: (path) => (existsSync(join(root, path)) ? readFileSync(join(root, path), "utf8") : undefined),
    });
    expect(formatBrokenLinks(broken)).toEqual([]);
  });
});
