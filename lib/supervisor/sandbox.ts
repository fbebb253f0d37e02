// The sandbox (docs/runners.md#the-sandbox): an agent, or its verify command, run under bubblewrap.
// The wrapper (loop __session) stays outside and runs `bwrap … -- <argv>` as its child, so the
// files it writes (started.json, exit.json, output.log, the verify's) are out of the agent's reach.
// Inside:
//   - the whole file system read-only, a private /tmp, the user's runtime folder hidden (systemd's
//     and D-Bus's sockets, through which a process could be started outside), the system's service
//     sockets masked (connecting to a socket needs no write access, so read-only is not enough),
//     and the state root hidden (loop.db, every session folder, every other worktree, the landing
//     worktree);
//   - writable: the worktree and the attempt's private git folder (lib/repo/attempt-git.ts: its own
//     config, index, refs and objects; the repository, its store, refs, config and hooks stay
//     read-only like everything else); the files named in `writable` (the ask file, a preset's
//     histories), a preset's private config home (its credentials read-only in it:
//     lib/supervisor/config-home.ts) and aider's ~/.aider;
//   - read-only inside the worktree: what `workspace.setup` made, and for a verify the protected
//     paths (docs/threat-model.md#the-airlock);
//   - its own pid namespace: when the wrapper ends bwrap, the kernel ends every process inside,
//     whatever it did to its process group, session or environment (--die-with-parent);
//   - no capabilities (--cap-drop ALL: run as root, bwrap would keep them, and with them mount);
//   - the network as it is (agents need their model's API), unless the session has a gateway: then
//     unshared, and the gateway's socket folder bound in for `loop __bridge` (./bridge.ts).
// sandboxArgv is pure; sandboxSpec reads the worktree's git layout and prepares the mount points.
import { closeSync, existsSync, lstatSync, mkdirSync, openSync, readlinkSync, statSync } from "node:fs";
import { basename, dirname, isAbsolute, join, relative } from "node:path";

/** What the caller asks for: where the work is, and what else the command must write. */
export interface SandboxRequest {
  /** The bwrap program, as found on the step's PATH (probeSandbox). */
  bwrap: string;
  worktree: string;
  stateRoot: string;
  /** The folder of the loop's worktrees (lib/shared/paths.ts worktreesRoot): hidden like the state root, all but this worktree. */
  worktrees?: string;
  /** The repository's common git folder (the step's own git names it): the repository is visible read-only. */
  commonDir: string;
  /**
   * The attempt's private git folder (lib/repo/attempt-git.ts), made by loop: writable for the agent
   * and the seal, read-only for a verify. Absent: none is mounted.
   */
  gitDir?: { path: string; writable: boolean };
  /** Paths inside the worktree bound read-only over it (those that exist): what setup made, the protected paths of a verify. */
  readOnly?: string[];
  /** Files outside the worktree the command writes (created empty when missing): the ask file, aider's histories. */
  writable: string[];
  /** Folders or files under $HOME the agent CLI must write (aider's config home), when they exist. */
  homes: string[];
  /** A preset's private config home (lib/supervisor/config-home.ts): writable, but for the files in `readOnly` (its credentials). */
  configHome?: { dir: string; readOnly: string[] };
  /** The program the command runs and what it needs (loop itself, for the demo agent): read-only, even where /tmp or another hidden folder holds it. */
  programs: string[];
  env: Record<string, string | undefined>;
  /** The network unshared, the gateway's socket folder bound in read-only (docs/threat-model.md#the-gateway). */
  gatewaySockets?: string;
  /** The network unshared with no way out at all (a verify's `verifyNetwork` "none"). */
  noNetwork?: boolean;
}

/** Every path the sandbox is built from, absolute. */
export interface SandboxSpec {
  bwrap: string;
  worktree: string;
  stateRoot: string;
  /** The folder of the loop's worktrees, hidden (null: under the state root, hidden with it). */
  worktrees: string | null;
  /** The session folder, visible read-only (handoff.md, inbox.md). */
  sessionDir: string;
  /** The repository (the main checkout, or the bare repository's folder): read-only. */
  repo: string;
  /** Folders hidden behind an empty tmpfs, after /tmp (the runtime folder, tmux's socket folder). */
  hide: string[];
  /** Sockets covered with /dev/null: a connection to them is refused (MASKED_SOCKETS that exist). */
  mask: string[];
  /** The attempt's private git folder, writable or not, or null. */
  gitDir: { path: string; writable: boolean } | null;
  /** Paths inside the worktree bound read-only over it (each exists). */
  readOnly: string[];
  /** Writable files and folders outside the worktree (each must exist). */
  writable: string[];
  /** Writable folders or files that may not exist (--bind-try). */
  writableIfPresent: string[];
  /** The private config home, writable, its credentials read-only. */
  configHome?: { dir: string; readOnly: string[] };
  /** Programs (files or folders) made visible again, read-only, after the hiding (each exists). */
  programs: string[];
  /**
   * Programs that are symbolic links under /tmp (an npm `.bin` entry, a folder of links on PATH):
   * made again as links inside, after their targets are bound. Bound, a link would be its target's
   * file at the link's path, and a launcher that finds its package beside itself would look there.
   */
  programLinks?: { path: string; target: string }[];
  /** With a gateway: the network unshared, and this folder (its sockets) visible read-only. */
  gatewaySockets?: string;
  /** The network unshared, nothing bound in. */
  noNetwork?: boolean;
}

/** The bwrap command line that runs `argv` in the sandbox `s`. Pure. */
export function sandboxArgv(s: SandboxSpec, argv: string[]): string[] {
  const bind = (flag: string, p: string) => [flag, p, p];
  return [
    s.bwrap,
    ...bind("--ro-bind", "/"),
    "--dev",
    "/dev",
    "--proc",
    "/proc",
    "--tmpfs",
    "/tmp",
    ...s.hide.flatMap((p) => ["--tmpfs", p]),
    ...s.mask.flatMap((p) => ["--ro-bind", "/dev/null", p]),
    // Under /tmp the repository would be hidden with it: it comes back, read-only; so does the program.
    ...bind("--ro-bind", s.repo),
    ...s.programs.flatMap((p) => bind("--ro-bind", p)),
    ...(s.programLinks ?? []).flatMap((l) => ["--symlink", l.target, l.path]),
    ...(s.gatewaySockets ? bind("--ro-bind", s.gatewaySockets) : []),
    // Last of the hiding, so nothing above can bring loop's files back into view.
    "--tmpfs",
    s.stateRoot,
    // The other worktrees and the landing checkout, wherever they live.
    ...(s.worktrees ? ["--tmpfs", s.worktrees] : []),
    ...bind("--bind", s.worktree),
    // Over the worktree, after it: what setup made and a verify's protected paths.
    ...s.readOnly.flatMap((p) => bind("--ro-bind", p)),
    ...bind("--ro-bind", s.sessionDir),
    // The private git folder lies in the session folder: bound after it.
    ...(s.gitDir ? bind(s.gitDir.writable ? "--bind" : "--ro-bind", s.gitDir.path) : []),
    ...s.writable.flatMap((p) => bind("--bind", p)),
    ...(s.configHome ? [...bind("--bind", s.configHome.dir), ...s.configHome.readOnly.flatMap((p) => bind("--ro-bind", p))] : []),
    ...s.writableIfPresent.flatMap((p) => bind("--bind-try", p)),
    "--chdir",
    s.worktree,
    "--setenv",
    "TMPDIR",
    "/tmp",
    "--unshare-pid",
    ...(s.gatewaySockets || s.noNetwork ? ["--unshare-net"] : []),
    "--die-with-parent",
    "--new-session",
    "--cap-drop",
    "ALL",
    "--",
    ...argv,
  ];
}

/**
 * Service sockets through which a process can have something started outside the sandbox (the
 * system manager and bus: as root, `systemd-run` needs nothing else) or get root (a container
 * engine). Masked when they exist; the network and abstract sockets stay as they are.
 */
const MASKED_SOCKETS: readonly string[] = [
  "/run/systemd/private",
  "/run/dbus/system_bus_socket",
  "/run/docker.sock",
  "/run/containerd/containerd.sock",
  "/run/podman/podman.sock",
  "/run/crio/crio.sock",
];

function ensureFile(p: string): void {
  mkdirSync(dirname(p), { recursive: true });
  // "a": never truncates what is there, never follows nothing but what open follows.
  closeSync(openSync(p, "a", 0o600));
}

/**
 * The spec for one session or verify, from the request and the session folder: takes the worktree's
 * verified git layout, and creates what the mounts need (the item refs' folders, empty writable
 * files, an empty config.worktree to hold read-only).
 */
export function sandboxSpec(r: SandboxRequest, sessionDir: string): SandboxSpec {
  const { commonDir } = r;
  for (const f of r.writable) ensureFile(f);
  const home = r.env.HOME;
  // A CLI that never ran on this machine has no config folder yet, and cannot make one under a
  // read-only $HOME: it would run without saving its conversation (nothing to resume). So the
  // folders among the homes are made first (private), and bound like any that existed. A file
  // (claude's .claude.json) is left to the CLI: an empty one is not what it expects.
  if (home && isAbsolute(home))
    for (const h of r.homes)
      if (!h.endsWith(".json"))
        try {
          mkdirSync(join(home, h), { recursive: true, mode: 0o700 });
        } catch {
          // Not makeable ($HOME itself read-only): bound only if present, as before.
        }
  const uid = typeof process.getuid === "function" ? process.getuid() : null;
  const runtime = r.env.XDG_RUNTIME_DIR || (uid !== null ? `/run/user/${uid}` : "");
  const tmuxDir = uid !== null && r.env.TMUX_TMPDIR ? join(r.env.TMUX_TMPDIR, `tmux-${uid}`) : "";
  const isDir = (p: string) => {
    try {
      return p !== "" && isAbsolute(p) && statSync(p).isDirectory();
    } catch {
      return false;
    }
  };
  return {
    bwrap: r.bwrap,
    worktree: r.worktree,
    stateRoot: r.stateRoot,
    // Not when it holds the state root or the repository (a LOOP_WORKTREES that odd): hiding it would hide them.
    worktrees:
      r.worktrees && !isWithin(r.worktrees, r.stateRoot) && !isWithin(r.stateRoot, r.worktrees) && !isWithin(dirname(commonDir), r.worktrees)
        ? r.worktrees
        : null,
    sessionDir,
    // A checkout's git folder is its .git; a bare repository is its own folder.
    repo: basename(commonDir) === ".git" ? dirname(commonDir) : commonDir,
    hide: [runtime, tmuxDir].filter(isDir),
    mask: MASKED_SOCKETS.filter((p) => {
      try {
        return lstatSync(p).isSocket();
      } catch {
        return false;
      }
    }),
    gitDir: r.gitDir ?? null,
    // Only what is there: bwrap refuses a mount whose source is missing. Never one outside the worktree.
    readOnly: (r.readOnly ?? []).filter((p) => isWithin(p, r.worktree) && p !== r.worktree && lstatExists(p)),
    writable: r.writable,
    writableIfPresent: home && isAbsolute(home) ? r.homes.map((h) => join(home, h)) : [],
    ...(r.configHome ? { configHome: r.configHome } : {}),
    // Never one under the state root: the hiding of loop's files comes after, and wins.
    ...programMounts(r.programs),
    ...(r.gatewaySockets ? { gatewaySockets: r.gatewaySockets } : {}),
    ...(r.noNetwork ? { noNetwork: true } : {}),
  };
}

/** The flags of the probe: what every sandbox needs of the kernel and of bwrap. */
const PROBE = [
  "--ro-bind",
  "/",
  "/",
  "--dev",
  "/dev",
  "--proc",
  "/proc",
  "--tmpfs",
  "/tmp",
  "--unshare-pid",
  "--die-with-parent",
  "--new-session",
  "--cap-drop",
  "ALL",
  "--",
  "true",
];

export type SandboxProbe = { ok: true; bwrap: string } | { ok: false; kind: "missing" | "refused"; message: string };

/**
 * Can bwrap run a sandbox here? Found on `PATH`, and a sandbox with the same namespaces and flags as
 * a session's runs `true` (a kernel without unprivileged user namespaces, a container without the
 * right to mount, an old bwrap: refused, with bwrap's own words).
 */
export function probeSandbox(PATH: string): SandboxProbe {
  const bwrap = Bun.which("bwrap", { PATH });
  if (!bwrap) return { ok: false, kind: "missing", message: `bwrap (bubblewrap) was not found on PATH (${PATH || "empty"})` };
  let r: ReturnType<typeof Bun.spawnSync>;
  try {
    r = Bun.spawnSync([bwrap, ...PROBE], { stdin: "ignore", stdout: "ignore", stderr: "pipe", timeout: 10_000 });
  } catch (err) {
    return { ok: false, kind: "refused", message: `${bwrap} could not be run: ${(err as Error).message}` };
  }
  if (r.exitCode === 0) return { ok: true, bwrap };
  const said = r.stderr?.toString().trim().split("\n").slice(-2).join(" / ") || (r.exitCode === null ? "killed" : `exit ${r.exitCode}`);
  return { ok: false, kind: "refused", message: `${bwrap} refused to make a sandbox: ${said}` };
}

/** The programs that exist, bound again; those that are links under /tmp (hidden), made again as links. */
function programMounts(programs: string[]): { programs: string[]; programLinks?: { path: string; target: string }[] } {
  const bound: string[] = [];
  const links: { path: string; target: string }[] = [];
  for (const p of programs) {
    if (!isAbsolute(p) || !existsSync(p)) continue;
    let target: string | null = null;
    try {
      if (isWithin(p, "/tmp") && lstatSync(p).isSymbolicLink()) target = readlinkSync(p);
    } catch {
      target = null;
    }
    if (target === null) bound.push(p);
    else links.push({ path: p, target });
  }
  // One inside a folder bound anyway (npm's .bin in its node_modules) is there as the link it is.
  const made = links.filter((l) => !bound.some((b) => b !== l.path && isWithin(l.path, b)));
  return { programs: bound, ...(made.length ? { programLinks: made } : {}) };
}

/**
 * Does `program --version` run in a sandbox that sees the file system as a session's does (the
 * same hiding: /tmp, the state root, the worktrees; `programs` bound again)? What
 * `probeSandbox` cannot see: an npm launcher whose native binary is hidden, a wrapper script that
 * runs something under /tmp. bwrap's or the program's last words when it does not.
 */
export function probeProgramInSandbox(o: {
  bwrap: string;
  program: string;
  programs: string[];
  hide: string[];
  env: Record<string, string>;
}): { ok: true } | { ok: false; message: string } {
  const bind = (p: string) => ["--ro-bind", p, p];
  const mounts = programMounts(o.programs);
  const argv = [
    o.bwrap,
    ...bind("/"),
    "--dev",
    "/dev",
    "--proc",
    "/proc",
    "--tmpfs",
    "/tmp",
    ...mounts.programs.flatMap(bind),
    ...(mounts.programLinks ?? []).flatMap((l) => ["--symlink", l.target, l.path]),
    ...o.hide.filter((p) => isAbsolute(p) && existsSync(p)).flatMap((p) => ["--tmpfs", p]),
    "--setenv",
    "TMPDIR",
    "/tmp",
    // The flags probeSandbox proved (no --unshare-net: a session without a gateway keeps the network).
    "--unshare-pid",
    "--die-with-parent",
    "--new-session",
    "--cap-drop",
    "ALL",
    "--",
    o.program,
    "--version",
  ];
  let r: ReturnType<typeof Bun.spawnSync>;
  try {
    r = Bun.spawnSync(argv, { stdin: "ignore", stdout: "ignore", stderr: "pipe", env: o.env, timeout: 30_000 });
  } catch (err) {
    return { ok: false, message: `${o.bwrap} could not be run: ${(err as Error).message}` };
  }
  if (r.exitCode === 0) return { ok: true };
  // The line that names the trouble (a stack's "Error: …"), else the last two.
  const lines = (r.stderr?.toString() ?? "")
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean);
  const named = lines.find((l) => /error|not found|cannot|missing|denied/i.test(l));
  const said = (named ?? lines.slice(-2).join(" / ")).slice(0, 400);
  const how = r.exitCode === null ? "it was killed (30 s)" : `exit ${r.exitCode}`;
  return { ok: false, message: said ? `${how}: ${said}` : how };
}

function lstatExists(p: string): boolean {
  try {
    lstatSync(p);
    return true;
  } catch {
    return false;
  }
}

function isWithin(path: string, dir: string): boolean {
  const rel = relative(dir, path);
  return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
}
