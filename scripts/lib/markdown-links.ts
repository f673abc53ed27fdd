// Relative links in Markdown that lead nowhere: a file link to a missing path, or a `#anchor` to a
// heading that does not exist (GitHub's slugs). Pure: the caller passes the texts and how to look
// paths up; external links (any scheme, or `//host`) are not checked.
import { posix } from "node:path";

export interface MarkdownLink {
  /** 1-based line of the link in its document. */
  line: number;
  target: string;
}

export type BrokenReason = "missing_file" | "missing_anchor";

export interface BrokenLink extends MarkdownLink {
  /** Repository-relative path of the document that holds the link. */
  file: string;
  reason: BrokenReason;
}

export interface LinkLookup {
  /** True when a repository-relative path (a file or a folder) exists. */
  pathExists: (path: string) => boolean;
  /** The text of a repository-relative Markdown file, or undefined when there is none. */
  readMarkdown: (path: string) => string | undefined;
}

const FENCE = /^ {0,3}(`{3,}|~{3,})/;
const ATX_HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const SETEXT_UNDERLINE = /^ {0,3}(=+|-+)[ \t]*$/;
// GitHub keeps letters, marks, numbers, connector punctuation (`_`), spaces and hyphens.
const NOT_SLUG_CHAR = /[^\p{L}\p{M}\p{N}\p{Pc} -]/gu;
const SCHEME = /^[a-z][a-z0-9+.-]*:/i;

/** Each line of a document with fenced code blocks blanked out (line numbers are kept). */
function proseLines(markdown: string): string[] {
  const lines = markdown.split(/\r?\n/);
  let fence: string | null = null;
  return lines.map((line) => {
    const open = FENCE.exec(line);
    if (fence === null) {
      if (open?.[1] === undefined) return line;
      fence = open[1];
      return "";
    }
    if (open?.[1] !== undefined && open[1][0] === fence[0] && open[1].length >= fence.length && line.trim() === open[1]) fence = null;
    return "";
  });
}

/** Inline code spans replaced by as many `x`, so a link around code still parses and nothing inside code does. */
function blankCodeSpans(line: string): string {
  return line.replace(/(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/g, (span) => "x".repeat(span.length));
}

/** The text a heading renders to: links and images reduced to their text, tags and code marks dropped. */
function headingText(raw: string): string {
  return raw
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/<[^>]+>/g, "")
    .trim();
}

/** GitHub's anchor of a heading's text, before duplicates are numbered. */
export function toSlug(heading: string): string {
  return headingText(heading).toLowerCase().replace(NOT_SLUG_CHAR, "").replace(/ /g, "-");
}

/** Every anchor a document offers: its headings' slugs (a repeated one gets `-1`, `-2`, …) and HTML `id`/`name` attributes. */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const add = (slug: string) => {
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  };
  const lines = proseLines(markdown);
  lines.forEach((line, i) => {
    const atx = ATX_HEADING.exec(line);
    if (atx) add(toSlug(atx[2] ?? ""));
    else {
      const previous = lines[i - 1];
      if (SETEXT_UNDERLINE.test(line) && previous !== undefined && previous.trim() !== "" && !ATX_HEADING.test(previous) && !/^\s*\|/.test(previous))
        add(toSlug(previous));
    }
    for (const match of line.matchAll(/<[a-z][^>]*\s(?:id|name)="([^"]+)"/gi)) if (match[1] !== undefined) anchors.add(match[1]);
  });
  return anchors;
}

/** Every link and image target in a document's prose: inline `[text](target)`, reference definitions, and HTML `href`/`src`. */
export function linksOf(markdown: string): MarkdownLink[] {
  const links: MarkdownLink[] = [];
  proseLines(markdown).forEach((rawLine, i) => {
    const line = blankCodeSpans(rawLine);
    const push = (target: string | undefined) => {
      if (target !== undefined && target !== "") links.push({ line: i + 1, target });
    };
    // Link text may hold one level of brackets; the target one level of parentheses; an optional "title" follows.
    for (const m of line.matchAll(/!?\[(?:[^[\]]|\[[^\]]*\])*\]\(\s*(<[^>]*>|(?:[^()\s]|\([^()\s]*\))+)(?:\s+"[^"]*")?\s*\)/g))
      push(m[1]?.replace(/^<|>$/g, ""));
    const definition = /^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)/.exec(line);
    if (definition) push(definition[1]?.replace(/^<|>$/g, ""));
    for (const m of line.matchAll(/<(?:a|img)\s[^>]*?(?:href|src)="([^"]*)"/gi)) push(m[1]);
  });
  return links;
}

const isExternal = (target: string) => SCHEME.test(target) || target.startsWith("//");

function decode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** The broken relative links of each document (keys: repository-relative paths, `/`-separated). */
export function findBrokenLinks(documents: ReadonlyMap<string, string>, lookup: LinkLookup): BrokenLink[] {
  const anchorCache = new Map<string, Set<string> | null>();
  const anchorsAt = (path: string): Set<string> | null => {
    if (!anchorCache.has(path)) {
      const text = documents.get(path) ?? lookup.readMarkdown(path);
      anchorCache.set(path, text === undefined ? null : anchorsOf(text));
    }
    return anchorCache.get(path) ?? null;
  };
  const broken: BrokenLink[] = [];
  for (const [file, markdown] of documents) {
    for (const link of linksOf(markdown)) {
      if (isExternal(link.target)) continue;
      const hashAt = link.target.indexOf("#");
      const pathPart = (hashAt === -1 ? link.target : link.target.slice(0, hashAt)).replace(/\?.*$/, "");
      const anchor = hashAt === -1 ? null : decode(link.target.slice(hashAt + 1));
      const target =
        pathPart === "" ? file : posix.normalize(pathPart.startsWith("/") ? decode(pathPart).slice(1) : posix.join(posix.dirname(file), decode(pathPart)));
      if (target.startsWith("..") || (target !== file && !lookup.pathExists(target.replace(/\/$/, "")))) {
        broken.push({ file, ...link, reason: "missing_file" });
        continue;
      }
      // An anchor into a non-Markdown file (a line `#L10` of source) is GitHub's own, not a heading.
      if (anchor === null || anchor === "" || !target.endsWith(".md")) continue;
      if (!anchorsAt(target)?.has(anchor)) broken.push({ file, ...link, reason: "missing_anchor" });
    }
  }
  return broken;
}

/** One line per broken link, as `file:line target (reason)`. */
export function formatBrokenLinks(broken: readonly BrokenLink[]): string[] {
  return broken.map((b) => `${b.file}:${b.line} ${b.target} (${b.reason === "missing_file" ? "no such file" : "no such heading"})`);
}
