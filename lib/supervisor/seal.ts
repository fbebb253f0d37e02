// The seal: what the agent left uncommitted, committed on the agent's side (docs/threat-model.md#the-airlock).
// Committing runs git in the agent's worktree and git folder, which the agent wrote: git there
// follows its ignore rules, attributes, nested repositories (their filter drivers, fsmonitor,
// hooks), links and FIFOs. So loop never does it with its own rights: the seal runs as the agent
// ran, in the agent's sandbox (the network unshared, no gateway, no key), or without the sandbox
// as a plain child with an environment of its own (no key of loop's), under a deadline, its whole
// process group ended at it. What comes out is a value: the proposed head, which loop checks like
// everything else the agent made (lib/repo/object-import.ts, the verify's gates).
import { killGroup } from "../shared/process.ts";
import { type SandboxRequest, sandboxArgv, sandboxSpec } from "./sandbox.ts";

/** How long a seal may take: `git add -A` over a large worktree whose index has no stat data yet. */
const SEAL_TIMEOUT_MS = 120_000;

// `$1`: the commit's message; then the paths of what never lands (what setup made), each left out of
// `git add` by an exclude pathspec, unless git ignores it already: `add -A` adds nothing ignored, and
// git refuses an exclude pathspec that names an ignored path ("The following paths are ignored").
// Identity: the user's, else loop's.
// Locks (index.lock, HEAD.lock, a ref's): the agent's git, or a seal cut short, may have been killed
// mid-command, and its session is over; the lock is its, in its folder.
// A git folder holds no link, FIFO or device of its own, nor a file with another name elsewhere:
// whatever the agent planted there (a link or a hard link at COMMIT_EDITMSG or logs/HEAD to a file of
// the operator's, a FIFO) goes before git writes through it. Objects are the import's to prove.
const SCRIPT = [
  "message=$1; shift",
  // One walk: anything neither a folder nor a regular file, anywhere; outside objects/, a regular file with another name or a lock.
  'find "$GIT_DIR" \\( ! -type d ! -type f -exec rm -f {} + \\) -o \\( -type f ! -path "$GIT_DIR/objects/*" \\( -links +1 -o -name "*.lock" \\) -exec rm -f {} + \\) 2>/dev/null',
  'n=$#; while [ "$n" -gt 0 ]; do p=$1; shift; n=$((n - 1)); git check-ignore -q --no-index -- "$p" 2>/dev/null || set -- "$@" ":(exclude,top,literal)$p"; done',
  "git var GIT_AUTHOR_IDENT >/dev/null 2>&1 || export GIT_AUTHOR_NAME=loop GIT_AUTHOR_EMAIL=loop@localhost",
  "git var GIT_COMMITTER_IDENT >/dev/null 2>&1 || export GIT_COMMITTER_NAME=loop GIT_COMMITTER_EMAIL=loop@localhost",
  'git -c core.hooksPath=/dev/null -c core.fsmonitor=false add -A -- . "$@" || exit 10',
  'if git -c core.fsmonitor=false diff --cached --quiet; then c=0; else git -c core.hooksPath=/dev/null -c core.fsmonitor=false commit --no-verify -q -m "$message" || exit 11; c=1; fi',
  "h=$(git rev-parse --verify -q 'HEAD^{commit}') || exit 12",
  'echo "loop-seal $c $h"',
].join("\n");

type SealResult = { ok: true; head: string; committed: boolean } | { ok: false; timedOut: boolean; reason: string };

interface SealRequest {
  worktree: string;
  /** The attempt's private git folder (lib/repo/attempt-git.ts). */
  gitDir: string;
  /** Paths relative to the worktree that are never committed: what setup made. */
  exclude: readonly string[];
  message: string;
  /** The sandbox the agent ran in (the seal gets no network, no gateway, no writable files outside), or null. */
  sandbox: { request: SandboxRequest; sessionDir: string } | null;
  /** Loop's environment: only PATH, HOME and the locale pass. */
  env: Record<string, string | undefined>;
  /** The attempt's own variables (LOOP_ITEM, LOOP_ATTEMPT, its session mark): the seal is of the attempt, and what it leaves running is swept with it. */
  attempt: Record<string, string>;
  timeoutMs?: number;
}

/** The environment of the seal: enough for git, nothing of loop's. */
function sealEnvironment(o: SealRequest): Record<string, string> {
  const env: Record<string, string> = { GIT_DIR: o.gitDir, GIT_WORK_TREE: o.worktree, GIT_TERMINAL_PROMPT: "0", GIT_OPTIONAL_LOCKS: "0", PWD: o.worktree };
  for (const k of ["PATH", "HOME", "LANG", "LC_ALL", "TZ"]) if (o.env[k]) env[k] = o.env[k]!;
  return { ...env, ...o.attempt };
}

/** Commit what the agent left in its worktree, on its side; the head it proposes, or why not. */
export async function sealAttempt(o: SealRequest): Promise<SealResult> {
  const inner = ["sh", "-c", SCRIPT, "loop-seal", o.message, ...o.exclude];
  const argv = o.sandbox
    ? sandboxArgv(sandboxSpec({ ...o.sandbox.request, writable: [], homes: [], gatewaySockets: undefined, noNetwork: true }, o.sandbox.sessionDir), inner)
    : inner;
  const timeoutMs = o.timeoutMs ?? SEAL_TIMEOUT_MS;
  let child: Bun.Subprocess<"ignore", "pipe", "pipe">;
  try {
    child = Bun.spawn(argv, { cwd: o.worktree, env: sealEnvironment(o), detached: true, stdio: ["ignore", "pipe", "pipe"] });
  } catch (err) {
    return { ok: false, timedOut: false, reason: `could not start: ${(err as Error).message}` };
  }
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    void killGroup(child.pid, 0);
  }, timeoutMs);
  // Bounded: what git prints here is the agent's to make long.
  const [stdout, stderr] = await Promise.all([bounded(child.stdout), bounded(child.stderr)]);
  await child.exited;
  clearTimeout(timer);
  await killGroup(child.pid, 0);
  if (timedOut) return { ok: false, timedOut: true, reason: `did not finish within ${Math.round(timeoutMs / 1000)} s (a file git could not read, a FIFO?)` };
  const m = /^loop-seal ([01]) ([0-9a-f]{40}|[0-9a-f]{64})$/m.exec(stdout);
  if (child.exitCode === 0 && m) return { ok: true, committed: m[1] === "1", head: m[2]! };
  const step =
    child.exitCode === 10
      ? "git add"
      : child.exitCode === 11
        ? "git commit"
        : child.exitCode === 12
          ? "reading HEAD"
          : `exit ${child.exitCode ?? child.signalCode}`;
  const said = stderr.trim().split("\n").filter(Boolean).slice(-2).join(" / ").slice(0, 400);
  return { ok: false, timedOut: false, reason: `${step} failed${said ? `: ${said}` : ""}` };
}

/** A stream's text, at most 64 KiB of it (the rest read and dropped). */
async function bounded(stream: ReadableStream<Uint8Array>): Promise<string> {
  const cap = 64 * 1024;
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of stream) {
    if (size < cap) chunks.push(chunk.subarray(0, cap - size));
    size += chunk.length;
  }
  return Buffer.concat(chunks).toString("utf8");
}
