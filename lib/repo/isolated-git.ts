// Loop's own git over the network (push, fetch) with no configuration the agent can write
// (docs/forge.md#what-the-agent-can-reach-and-what-it-cannot). The repository's `.git/config`, the
// user's `~/.gitconfig`, the system's, `~/.netrc` and `~/.ssh/config` are all writable by an agent
// without the sandbox, and several of their keys outrank anything loop can say on the command line
// (`http.<url>.sslVerify` beats `-c http.sslVerify`, `url.<x>.insteadOf` cannot be unset, a
// `http.proxy` receives the Authorization header). So git runs here against a git directory loop
// builds for the one call, in a fresh private temporary folder: its own config (loop's pairs
// only), no global or system config, HOME pointed inside it, the repository's objects by
// GIT_OBJECT_DIRECTORY, and a copy of its refs (so a fetch negotiates instead of downloading all
// history). The remote is given by URL, never by a name the config resolves. A fetch writes its
// objects into the repository's object store and its ref into the private folder; the ref is then
// moved into the repository by a local `update-ref`, fast-forward only.
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { type GitResult, gitTry, SAFE_GIT_CONFIG } from "./git.ts";

/**
 * The ssh loop's git uses when loop's own environment names none (GIT_SSH_COMMAND there is the
 * operator's, and kept): no config file (`~/.ssh/config` can name a ProxyCommand, a `Match exec`,
 * a LocalCommand), never a prompt. Keys come from ssh's defaults and the ssh agent.
 */
const ISOLATED_SSH_COMMAND = "ssh -F /dev/null -o BatchMode=yes -o ProxyCommand=none -o ProxyJump=none -o PermitLocalCommand=no";

/** Variables of loop's own environment an isolated git keeps: everything but git's own, except how to reach ssh and which CA to trust. */
const KEPT_GIT_VARS = new Set(["GIT_SSH_COMMAND", "GIT_SSH", "GIT_SSH_VARIANT", "GIT_SSL_CAINFO", "GIT_SSL_CAPATH"]);

interface IsolatedGitCall {
  /** The repository (any folder inside it): only its objects and refs are used, never its config. */
  repo: string;
  /** Config pairs for this call, added after SAFE_GIT_CONFIG: the whole config git sees. */
  config: readonly [string, string][];
  /** Variables added to the call's environment (a credential helper's token). */
  env: Record<string, string>;
  timeoutMs: number;
}

/** The environment of an isolated git call: loop's own, without GIT_* (bar ssh's), then the private folder's. */
function isolatedEnv(o: {
  base: Record<string, string | undefined>;
  gitDir: string;
  objects: string;
  config: readonly [string, string][];
  extra: Record<string, string>;
}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(o.base)) if (v !== undefined && (!k.startsWith("GIT_") || KEPT_GIT_VARS.has(k))) env[k] = v;
  const pairs: [string, string][] = [...SAFE_GIT_CONFIG.map((c): [string, string] => [c.slice(0, c.indexOf("=")), c.slice(c.indexOf("=") + 1)]), ...o.config];
  Object.assign(env, {
    GIT_DIR: o.gitDir,
    GIT_OBJECT_DIRECTORY: o.objects,
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_CONFIG_COUNT: String(pairs.length),
    GIT_TERMINAL_PROMPT: "0",
    GIT_OPTIONAL_LOCKS: "0",
    GIT_NO_REPLACE_OBJECTS: "1",
    // ~/.netrc (libcurl), XDG config: nothing under the user's home is read.
    HOME: o.gitDir,
    XDG_CONFIG_HOME: o.gitDir,
    CURL_HOME: o.gitDir,
    ...o.extra,
  });
  env.GIT_SSH_COMMAND ??= ISOLATED_SSH_COMMAND;
  pairs.forEach(([k, v], n) => {
    env[`GIT_CONFIG_KEY_${n}`] = k;
    env[`GIT_CONFIG_VALUE_${n}`] = v;
  });
  return env;
}

function run(argv: string[], cwd: string, env: Record<string, string>, timeoutMs?: number): GitResult {
  try {
    const r = Bun.spawnSync(["git", ...argv], { cwd, env, stdin: "ignore", stdout: "pipe", stderr: "pipe", ...(timeoutMs ? { timeout: timeoutMs } : {}) });
    const late =
      timeoutMs !== undefined && r.exitCode === null && r.signalCode !== null
        ? `no end within ${Math.round(timeoutMs / 1000)}s; stopped (${r.signalCode})\n`
        : "";
    return { code: r.exitCode, stdout: r.stdout.toString(), stderr: late + r.stderr.toString() };
  } catch (err) {
    return { code: null, stdout: "", stderr: (err as Error).message };
  }
}

const failed = (stderr: string): GitResult => ({ code: 128, stdout: "", stderr });

/** `git <args>` in a private git directory standing for `repo` (see the header): what loop's push and fetch see. */
export function isolatedGit(o: IsolatedGitCall, args: string[]): GitResult {
  return withPrivateGitDir(
    o,
    (gitDir, env) => run(args, gitDir, env, o.timeoutMs),
    (r) => r,
  );
}

/** `body` with a private git directory standing for `repo` (see the header) and its environment; the folder is removed afterwards. */
function withPrivateGitDir<T>(o: IsolatedGitCall, body: (gitDir: string, env: Record<string, string>) => T, onFail: (r: GitResult) => T): T {
  const common = gitTry(o.repo, ["rev-parse", "--git-common-dir"]);
  if (common.code !== 0) return onFail(common);
  const commonDir = resolve(o.repo, common.stdout.trim());
  const format = gitTry(o.repo, ["rev-parse", "--show-object-format"]);
  const refs = gitTry(o.repo, ["for-each-ref", "--format=%(objectname) %(refname)"]);
  if (refs.code !== 0) return onFail(refs);
  const gitDir = mkdtempSync(join(tmpdir(), "loop-git-"));
  try {
    mkdirSync(join(gitDir, "refs", "heads"), { recursive: true });
    writeFileSync(join(gitDir, "HEAD"), "ref: refs/heads/loop-isolated\n");
    const objectFormat = format.code === 0 ? format.stdout.trim() : "sha1";
    writeFileSync(
      join(gitDir, "config"),
      `[core]\n\trepositoryformatversion = ${objectFormat === "sha1" ? 0 : 1}\n\tbare = true\n${objectFormat === "sha1" ? "" : `[extensions]\n\tobjectformat = ${objectFormat}\n`}`,
    );
    // Refs whose names git would refuse are left out; they only help a fetch negotiate.
    const lines = refs.stdout.split("\n").filter((l) => /^[0-9a-f]{40,64} refs\/[^\s]+$/.test(l));
    writeFileSync(
      join(gitDir, "packed-refs"),
      lines.length ? lines.sort((a, b) => (a.slice(a.indexOf(" ")) < b.slice(b.indexOf(" ")) ? -1 : 1)).join("\n") + "\n" : "",
    );
    const env = isolatedEnv({ base: process.env, gitDir, objects: join(commonDir, "objects"), config: o.config, extra: o.env });
    return body(gitDir, env);
  } finally {
    rmSync(gitDir, { recursive: true, force: true });
  }
}

/** `git push <url> <refspecs>` from the repository's objects, with no config but loop's. */
export function isolatedPush(o: IsolatedGitCall & { url: string; refspecs: string[] }): GitResult {
  return withPrivateGitDir(
    o,
    (gitDir, env) => run(["push", "--quiet", "--no-verify", "--", o.url, ...o.refspecs], gitDir, env, o.timeoutMs),
    (r) => r,
  );
}

/**
 * `git fetch <url> refs/heads/<branch>` with no config but loop's, then `dest` set to what it
 * fetched in the repository: fast-forward only, as a fetch without `+` would.
 */
export function isolatedFetch(o: IsolatedGitCall & { url: string; branch: string; dest: string }): GitResult {
  return withPrivateGitDir(
    o,
    (gitDir, env) => {
      const tmp = "refs/loop-isolated/fetched";
      const f = run(["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--", o.url, `+refs/heads/${o.branch}:${tmp}`], gitDir, env, o.timeoutMs);
      if (f.code !== 0) return f;
      const sha = run(["rev-parse", "--verify", "-q", `${tmp}^{commit}`], gitDir, env);
      if (sha.code !== 0) return failed(`fetched refs/heads/${o.branch}, but it is not a commit`);
      const got = sha.stdout.trim();
      const old = gitTry(o.repo, ["rev-parse", "--verify", "-q", `${o.dest}^{commit}`]).stdout.trim();
      if (old && old !== got && gitTry(o.repo, ["merge-base", "--is-ancestor", old, got]).code !== 0)
        return failed(` ! [rejected] ${o.branch} -> ${o.dest} (non-fast-forward)`);
      return gitTry(o.repo, ["update-ref", o.dest, got, ...(old ? [old] : [])]);
    },
    (r) => r,
  );
}
