// The sandbox's command line (lib/supervisor/sandbox.ts): sandboxArgv is pure, its order is the
// security (later mounts cover earlier ones), and sandboxSpec reads a real worktree's git layout.
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { sandboxArgv, sandboxSpec, type SandboxSpec } from "../../lib/supervisor/sandbox.ts";
import { sandboxRequest } from "../../lib/step/machine-probe.ts";
import { checkWorktree } from "../../lib/repo/workspace.ts";
import { git, makeRepo } from "../helpers/repo.ts";

const SPEC: SandboxSpec = {
  bwrap: "/usr/bin/bwrap",
  worktree: "/srv/api/.loop/workspaces/fix",
  worktrees: null,
  stateRoot: "/srv/api/.loop",
  sessionDir: "/srv/api/.loop/sessions/fix/1",
  repo: "/srv/api",
  hide: ["/run/user/1000"],
  mask: ["/run/docker.sock"],
  git: {
    commonDir: "/srv/api/.git",
    writable: ["/srv/api/.git/worktrees/fix", "/srv/api/.git/refs/heads/loop/x/item", "/srv/api/.git/logs/refs/heads/loop/x/item"],
    readOnly: ["/srv/api/.git/worktrees/fix/commondir"],
  },
  writable: ["/srv/api/.loop/sessions/fix/1/ask.txt"],
  objects: { own: "/srv/api/.loop/sessions/fix/1/objects", shared: "/srv/api/.git/objects" },
  writableIfPresent: ["/home/u/.aider"],
  configHome: { dir: "/srv/api/.loop/sessions/fix/1/cli-home", readOnly: ["/srv/api/.loop/sessions/fix/1/cli-home/.credentials.json"] },
  programs: ["/tmp/checkout/node_modules/bun/bin/bun.exe", "/tmp/checkout"],
};

describe("the worktrees folder outside the state root (docs/state.md#where-worktrees-live)", () => {
  const spec: SandboxSpec = { ...SPEC, worktree: "/home/u/.local/state/loop/api-0123456789ab/fix", worktrees: "/home/u/.local/state/loop/api-0123456789ab" };
  const argv = sandboxArgv(spec, ["agent"]);
  const at = (flag: string, path: string) => argv.findIndex((a, i) => a === flag && argv[i + 1] === path);

  test("is hidden (every other worktree, the landing checkout) after the state root, and the agent's own worktree bound back after it", () => {
    expect(at("--tmpfs", spec.worktrees!)).toBeGreaterThan(at("--tmpfs", "/srv/api/.loop"));
    expect(at("--bind", spec.worktree)).toBeGreaterThan(at("--tmpfs", spec.worktrees!));
  });

  test("is not hidden by a tmpfs of its own when there is none, as in a state root of an older layout", () => {
    expect(sandboxArgv(SPEC, ["agent"]).filter((a) => a === "--tmpfs")).toEqual(["--tmpfs", "--tmpfs", "--tmpfs"]);
  });
});

describe("sandboxArgv", () => {
  const argv = sandboxArgv(SPEC, ["agent", "--flag", "--"]);
  /** Index of the mount whose destination is `path` (bwrap: flag, source, destination). */
  const at = (flag: string, path: string) => argv.findIndex((a, i) => a === flag && argv[i + 1] === path);

  test("the command comes last, after `--`, untouched", () => {
    expect(argv[0]).toBe("/usr/bin/bwrap");
    expect(argv.slice(argv.indexOf("--") + 1)).toEqual(["agent", "--flag", "--"]);
  });

  test("read-only root first; /tmp, the runtime folder and the state root hidden; service sockets masked; the repository read-only", () => {
    expect(argv.slice(1, 4)).toEqual(["--ro-bind", "/", "/"]);
    expect(argv.findIndex((a, i) => a === "--ro-bind" && argv[i + 1] === "/dev/null" && argv[i + 2] === "/run/docker.sock")).toBeGreaterThan(0);
    for (const p of ["/tmp", "/run/user/1000", "/srv/api/.loop"]) expect(at("--tmpfs", p)).toBeGreaterThan(0);
    expect(at("--ro-bind", "/srv/api")).toBeGreaterThan(at("--tmpfs", "/tmp"));
    // The state root is hidden after the repository is re-exposed, so nothing brings it back.
    expect(at("--tmpfs", "/srv/api/.loop")).toBeGreaterThan(at("--ro-bind", "/srv/api"));
  });

  test("the program (loop itself from a checkout under /tmp, for the demo agent) comes back read-only after /tmp is hidden, before the state root is", () => {
    for (const p of SPEC.programs) {
      expect(at("--ro-bind", p)).toBeGreaterThan(at("--tmpfs", "/tmp"));
      expect(at("--ro-bind", p)).toBeLessThan(at("--tmpfs", "/srv/api/.loop"));
    }
  });

  test("what is writable is mounted after the hiding; the worktree's git links read-only after its git folder", () => {
    const hidden = at("--tmpfs", "/srv/api/.loop");
    for (const p of [...SPEC.git.writable, SPEC.worktree, ...SPEC.writable]) expect(at("--bind", p)).toBeGreaterThan(hidden);
    expect(at("--ro-bind", "/srv/api/.git/worktrees/fix/commondir")).toBeGreaterThan(at("--bind", "/srv/api/.git/worktrees/fix"));
    expect(at("--ro-bind", SPEC.sessionDir)).toBeGreaterThan(hidden);
    expect(at("--bind", SPEC.writable[0]!)).toBeGreaterThan(at("--ro-bind", SPEC.sessionDir));
    // The private object folder too (it lies in the read-only session folder), and git is pointed at it.
    expect(at("--bind", SPEC.objects!.own)).toBeGreaterThan(at("--ro-bind", SPEC.sessionDir));
    expect(argv.join(" ")).toContain("--setenv GIT_OBJECT_DIRECTORY /srv/api/.loop/sessions/fix/1/objects --setenv GIT_ALTERNATE_OBJECT_DIRECTORIES /srv/api/.git/objects");
    // The repository's own store is never bound writable.
    expect(at("--bind", "/srv/api/.git/objects")).toBe(-1);
    expect(at("--bind-try", "/home/u/.aider")).toBeGreaterThan(hidden);
    // A preset's private config home (in the read-only session folder) writable, its credentials read-only again inside it.
    expect(at("--bind", SPEC.configHome!.dir)).toBeGreaterThan(at("--ro-bind", SPEC.sessionDir));
    expect(at("--ro-bind", SPEC.configHome!.readOnly[0]!)).toBeGreaterThan(at("--bind", SPEC.configHome!.dir));
    // The operator's own config homes are never bound writable.
    expect(argv.some((a) => a.endsWith("/.claude") || a.endsWith("/.codex"))).toBe(false);
  });

  test("its own pid namespace dying with the wrapper, a new session, no capabilities, the worktree as cwd", () => {
    for (const flag of ["--unshare-pid", "--die-with-parent", "--new-session"]) expect(argv.indexOf(flag)).toBeGreaterThan(0);
    expect(argv.slice(argv.indexOf("--cap-drop"), argv.indexOf("--cap-drop") + 2)).toEqual(["--cap-drop", "ALL"]);
    expect(argv.slice(argv.indexOf("--chdir"), argv.indexOf("--chdir") + 2)).toEqual(["--chdir", SPEC.worktree]);
    // The network is left as it is.
    expect(argv.filter((a) => a.startsWith("--unshare-net") || a === "--unshare-all")).toEqual([]);
  });
});

describe("sandboxSpec", () => {
  test("reads a linked worktree's git folders and prepares the mount points", () => {
    const { dir, root } = makeRepo("loop-sbx-");
    try {
      const stateRoot = join(root, ".loop");
      const wt = join(stateRoot, "workspaces", "fix");
      git(root, "worktree", "add", "-q", "-b", "loop/x/item/fix", wt);
      git(root, "pack-refs", "--all"); // the branch only packed: its folder is made for the mount
      rmSync(join(root, ".git", "refs", "heads", "loop"), { recursive: true, force: true });
      const checked = checkWorktree({ repo: root, worktree: wt, branch: "loop/x/item/fix" });
      expect(checked).toEqual({ ok: true, gitDir: join(root, ".git", "worktrees", "fix"), commonDir: join(root, ".git") });
      const dirs = { gitDir: join(root, ".git", "worktrees", "fix"), commonDir: join(root, ".git") };
      const ask = join(stateRoot, "sessions", "fix", "1", "ask.txt");
      const spec = sandboxSpec({ bwrap: "/usr/bin/bwrap", worktree: wt, stateRoot, branch: "loop/x/item/fix", git: dirs, writable: [ask], homes: [".claude"], programs: [root, join(root, "no-such-program")], env: { HOME: "/home/u" } }, join(stateRoot, "sessions", "fix", "1"));
      expect(spec.repo).toBe(root);
      expect(spec.git.writable).toEqual([join(root, ".git", "objects"), join(root, ".git", "worktrees", "fix"), join(root, ".git", "refs", "heads", "loop", "x", "item"), join(root, ".git", "logs", "refs", "heads", "loop", "x", "item")]);
      for (const d of spec.git.writable) expect(statSync(d).isDirectory()).toBe(true);
      expect(spec.git.readOnly.map((p) => p.slice(p.lastIndexOf("/") + 1))).toEqual(["commondir", "gitdir", "config.worktree"]);
      expect(readFileSync(join(root, ".git", "worktrees", "fix", "config.worktree"), "utf8")).toBe("");
      expect(existsSync(ask) && statSync(ask).size === 0).toBe(true);
      expect(spec.writableIfPresent).toEqual(["/home/u/.claude"]);
      expect(spec.programs).toEqual([root]);
      // A program that is a link under /tmp is made again as a link, its target bound: a launcher finds its package beside its real self.
      const real = join(root, "real-agent.js");
      writeFileSync(real, "");
      const bin = mkdtempSync("/tmp/loop-sbx-bin-");
      const link = join(bin, "agent");
      symlinkSync(real, link);
      const linked = sandboxSpec({ bwrap: "/usr/bin/bwrap", worktree: wt, stateRoot, branch: "loop/x/item/fix", git: dirs, writable: [], homes: [], programs: [link, real], env: {} }, join(stateRoot, "sessions", "fix", "1"));
      // One inside a folder bound anyway (npm's .bin in its node_modules) is there as it is: no link made over it.
      const inside = sandboxSpec({ bwrap: "/usr/bin/bwrap", worktree: wt, stateRoot, branch: "loop/x/item/fix", git: dirs, writable: [], homes: [], programs: [link, bin, real], env: {} }, join(stateRoot, "sessions", "fix", "1"));
      expect({ programs: inside.programs, links: inside.programLinks }).toEqual({ programs: [bin, real], links: undefined });
      rmSync(bin, { recursive: true, force: true });
      expect({ programs: linked.programs, links: linked.programLinks }).toEqual({ programs: [real], links: [{ path: link, target: real }] });
      const argv = sandboxArgv(linked, ["agent"]);
      expect(argv.slice(argv.indexOf("--symlink"), argv.indexOf("--symlink") + 3)).toEqual(["--symlink", real, link]);
      expect(argv.indexOf("--symlink")).toBeGreaterThan(argv.indexOf(real));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a checkout that is not the linked worktree loop made is refused with its path and why, and nothing is mounted (sandboxRequest)", () => {
    const { dir, root } = makeRepo("loop-sbx-");
    try {
      const request = (worktree: string, branch: string) => () => sandboxRequest({ bwrap: "b", repo: root, worktree, stateRoot: join(root, ".loop"), branch, runner: "claude", writable: [], objects: join(root, ".loop", "objects"), env: {} });
      expect(request(root, "main")).toThrow(`no sandbox over ${root}: worktree_replaced: ${root} is not the checkout loop made (its .git is a directory: a repository of its own)`);
      const wt = join(root, ".loop", "workspaces", "fix");
      git(root, "worktree", "add", "-q", "-b", "loop/x/item/fix", wt);
      expect(request(wt, "loop/x/item/fix")().git).toEqual({ gitDir: join(root, ".git", "worktrees", "fix"), commonDir: join(root, ".git") });
      // claude's config home is the session's own (lib/supervisor/config-home.ts): nothing of $HOME is bound writable for it.
      expect(request(wt, "loop/x/item/fix")().homes).toEqual([]);
      // Its .git pointed at a git folder of the agent's making: refused, whatever that folder names.
      mkdirSync(join(wt, ".fake"));
      writeFileSync(join(wt, ".fake", "commondir"), `${join(root, ".git")}\n`);
      writeFileSync(join(wt, ".git"), `gitdir: ${join(wt, ".fake")}\n`);
      expect(request(wt, "loop/x/item/fix")).toThrow(`its .git names ${join(wt, ".fake")}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
