// Which URLs an agent may reach: http_fetch targets (the swarm's http_allowlist, then no private,
// loopback, link-local or metadata address) and webhook tool URLs. No I/O: it judges the URL's text.
// It cannot see where a host NAME resolves: names that resolve to private addresses are kept out by
// the allowlist (only hosts the user named are reached). What it stops is the model, or a redirect,
// writing an address literal in any of its spellings, or a well-known internal name.

/**
 * The WHATWG URL members this module reads. The core's tsconfig has no DOM or Workers types (see
 * STYLE.md), so the global `URL` is declared here, for this module only; both runtimes the core runs
 * in (workerd, with the `url_standard` behaviour of every compatibility date since 2022-10-31, and
 * Node) implement the WHATWG URL Standard, whose host parser normalizes `2130706433`, `0x7f.1`,
 * `0177.0.0.1` and `127.1` to `127.0.0.1`, lower-cases names, punycodes Unicode names and compresses
 * IPv6 (`[::ffff:127.0.0.1]` → `[::ffff:7f00:1]`). So every check below sees one canonical spelling.
 */
declare class URL {
  constructor(url: string, base?: string | URL);
  readonly href: string;
  readonly origin: string;
  readonly protocol: string;
  readonly username: string;
  readonly password: string;
  readonly host: string;
  readonly hostname: string;
  readonly port: string;
  readonly pathname: string;
  readonly search: string;
  readonly hash: string;
  toString(): string;
}

export interface FetchPolicy {
  /** The swarm's http_allowlist: `host`, `*.domain` (subdomains only), `[ipv6]`, each optionally `:port`. */
  allowlist: readonly string[];
  /** Let private, loopback and metadata targets through (local development against local servers). */
  allowPrivate: boolean;
}

export type TargetCheck = { ok: true; url: URL } | { ok: false; reason: string };

/**
 * May http_fetch request `url`? Checks, in order: a parsable absolute URL; http or https; no user
 * name or password; the host on the allowlist (case-insensitive, a trailing dot ignored); then,
 * unless `policy.allowPrivate`, an address that is not private, loopback, link-local, CGNAT,
 * multicast or reserved (IPv4-mapped, IPv4-compatible, NAT64 and 6to4 IPv6 judged by their IPv4
 * address) and not a metadata or internal name. An allowlisted private address is still refused.
 * With `policy.allowPrivate`, link-local and cloud-metadata addresses and names are still refused.
 * Run it again on every redirect target before following it.
 */
export function checkFetchTarget(url: string, policy: FetchPolicy): TargetCheck {
  const parsed = parseHttpUrl(url);
  if (!parsed.ok) return parsed;
  const target = parsed.url;
  const host = withoutTrailingDot(target.hostname);
  const port = effectivePort(target);
  const entries = policy.allowlist.map(parseAllowlistEntry);
  if (!entries.some((entry) => entry !== null && matchesEntry(entry, host, port))) {
    const portNote = entries.some((entry) => entry !== null && matchesEntry({ ...entry, port: null }, host, port)) ? ` on port ${port}` : "";
    return refuse(`host ${host}${portNote} is not on the swarm's http_allowlist (${describeAllowlist(policy.allowlist)})`);
  }
  // Link-local and cloud-metadata targets stay refused even when private ones are allowed: a local
  // tool never lives there, and a metadata service hands out the machine's credentials.
  const why = policy.allowPrivate ? whyNeverReachable(host) : whyPrivate(host);
  if (why !== null) return refuse(`host ${why} (refused)`);
  return { ok: true, url: target };
}

/**
 * May a webhook tool POST to `url`? The same address rules as checkFetchTarget, with the URL's own
 * host as the allowlist (the user declared it in the spec). Unless `allowPrivate` (local
 * development), the URL must be https: the request carries the tool's arguments.
 */
export function checkWebhookTarget(url: string, allowPrivate: boolean): TargetCheck {
  const parsed = parseHttpUrl(url);
  if (!parsed.ok) return parsed;
  const target = parsed.url;
  if (allowPrivate) {
    const never = whyNeverReachable(withoutTrailingDot(target.hostname));
    return never === null ? { ok: true, url: target } : refuse(`host ${never} (refused)`);
  }
  if (target.protocol !== "https:")
    return refuse(`webhook URL ${clip(target.href)} must use https (plain http is accepted only when private targets are allowed, for local development)`);
  const why = whyPrivate(withoutTrailingDot(target.hostname));
  return why === null ? { ok: true, url: target } : refuse(`host ${why} (refused)`);
}

function parseHttpUrl(url: string): TargetCheck {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return refuse(`${JSON.stringify(clip(url))} is not a valid absolute URL (e.g. https://api.example.com/path)`);
  }
  if (target.protocol !== "http:" && target.protocol !== "https:") return refuse(`scheme ${target.protocol} is not allowed (only http: and https:)`);
  if (target.username !== "" || target.password !== "") return refuse("URLs with a user name or password are refused (credentials may not travel in the URL)");
  return { ok: true, url: target };
}

const refuse = (reason: string): { ok: false; reason: string } => ({ ok: false, reason });

const clip = (text: string): string => (text.length > 200 ? `${text.slice(0, 200)}…` : text);

function withoutTrailingDot(host: string): string {
  return host.endsWith(".") ? host.slice(0, -1) : host;
}

function effectivePort(url: URL): number {
  // The URL parser drops a scheme's default port (`https://a.com:443/` → port ""): put it back.
  return url.port !== "" ? Number(url.port) : url.protocol === "https:" ? 443 : 80;
}

// ---------------------------------------------------------------------------------------------
// Allowlist

interface AllowlistEntry {
  /** `*.domain`: any subdomain of `host`, not `host` itself. */
  wildcard: boolean;
  /** Canonical, as the URL parser writes hosts (lower case, IPv6 in brackets and compressed). */
  host: string;
  /** null: any port. */
  port: number | null;
}

const ENTRY_PATTERN = /^(\[[^\]]*\]|[^:[\]]*)(?::(\d{1,5}))?$/;

/** null for an entry that cannot match anything (the spec schema rejects these before they get here). */
function parseAllowlistEntry(raw: string): AllowlistEntry | null {
  let text = raw.trim();
  const wildcard = text.startsWith("*.");
  if (wildcard) text = text.slice(2);
  if (text === "" || /[/?#@\\\s*]/.test(text)) return null;
  const match = ENTRY_PATTERN.exec(text);
  if (match === null) return null;
  const port = match[2] === undefined ? null : Number(match[2]);
  let host: string;
  try {
    // Through the same parser as the URLs, so `API.Example.com.`, `127.1` or `[::FFFF:127.0.0.1]`
    // compare equal to the URLs that spell them differently.
    host = withoutTrailingDot(new URL(`http://${match[1] ?? ""}/`).hostname);
  } catch {
    return null;
  }
  if (host === "" || (wildcard && isIpLiteral(host))) return null;
  return { wildcard, host, port };
}

function matchesEntry(entry: AllowlistEntry, host: string, port: number): boolean {
  if (entry.port !== null && entry.port !== port) return false;
  // A wildcard is about names: `*.0.0.1` must not admit `127.0.0.1`.
  return entry.wildcard ? !isIpLiteral(host) && host.endsWith(`.${entry.host}`) : host === entry.host;
}

const LISTED_ENTRIES = 10;

function describeAllowlist(allowlist: readonly string[]): string {
  if (allowlist.length === 0) return "it is empty";
  const shown = allowlist.slice(0, LISTED_ENTRIES).join(", ");
  return allowlist.length > LISTED_ENTRIES ? `${shown} and ${allowlist.length - LISTED_ENTRIES} more` : shown;
}

// ---------------------------------------------------------------------------------------------
// Addresses and names that are not the public internet

type AddressKind = "loopback" | "private" | "link-local" | "cgnat" | "this-network" | "unspecified" | "multicast" | "broadcast" | "reserved";

const KIND_PHRASES: Record<AddressKind, string> = {
  loopback: "a loopback address",
  private: "a private address",
  "link-local": "a link-local address",
  cgnat: "a carrier-grade NAT address",
  "this-network": 'a "this network" address',
  unspecified: "the unspecified address",
  multicast: "a multicast address",
  broadcast: "the broadcast address",
  reserved: "a reserved address",
};

/** [network, prefix length, kind]; the first match wins. */
const IPV4_RANGES: ReadonlyArray<readonly [string, number, AddressKind]> = [
  ["0.0.0.0", 8, "this-network"],
  ["10.0.0.0", 8, "private"],
  ["100.64.0.0", 10, "cgnat"],
  ["127.0.0.0", 8, "loopback"],
  ["169.254.0.0", 16, "link-local"],
  ["172.16.0.0", 12, "private"],
  ["192.0.0.0", 24, "reserved"], // IETF protocol assignments
  ["192.0.2.0", 24, "reserved"], // documentation (TEST-NET-1)
  ["192.168.0.0", 16, "private"],
  ["198.18.0.0", 15, "reserved"], // benchmarking
  ["198.51.100.0", 24, "reserved"], // documentation (TEST-NET-2)
  ["203.0.113.0", 24, "reserved"], // documentation (TEST-NET-3)
  ["224.0.0.0", 4, "multicast"],
  ["255.255.255.255", 32, "broadcast"],
  ["240.0.0.0", 4, "reserved"],
];

const METADATA_NAMES: ReadonlySet<string> = new Set([
  "metadata.google.internal",
  "metadata.goog",
  "metadata",
  "instance-data",
  "instance-data.ec2.internal",
  "metadata.azure.internal",
  "metadata.tencentyun.com",
]);

/**
 * Cloud metadata services outside 169.254.0.0/16 (which is link-local, refused whole): Alibaba's
 * 100.100.100.200, Oracle's 192.0.0.192; AWS's IPv6 endpoint fd00:ec2::254 is matched in whyNeverReachable.
 */
const METADATA_IPV4: ReadonlySet<number> = new Set(["100.100.100.200", "192.0.0.192"].map((address) => parseIpv4(address) ?? 0));

/** `<host> is <what>` for what no tool may reach even with private targets allowed: link-local and cloud metadata. */
function whyNeverReachable(host: string): string | null {
  const judgeIpv4 = (v4: number, label: string): string | null => {
    if (METADATA_IPV4.has(v4)) return `${label} is a cloud metadata address`;
    return classifyIpv4(v4) === "link-local" ? `${label} is ${KIND_PHRASES["link-local"]}` : null;
  };
  const v4 = parseIpv4(host);
  if (v4 !== null) return judgeIpv4(v4, host);
  if (host.startsWith("[") && host.endsWith("]")) {
    const g = parseIpv6(host.slice(1, -1));
    if (g === null) return `${host} is an unrecognized IPv6 address`;
    const at = (i: number): number => g[i] ?? 0;
    if ((at(0) & 0xffc0) === 0xfe80) return `${host} is ${KIND_PHRASES["link-local"]}`;
    if (at(0) === 0xfd00 && at(1) === 0x0ec2 && g.slice(2, 7).every((x) => x === 0) && at(7) === 0x254) return `${host} is a cloud metadata address`;
    // Every IPv6 spelling that carries an IPv4 address (mapped, translated, compatible, NAT64, 6to4) is judged by it.
    const embedded = toEmbeddedIpv4(g);
    return embedded === null ? null : judgeIpv4(embedded, `${host} (${formatIpv4(embedded)})`);
  }
  return METADATA_NAMES.has(host) ? `${host} is a cloud metadata name` : null;
}

function toEmbeddedIpv4(g: readonly number[]): number | null {
  const zeros = (from: number, to: number): boolean => g.slice(from, to).every((x) => x === 0);
  const at = (i: number): number => g[i] ?? 0;
  const join = (hi: number, lo: number): number => ((hi << 16) | lo) >>> 0;
  if (zeros(0, 5) && at(5) === 0xffff) return join(at(6), at(7));
  if (zeros(0, 4) && at(4) === 0xffff && at(5) === 0) return join(at(6), at(7));
  if (zeros(0, 6) && !(at(6) === 0 && at(7) <= 1)) return join(at(6), at(7));
  if (at(0) === 0x64 && at(1) === 0xff9b && zeros(2, 6)) return join(at(6), at(7));
  if (at(0) === 0x2002) return join(at(1), at(2));
  return null;
}

/** `<host> is <what>` when the host is not on the public internet, else null. */
function whyPrivate(host: string): string | null {
  const v4 = parseIpv4(host);
  if (v4 !== null) {
    const kind = classifyIpv4(v4);
    return kind === null ? null : `${host} is ${KIND_PHRASES[kind]}`;
  }
  if (host.startsWith("[") && host.endsWith("]")) {
    const groups = parseIpv6(host.slice(1, -1));
    // The URL parser has validated it; an unparsable one here is a bug, and refused to be safe.
    if (groups === null) return `${host} is an unrecognized IPv6 address`;
    return whyPrivateIpv6(host, groups);
  }
  if (host === "localhost" || host.endsWith(".localhost")) return `${host} is a loopback name`;
  if (METADATA_NAMES.has(host)) return `${host} is a cloud metadata name`;
  if (host.endsWith(".internal")) return `${host} is an internal name`;
  return null;
}

function whyPrivateIpv6(host: string, g: readonly number[]): string | null {
  const zeros = (from: number, to: number): boolean => g.slice(from, to).every((x) => x === 0);
  const embedded = (label: string, hi: number, lo: number): string | null => {
    const v4 = ((hi << 16) | lo) >>> 0;
    const kind = classifyIpv4(v4);
    return kind === null ? null : `${host} (${label} ${formatIpv4(v4)}) is ${KIND_PHRASES[kind]}`;
  };
  const at = (i: number): number => g[i] ?? 0;
  if (zeros(0, 8)) return `${host} is ${KIND_PHRASES.unspecified}`;
  if (zeros(0, 7) && at(7) === 1) return `${host} is ${KIND_PHRASES.loopback}`;
  if (zeros(0, 5) && at(5) === 0xffff) return embedded("IPv4-mapped", at(6), at(7));
  if (zeros(0, 4) && at(4) === 0xffff && at(5) === 0) return embedded("IPv4-translated", at(6), at(7));
  if (zeros(0, 6)) return embedded("IPv4-compatible", at(6), at(7));
  if (at(0) === 0x64 && at(1) === 0xff9b && zeros(2, 6)) return embedded("NAT64", at(6), at(7));
  if (at(0) === 0x64 && at(1) === 0xff9b && at(2) === 1) return `${host} is ${KIND_PHRASES.private}`;
  if (at(0) === 0x2002) return embedded("6to4", at(1), at(2));
  if ((at(0) & 0xfe00) === 0xfc00) return `${host} is ${KIND_PHRASES.private}`;
  if ((at(0) & 0xffc0) === 0xfe80) return `${host} is ${KIND_PHRASES["link-local"]}`;
  if ((at(0) & 0xffc0) === 0xfec0) return `${host} is ${KIND_PHRASES.private}`;
  if ((at(0) & 0xff00) === 0xff00) return `${host} is ${KIND_PHRASES.multicast}`;
  if (at(0) === 0x2001 && at(1) === 0x0db8) return `${host} is ${KIND_PHRASES.reserved}`;
  if (at(0) === 0x0100 && zeros(1, 4)) return `${host} is ${KIND_PHRASES.reserved}`;
  return null;
}

function classifyIpv4(address: number): AddressKind | null {
  for (const [network, prefix, kind] of IPV4_RANGES) {
    const base = parseIpv4(network) ?? 0;
    const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
    if ((address & mask) >>> 0 === (base & mask) >>> 0) return kind;
  }
  return null;
}

function isIpLiteral(host: string): boolean {
  return parseIpv4(host) !== null || host.startsWith("[");
}

/** Dotted decimal only: the URL parser has already turned every other IPv4 spelling into it. */
function parseIpv4(text: string): number | null {
  const match = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (match === null) return null;
  let value = 0;
  for (const part of match.slice(1)) {
    const octet = Number(part);
    if (octet > 255) return null;
    value = value * 256 + octet;
  }
  return value;
}

function formatIpv4(address: number): string {
  return [address >>> 24, (address >>> 16) & 0xff, (address >>> 8) & 0xff, address & 0xff].join(".");
}

/** Eight 16-bit groups, or null. Accepts `::` compression and a dotted IPv4 tail. */
function parseIpv6(text: string): number[] | null {
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const parseGroups = (side: string, v4Tail: boolean): number[] | null => {
    if (side === "") return [];
    const groups: number[] = [];
    const parts = side.split(":");
    for (const [i, part] of parts.entries()) {
      if (v4Tail && i === parts.length - 1 && part.includes(".")) {
        const v4 = parseIpv4(part);
        if (v4 === null) return null;
        groups.push(v4 >>> 16, v4 & 0xffff);
      } else if (/^[0-9a-f]{1,4}$/i.test(part)) {
        groups.push(Number.parseInt(part, 16));
      } else {
        return null;
      }
    }
    return groups;
  };
  if (halves.length === 1) {
    const groups = parseGroups(text, true);
    return groups !== null && groups.length === 8 ? groups : null;
  }
  const left = parseGroups(halves[0] ?? "", false);
  const right = parseGroups(halves[1] ?? "", true);
  if (left === null || right === null || left.length + right.length > 7) return null;
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
}
