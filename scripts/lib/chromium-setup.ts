// What `npm test` does about the browser suite's chromium (Debian's, driven by playwright-core, which
// never downloads one): use it, install it with apt as CI does, or say in one line what to install.
// No I/O: scripts/test.ts probes the machine and runs the plan.

export const DEBIAN_CHROMIUM_PATH = "/usr/bin/chromium";
/** Set to 1 to leave the browser suite out of `npm test` (reported in its closing line). */
export const SKIP_BROWSER_ENV = "EDGESWARM_SKIP_BROWSER";
export const BROWSER_TESTS_GLOB = "test/browser/**";
/** The vitest project whose include covers the browser tests (vitest.config.ts). */
const BROWSER_PROJECT = "e2e";

export interface ChromiumHost {
  /** CHROMIUM_PATH (test/browser/chromium.ts reads the same variable), or null for Debian's path. */
  chromiumPathOverride: string | null;
  exists: boolean;
  isRoot: boolean;
  passwordlessSudo: boolean;
  hasAptGet: boolean;
}

export type ChromiumPlan =
  | { kind: "ready" }
  /** Run each argv in turn; chromium is at DEBIAN_CHROMIUM_PATH afterwards. */
  | { kind: "install"; commands: string[][] }
  /** Nothing this script can do: print the line, exit non-zero. */
  | { kind: "missing"; line: string };

const APT_INSTALL = "sudo apt-get update && sudo apt-get install -y chromium";
const SKIP_HINT = `or run \`${SKIP_BROWSER_ENV}=1 npm test\` to leave the browser suite out`;

export function planChromiumSetup(host: ChromiumHost): ChromiumPlan {
  if (host.exists) return { kind: "ready" };
  if (host.chromiumPathOverride !== null) {
    return {
      kind: "missing",
      line: `npm test: CHROMIUM_PATH=${host.chromiumPathOverride} does not exist: point it at a chromium, unset it to use Debian's, ${SKIP_HINT}`,
    };
  }
  if (!host.hasAptGet) {
    return {
      kind: "missing",
      line: `npm test needs chromium for the browser suite and found no apt-get to install Debian's: install a chromium and set CHROMIUM_PATH to it, ${SKIP_HINT}`,
    };
  }
  if (!host.isRoot && !host.passwordlessSudo) {
    return {
      kind: "missing",
      line: `npm test needs Debian's chromium at ${DEBIAN_CHROMIUM_PATH} for the browser suite: install it with \`${APT_INSTALL}\`, ${SKIP_HINT}`,
    };
  }
  // sudo may reset the environment, so DEBIAN_FRONTEND goes through env(1).
  const sudo = host.isRoot ? [] : ["sudo", "-n"];
  return {
    kind: "install",
    commands: [
      [...sudo, "apt-get", "update"],
      [...sudo, "env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y", "chromium"],
    ],
  };
}

export function toInstallFailedLine(command: readonly string[], exit: string): string {
  return `npm test could not install Debian's chromium (\`${command.join(" ")}\` ${exit}): install it with \`${APT_INSTALL}\`, ${SKIP_HINT}`;
}

/**
 * Whether vitest's arguments leave the browser suite in: yes unless `--project` names only other
 * projects or excludes e2e (`!e2e`); a pattern with `*` may match it. File filters are not read:
 * when in doubt, it is in.
 */
export function selectsBrowserSuite(vitestArgs: readonly string[]): boolean {
  const projects: string[] = [];
  vitestArgs.forEach((arg, i) => {
    if (arg === "--project" && i + 1 < vitestArgs.length) projects.push(vitestArgs[i + 1] as string);
    else if (arg.startsWith("--project=")) projects.push(arg.slice("--project=".length));
  });
  if (projects.includes(`!${BROWSER_PROJECT}`)) return false;
  const included = projects.filter((name) => !name.startsWith("!"));
  return included.length === 0 || included.some((name) => name === BROWSER_PROJECT || name.includes("*"));
}
