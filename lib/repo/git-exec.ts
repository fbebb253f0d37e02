// What git would run by itself in the repository, and where its network traffic would go: its
// hooks, the config keys that name programs, the config keys that steer a transfer (a proxy, a
// URL rewrite, a resolver entry, a CA, a header), and ssh's own config
// (docs/forge.md#what-the-agent-can-reach-and-what-it-cannot). Loop's own git never runs or reads
// any of them (lib/repo/git.ts SAFE_GIT_CONFIG, lib/repo/isolated-git.ts), but the operator's git
// does, later: an agent that plants a hook, sets core.fsmonitor or http.proxy during its session is
// reported. A snapshot is taken before each launch (its digest
// in launch_reserved, its entries in the attempt's git-exec.json) and compared before the verify.
import { readdirSync } from "node:fs";
import { userInfo } from "node:os";
import { readRegularFile } from "../shared/fsutil.ts";
import { join, resolve } from "node:path";
import { gitTry } from "./git.ts";

/** Config keys whose value is a program git runs (or that point git at one, or at another place to find them). */
const EXEC_CONFIG_KEY =
  /^(core\.(hookspath|fsmonitor|editor|pager|sshcommand|askpass|gitproxy|alternaterefscommand|attributesfile)|sequence\.editor|diff\.external|credential\..*helper|filter\..+\.(clean|smudge|process)|merge\..+\.driver|diff\..+\.(command|textconv)|gpg\..*program|uploadpack\.packobjectshook|remote\..+\.(uploadpack|receivepack|vcs)|protocol\..*allow|include\.path|includeif\..+\.path|url\..+\.(insteadof|pushinsteadof))$/i;

/**
 * Config keys that steer where git's network traffic goes or whom it trusts: every `http.*` key
 * (proxy, sslVerify, sslCAInfo, curloptResolve, extraHeader, cookieFile, each also per URL), a
 * remote's URLs and proxy, URL rewrites, the git proxy, ssh's variant, credentials.
 */
const NETWORK_CONFIG_KEY =
  /^(https?\..+|remote\..+\.(url|pushurl|proxy|proxyauthmethod)|url\..+\.(insteadof|pushinsteadof)|core\.(gitproxy|sshcommand)|ssh\.variant|credential\..+)$/i;

/** The snapshot's entries, in the attempt's session folder. */
export const GIT_EXEC_FILE = "git-exec.json";

interface GitExecSnapshot {
  digest: string;
  /** One line per hook (`hook <dir>/<name> <sha256>`) and per executable config entry (`config <origin> <key>=<value>`), sorted. */
  entries: string[];
}

const sha256 = (x: string | Uint8Array) => new Bun.CryptoHasher("sha256").update(x).digest("hex");

function hooksIn(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names
    .filter((n) => !n.endsWith(".sample"))
    .flatMap((n) => {
      // Bounded, and only a regular file (a FIFO, or core.hooksPath=/dev with its /dev/zero, must not
      // hang or fill the step); a hook may be a link (hook managers install them so).
      const r = readRegularFile(join(dir, n), { maxBytes: 1 << 20 });
      return [`hook ${join(dir, n)} ${r.kind === "ok" ? sha256(r.bytes).slice(0, 16) : `(${r.kind === "error" ? r.message : "gone"})`}`];
    });
}

/** ssh's own config of the user (its ProxyCommand, Match exec, LocalCommand reach every ssh your git runs), by its hash. */
function sshConfig(): string[] {
  let home: string;
  try {
    home = userInfo().homedir; // ssh's `~` is the passwd entry's, not $HOME
  } catch {
    return [];
  }
  const path = join(home, ".ssh", "config");
  const r = readRegularFile(path, { maxBytes: 1 << 20 });
  return r.kind === "ok" ? [`ssh-config ${path} ${sha256(r.bytes).slice(0, 16)}`] : r.kind === "error" ? [`ssh-config ${path} (${r.message})`] : [];
}

/** The repository's hooks, executable and network config, and ssh's config, as git (without loop's own -c settings) sees them from `repo`. */
export function gitExecSnapshot(repo: string): GitExecSnapshot {
  const entries: string[] = [];
  const listing = gitTry(repo, ["config", "--list", "--show-origin", "-z"]);
  let hooksPath: string | null = null;
  if (listing.code === 0) {
    const parts = listing.stdout.split("\0");
    for (let i = 0; i + 1 < parts.length; i += 2) {
      const origin = parts[i]!;
      if (origin.startsWith("command line:")) continue; // loop's own SAFE_GIT_CONFIG
      const entry = parts[i + 1]!;
      const nl = entry.indexOf("\n");
      const key = nl < 0 ? entry : entry.slice(0, nl);
      const value = nl < 0 ? "" : entry.slice(nl + 1);
      if (!EXEC_CONFIG_KEY.test(key) && !NETWORK_CONFIG_KEY.test(key)) continue;
      entries.push(`config ${origin} ${key}=${value}`);
      if (key.toLowerCase() === "core.hookspath") hooksPath = resolve(repo, value);
    }
  }
  const common = gitTry(repo, ["rev-parse", "--git-common-dir"]);
  if (common.code === 0) entries.push(...hooksIn(join(resolve(repo, common.stdout.trim()), "hooks")));
  if (hooksPath) entries.push(...hooksIn(hooksPath));
  entries.push(...sshConfig());
  entries.sort();
  return { digest: sha256(entries.join("\n")), entries };
}

/**
 * Whether what git would run changed during the attempt, in one sentence, or null. `recorded` is
 * the digest launch_reserved holds; `baseline` the entries of git-exec.json, trusted only when they
 * hash to it (the agent can write the session folder).
 */
export function gitExecReport(o: { recorded: string; baseline: unknown; now: GitExecSnapshot }): string | null {
  if (o.now.digest === o.recorded) return null;
  const base =
    Array.isArray(o.baseline) && o.baseline.every((e) => typeof e === "string") && sha256(o.baseline.join("\n")) === o.recorded
      ? (o.baseline as string[])
      : null;
  if (!base)
    return `the repository's hooks, executable or network git config, or ssh's config changed during the session (loop's own git uses none of them); now: ${o.now.entries.join("; ") || "none"}`;
  const { added, removed } = gitExecChanges(base, o.now.entries);
  return `the repository's hooks, executable or network git config, or ssh's config changed during the session (loop's own git uses none of them, your git would): ${[...added.map((e) => `+ ${e}`), ...removed.map((e) => `- ${e}`)].join("; ")}`;
}

/** What changed between two snapshots' entries: added (or changed) and removed lines. Pure. */
function gitExecChanges(before: readonly string[], after: readonly string[]): { added: string[]; removed: string[] } {
  const b = new Set(before);
  const a = new Set(after);
  return { added: after.filter((e) => !b.has(e)), removed: before.filter((e) => !a.has(e)) };
}
