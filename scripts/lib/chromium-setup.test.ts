import { describe, expect, it } from "vitest";
import { type ChromiumHost, planChromiumSetup, selectsBrowserSuite, toInstallFailedLine } from "./chromium-setup.ts";

const debianRoot: ChromiumHost = { chromiumPathOverride: null, exists: false, isRoot: true, passwordlessSudo: false, hasAptGet: true };
const aptInstall = ["env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y", "chromium"];
const skipHint = "or run `EDGESWARM_SKIP_BROWSER=1 npm test` to leave the browser suite out";

describe("npm test's chromium setup", () => {
  it.each<[string, Partial<ChromiumHost>, ReturnType<typeof planChromiumSetup>]>([
    ["present: nothing to do", { exists: true }, { kind: "ready" }],
    ["present at CHROMIUM_PATH", { exists: true, chromiumPathOverride: "/opt/chrome", isRoot: false }, { kind: "ready" }],
    ["missing, root with apt: install it", {}, { kind: "install", commands: [["apt-get", "update"], aptInstall] }],
    [
      "missing, passwordless sudo: install it through sudo -n",
      { isRoot: false, passwordlessSudo: true },
      {
        kind: "install",
        commands: [
          ["sudo", "-n", "apt-get", "update"],
          ["sudo", "-n", ...aptInstall],
        ],
      },
    ],
    [
      "missing, neither root nor sudo: one line with the command",
      { isRoot: false },
      {
        kind: "missing",
        line: `npm test needs Debian's chromium at /usr/bin/chromium for the browser suite: install it with \`sudo apt-get update && sudo apt-get install -y chromium\`, ${skipHint}`,
      },
    ],
    [
      "missing, no apt-get: not Debian",
      { hasAptGet: false },
      {
        kind: "missing",
        line: `npm test needs chromium for the browser suite and found no apt-get to install Debian's: install a chromium and set CHROMIUM_PATH to it, ${skipHint}`,
      },
    ],
    [
      "CHROMIUM_PATH points nowhere: never replaced by an install",
      { chromiumPathOverride: "/opt/chrome" },
      { kind: "missing", line: `npm test: CHROMIUM_PATH=/opt/chrome does not exist: point it at a chromium, unset it to use Debian's, ${skipHint}` },
    ],
  ])("%s", (_, host, plan) => {
    expect(planChromiumSetup({ ...debianRoot, ...host })).toEqual(plan);
  });

  it("says which install command failed and what to run instead", () => {
    expect(toInstallFailedLine(["apt-get", "update"], "exited 100")).toBe(
      `npm test could not install Debian's chromium (\`apt-get update\` exited 100): install it with \`sudo apt-get update && sudo apt-get install -y chromium\`, ${skipHint}`,
    );
  });
});

describe("whether vitest's arguments run the browser suite", () => {
  it.each([
    ["no arguments", [], true],
    ["a file filter only (not read)", ["src/core"], true],
    ["--project e2e", ["--project", "e2e"], true],
    ["--project=e2e among others", ["--project=core", "--project=e2e"], true],
    ["a pattern that may match e2e", ["--project", "e*"], true],
    ["other projects only", ["--project", "core", "--project=scripts"], false],
    ["e2e excluded", ["--project=!e2e"], false],
    ["another project excluded", ["--project=!core"], true],
    ["--project with no value", ["--project"], true],
  ])("%s", (_, args, selected) => {
    expect(selectsBrowserSuite(args)).toBe(selected);
  });
});
