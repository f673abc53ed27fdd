import { describe, expect, it } from "vitest";
import { checkFetchTarget, checkWebhookTarget } from "./ssrf-guard.ts";
import type { FetchPolicy } from "./ssrf-guard.ts";

const policy = (allowlist: string[], allowPrivate = false): FetchPolicy => ({ allowlist, allowPrivate });
const PUBLIC = policy(["api.example.com", "*.docs.rs", "internal.example.com:8080", "[2606:4700::1111]"]);
// Private addresses on the allowlist: the address rules must refuse them anyway.
const PRIVATE_LISTED = policy([
  "127.0.0.1",
  "10.0.0.1",
  "169.254.169.254",
  "[::1]",
  "[::ffff:7f00:1]",
  "[::ffff:a9fe:a9fe]",
  "[64:ff9b::a00:1]",
  "[::7f00:1]",
  "[fd00::1]",
  "[fe80::1]",
  "[::]",
  "0.0.0.0",
  "100.64.0.1",
  "172.16.5.4",
  "192.168.1.1",
  "224.0.0.1",
  "255.255.255.255",
  "240.0.0.1",
  "[ff02::1]",
  "[2002:7f00:1::]",
  "localhost",
  "*.localhost",
  "metadata.google.internal",
  "metadata",
  "instance-data",
  "*.internal",
  "8.8.8.8",
  "[::ffff:808:808]",
]);

describe("checkFetchTarget", () => {
  it.each([
    ["an allowlisted host, any port", "https://api.example.com/v1/items?q=1", PUBLIC],
    ["an allowlisted host on another port", "http://api.example.com:8443/", PUBLIC],
    ["host names compare case-insensitively", "https://API.Example.COM/", PUBLIC],
    ["a trailing dot on the host is the same host", "https://api.example.com./x", PUBLIC],
    ["a wildcard admits a subdomain", "https://serde.docs.rs/serde/", PUBLIC],
    ["a wildcard admits a deeper subdomain", "https://a.b.docs.rs/", PUBLIC],
    ["a port entry admits that port", "http://internal.example.com:8080/health", PUBLIC],
    ["an IPv6 entry admits its address", "https://[2606:4700:0:0::1111]/", PUBLIC],
    ["an entry with the default port matches a URL without one", "https://api.example.com/", policy(["api.example.com:443"])],
    ["a public IPv4 on the allowlist", "http://8.8.8.8/", PRIVATE_LISTED],
    ["an IPv4-mapped public address", "http://[::ffff:8.8.8.8]/", PRIVATE_LISTED],
    ["allowPrivate lets an allowlisted loopback through", "http://127.0.0.1:8787/", policy(["127.0.0.1"], true)],
    ["allowPrivate lets localhost through", "http://localhost:8787/", policy(["localhost"], true)],
  ])("allows %s", (_, url, p) => {
    const check = checkFetchTarget(url, p);
    expect(check.ok, check.ok ? "" : check.reason).toBe(true);
  });

  it.each([
    // The allowlist: only the hosts the user named.
    [
      "a host not on the allowlist",
      "https://evil.com/",
      PUBLIC,
      "host evil.com is not on the swarm's http_allowlist (api.example.com, *.docs.rs, internal.example.com:8080, [2606:4700::1111])",
    ],
    ["a wildcard does not admit its apex", "https://docs.rs/", PUBLIC, "host docs.rs is not on the swarm's http_allowlist"],
    ["a suffix that is not a subdomain", "https://evildocs.rs/", PUBLIC, "host evildocs.rs is not on"],
    ["an allowlisted name as a prefix of another host", "https://api.example.com.evil.com/", PUBLIC, "host api.example.com.evil.com is not on"],
    ["a port entry refuses another port", "http://internal.example.com:9090/", PUBLIC, "host internal.example.com on port 9090 is not on"],
    ["a port entry refuses the default port", "http://internal.example.com/", PUBLIC, "host internal.example.com on port 80 is not on"],
    ["an empty allowlist", "https://api.example.com/", policy([]), "is not on the swarm's http_allowlist (it is empty)"],
    ["a wildcard never admits an IP address", "http://127.0.0.1/", policy(["*.0.0.1"], true), "host 127.0.0.1 is not on"],
    // URL shape.
    ["ftp:", "ftp://api.example.com/file", PUBLIC, "scheme ftp: is not allowed (only http: and https:)"],
    ["file:", "file:///etc/passwd", PUBLIC, "scheme file: is not allowed"],
    ["a user name and password", "https://user:pw@api.example.com/", PUBLIC, "URLs with a user name or password are refused"],
    ["a user name alone", "https://user@api.example.com/", PUBLIC, "URLs with a user name or password are refused"],
    ["a relative URL", "/etc/passwd", PUBLIC, '"/etc/passwd" is not a valid absolute URL'],
    ["garbage", "http://exa mple.com/", PUBLIC, "is not a valid absolute URL"],
    // Private addresses, refused even when allowlisted.
    ["loopback", "http://127.0.0.1/", PRIVATE_LISTED, "host 127.0.0.1 is a loopback address (refused)"],
    ["a private address", "http://10.0.0.1/", PRIVATE_LISTED, "host 10.0.0.1 is a private address (refused)"],
    ["the cloud metadata address", "http://169.254.169.254/latest/meta-data/", PRIVATE_LISTED, "host 169.254.169.254 is a link-local address (refused)"],
    ["IPv6 loopback", "http://[::1]/", PRIVATE_LISTED, "host [::1] is a loopback address (refused)"],
    ["IPv6 loopback written long", "http://[0:0:0:0:0:0:0:1]:8080/", PRIVATE_LISTED, "host [::1] is a loopback address (refused)"],
    ["decimal IPv4 (2130706433 = 127.0.0.1)", "http://2130706433/", PRIVATE_LISTED, "host 127.0.0.1 is a loopback address (refused)"],
    ["hex IPv4", "http://0x7f.1/", PRIVATE_LISTED, "host 127.0.0.1 is a loopback address (refused)"],
    ["octal IPv4", "http://0177.0.0.01/", PRIVATE_LISTED, "host 127.0.0.1 is a loopback address (refused)"],
    ["short IPv4", "http://127.1/", PRIVATE_LISTED, "host 127.0.0.1 is a loopback address (refused)"],
    ["hex metadata address", "http://0xa9fea9fe/", PRIVATE_LISTED, "host 169.254.169.254 is a link-local address (refused)"],
    ["percent-encoded IPv4", "http://%31%32%37.0.0.1/", PRIVATE_LISTED, "host 127.0.0.1 is a loopback address (refused)"],
    ["IPv4-mapped IPv6, dotted", "http://[::ffff:127.0.0.1]/", PRIVATE_LISTED, "host [::ffff:7f00:1] (IPv4-mapped 127.0.0.1) is a loopback address (refused)"],
    ["IPv4-mapped IPv6, hex", "http://[::ffff:7f00:1]/", PRIVATE_LISTED, "host [::ffff:7f00:1] (IPv4-mapped 127.0.0.1) is a loopback address (refused)"],
    ["IPv4-mapped metadata address", "http://[::ffff:169.254.169.254]/", PRIVATE_LISTED, "(IPv4-mapped 169.254.169.254) is a link-local address (refused)"],
    ["IPv4-compatible IPv6", "http://[::127.0.0.1]/", PRIVATE_LISTED, "host [::7f00:1] (IPv4-compatible 127.0.0.1) is a loopback address (refused)"],
    ["NAT64 of a private address", "http://[64:ff9b::10.0.0.1]/", PRIVATE_LISTED, "host [64:ff9b::a00:1] (NAT64 10.0.0.1) is a private address (refused)"],
    ["6to4 of loopback", "http://[2002:7f00:1::]/", PRIVATE_LISTED, "(6to4 127.0.0.1) is a loopback address (refused)"],
    ["IPv6 unique local", "http://[fd00::1]/", PRIVATE_LISTED, "host [fd00::1] is a private address (refused)"],
    ["IPv6 link-local", "http://[fe80::1]/", PRIVATE_LISTED, "host [fe80::1] is a link-local address (refused)"],
    ["IPv6 unspecified", "http://[::]/", PRIVATE_LISTED, "host [::] is the unspecified address (refused)"],
    ["IPv6 multicast", "http://[ff02::1]/", PRIVATE_LISTED, "host [ff02::1] is a multicast address (refused)"],
    ["0.0.0.0", "http://0.0.0.0/", PRIVATE_LISTED, 'host 0.0.0.0 is a "this network" address (refused)'],
    ["0 (= 0.0.0.0)", "http://0/", PRIVATE_LISTED, 'host 0.0.0.0 is a "this network" address (refused)'],
    ["CGNAT", "http://100.64.0.1/", PRIVATE_LISTED, "host 100.64.0.1 is a carrier-grade NAT address (refused)"],
    ["172.16/12", "http://172.16.5.4/", PRIVATE_LISTED, "host 172.16.5.4 is a private address (refused)"],
    ["192.168/16", "http://192.168.1.1/", PRIVATE_LISTED, "host 192.168.1.1 is a private address (refused)"],
    ["multicast", "http://224.0.0.1/", PRIVATE_LISTED, "host 224.0.0.1 is a multicast address (refused)"],
    ["broadcast", "http://255.255.255.255/", PRIVATE_LISTED, "host 255.255.255.255 is the broadcast address (refused)"],
    ["240/4", "http://240.0.0.1/", PRIVATE_LISTED, "host 240.0.0.1 is a reserved address (refused)"],
    // Names.
    ["localhost", "http://localhost:8787/", PRIVATE_LISTED, "host localhost is a loopback name (refused)"],
    ["localhost with a trailing dot", "http://LOCALHOST./", PRIVATE_LISTED, "host localhost is a loopback name (refused)"],
    ["a *.localhost name", "http://app.localhost/", PRIVATE_LISTED, "host app.localhost is a loopback name (refused)"],
    [
      "the GCP metadata name",
      "http://metadata.google.internal/computeMetadata/v1/",
      PRIVATE_LISTED,
      "host metadata.google.internal is a cloud metadata name (refused)",
    ],
    ["the bare metadata name", "http://metadata/", PRIVATE_LISTED, "host metadata is a cloud metadata name (refused)"],
    ["the AWS metadata name", "http://instance-data/latest/", PRIVATE_LISTED, "host instance-data is a cloud metadata name (refused)"],
    ["a *.internal name", "http://db.corp.internal/", PRIVATE_LISTED, "host db.corp.internal is an internal name (refused)"],
  ])("refuses %s", (_, url, p, reason) => {
    const check = checkFetchTarget(url, p);
    expect(check.ok).toBe(false);
    if (!check.ok) expect(check.reason).toContain(reason);
  });

  it("returns the parsed URL to request", () => {
    const check = checkFetchTarget("https://API.example.com:443/a/../b?x=1#frag", PUBLIC);
    expect(check.ok && check.url.href).toBe("https://api.example.com/b?x=1#frag");
  });

  it("lists at most 10 allowlist entries in its reason", () => {
    const many = Array.from({ length: 14 }, (_, i) => `h${i}.example.com`);
    const check = checkFetchTarget("https://evil.com/", policy(many));
    expect(!check.ok && check.reason).toBe(`host evil.com is not on the swarm's http_allowlist (${many.slice(0, 10).join(", ")} and 4 more)`);
  });
});

describe("checkWebhookTarget", () => {
  it.each([
    ["a public https URL", "https://hooks.example.com/tools/lookup", false],
    ["plain http when private targets are allowed", "http://127.0.0.1:8787/hook", true],
    ["localhost when private targets are allowed", "http://localhost:9000/hook", true],
  ])("allows %s", (_, url, allowPrivate) => {
    const check = checkWebhookTarget(url, allowPrivate);
    expect(check.ok, check.ok ? "" : check.reason).toBe(true);
  });

  it.each([
    ["plain http", "http://hooks.example.com/", "must use https"],
    ["loopback", "https://127.0.0.1/hook", "host 127.0.0.1 is a loopback address (refused)"],
    ["a decimal loopback", "https://2130706433/hook", "host 127.0.0.1 is a loopback address (refused)"],
    ["a private address", "https://10.0.0.1/hook", "host 10.0.0.1 is a private address (refused)"],
    ["the metadata address", "https://169.254.169.254/", "host 169.254.169.254 is a link-local address (refused)"],
    ["IPv6 loopback", "https://[::1]/", "host [::1] is a loopback address (refused)"],
    ["IPv4-mapped loopback", "https://[::ffff:127.0.0.1]/", "(IPv4-mapped 127.0.0.1) is a loopback address (refused)"],
    ["a metadata name", "https://metadata.google.internal/", "is a cloud metadata name (refused)"],
    ["ftp:", "ftp://hooks.example.com/", "scheme ftp: is not allowed"],
    ["userinfo", "https://u:p@hooks.example.com/", "user name or password"],
  ])("refuses %s", (_, url, reason) => {
    const check = checkWebhookTarget(url, false);
    expect(check.ok).toBe(false);
    if (!check.ok) expect(check.reason).toContain(reason);
  });
});

// ALLOW_PRIVATE_NETWORK=true admits loopback and private ranges for local tools, never link-local or
// cloud metadata: the same table for http_fetch (the host allowlisted, as a user might) and webhooks.
describe("with private targets allowed, link-local and metadata targets are still refused", () => {
  it.each([
    ["the AWS/GCP/Azure metadata address", "http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local address"],
    ["another link-local address", "http://169.254.10.1/", "169.254.10.1 is a link-local address"],
    ["a decimal spelling of the metadata address", "http://2852039166/", "169.254.169.254 is a link-local address"],
    ["a hex spelling of the metadata address", "http://0xa9.0xfe.0xa9.0xfe/", "169.254.169.254 is a link-local address"],
    ["the metadata address, IPv4-mapped", "http://[::ffff:169.254.169.254]/", "(169.254.169.254) is a link-local address"],
    ["the metadata address, NAT64", "http://[64:ff9b::a9fe:a9fe]/", "(169.254.169.254) is a link-local address"],
    ["the metadata address, 6to4", "http://[2002:a9fe:a9fe::1]/", "(169.254.169.254) is a link-local address"],
    ["IPv6 link-local", "http://[fe80::1]/", "[fe80::1] is a link-local address"],
    ["AWS's IPv6 metadata address", "http://[fd00:ec2::254]/", "[fd00:ec2::254] is a cloud metadata address"],
    ["Alibaba's metadata address", "http://100.100.100.200/", "100.100.100.200 is a cloud metadata address"],
    ["Oracle's metadata address", "http://192.0.0.192/", "192.0.0.192 is a cloud metadata address"],
    ["GCP's metadata name", "http://metadata.google.internal/computeMetadata/v1/", "metadata.google.internal is a cloud metadata name"],
    ["GCP's metadata name with a trailing dot and capitals", "http://Metadata.Google.Internal./", "metadata.google.internal is a cloud metadata name"],
    ["the bare metadata name", "http://metadata/", "metadata is a cloud metadata name"],
    ["EC2's instance-data name", "http://instance-data.ec2.internal/", "instance-data.ec2.internal is a cloud metadata name"],
  ])("refuses %s", (_, url, reason) => {
    const host = new URL(url).host;
    const fetchCheck = checkFetchTarget(url, policy([host.replace(/\.$/, "")], true));
    expect(fetchCheck.ok).toBe(false);
    if (!fetchCheck.ok) expect(fetchCheck.reason).toContain(reason);
    const webhookCheck = checkWebhookTarget(url, true);
    expect(webhookCheck.ok).toBe(false);
    if (!webhookCheck.ok) expect(webhookCheck.reason).toContain(reason);
  });

  it.each([
    ["loopback", "http://127.0.0.1:8787/"],
    ["a 10/8 address", "http://10.1.2.3/"],
    ["a 192.168/16 address", "http://192.168.1.20:3000/"],
    ["IPv6 loopback", "http://[::1]:8080/"],
    ["a unique-local IPv6 address", "http://[fd12:3456::1]/"],
    ["localhost", "http://localhost:9000/"],
  ])("admits %s", (_, url) => {
    const host = new URL(url).host;
    const fetchCheck = checkFetchTarget(url, policy([host], true));
    expect(fetchCheck.ok, fetchCheck.ok ? "" : fetchCheck.reason).toBe(true);
    expect(checkWebhookTarget(url, true).ok).toBe(true);
  });
});
