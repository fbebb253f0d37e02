// The sandbox's command line (lib/supervisor/sandbox.ts): sandboxArgv is pure, its order is the
// security (later mounts cover earlier ones), and sandboxSpec reads a real worktree's git layout.
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { sandboxArgv, sandboxSpec, type SandboxSpec } from "../../lib/supervisor/sandbox.ts";
import { sandboxRequest } from "../../lib/writer/sandbox-request.ts";
import { makeRepo } from "../helpers/repo.ts";

const SPEC: SandboxSpec = {
  bwrap: "/usr/bin/bwrap",
  worktree: "/srv/api/.loop/workspaces/fix",
  worktrees: null,
  stateRoot: "/srv/api/.loop",
  sessionDir: "/srv/api/.loop/sessions/fix/1",
  repo: "/srv/api",
  hide: ["/run/user/1000"],
  mask: ["/run/docker.sock"],
  gitDir: { path: "/srv/api/.loop/sessions/fix/1/git", writable: true },
  readOnly: ["/srv/api/.loop/workspaces/fix/node_modules"],
  writable: ["/srv/api/.loop/sessions/fix/1/ask.txt"],
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

  test("what is writable is mounted after the hiding: the worktree, the attempt's own git folder after the read-only session folder it lies in; what setup made read-only over the worktree", () => {
    const hidden = at("--tmpfs", "/srv/api/.loop");
    for (const p of [SPEC.worktree, ...SPEC.writable, SPEC.gitDir!.path]) expect(at("--bind", p)).toBeGreaterThan(hidden);
    expect(at("--ro-bind", SPEC.sessionDir)).toBeGreaterThan(hidden);
    expect(at("--bind", SPEC.writable[0]!)).toBeGreaterThan(at("--ro-bind", SPEC.sessionDir));
    expect(at("--bind", SPEC.gitDir!.path)).toBeGreaterThan(at("--ro-bind", SPEC.sessionDir));
    expect(at("--ro-bind", SPEC.readOnly[0]!)).toBeGreaterThan(at("--bind", SPEC.worktree));
    // Nothing of the repository's git folder is ever bound writable: not its store, not its refs.
    expect(argv.some((a, i) => a === "--bind" && argv[i + 1]!.startsWith("/srv/api/.git"))).toBe(false);
    expect(at("--bind-try", "/home/u/.aider")).toBeGreaterThan(hidden);
    // A preset's private config home (in the read-only session folder) writable, its credentials read-only again inside it.
    expect(at("--bind", SPEC.configHome!.dir)).toBeGreaterThan(at("--ro-bind", SPEC.sessionDir));
    expect(at("--ro-bind", SPEC.configHome!.readOnly[0]!)).toBeGreaterThan(at("--bind", SPEC.configHome!.dir));
    // The operator's own config homes are never bound writable.
    expect(argv.some((a) => a.endsWith("/.claude") || a.endsWith("/.codex"))).toBe(false);
  });

  test("a verify's git folder is read-only", () => {
    const v = sandboxArgv({ ...SPEC, gitDir: { path: SPEC.gitDir!.path, writable: false } }, ["verify"]);
    expect(v.findIndex((a, i) => a === "--ro-bind" && v[i + 1] === SPEC.gitDir!.path)).toBeGreaterThan(0);
    expect(v.findIndex((a, i) => a === "--bind" && v[i + 1] === SPEC.gitDir!.path)).toBe(-1);
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
  test("takes the request's paths, makes the writable files, binds only what exists", () => {
    const { dir, root } = makeRepo("loop-sbx-");
    try {
      const stateRoot = join(root, ".loop");
      const wt = join(dir, "worktrees", "fix");
      mkdirSync(join(wt, "node_modules"), { recursive: true });
      const session = join(stateRoot, "sessions", "fix", "1");
      const ask = join(session, "ask.txt");
      const base = {
        bwrap: "/usr/bin/bwrap",
        worktree: wt,
        stateRoot,
        worktrees: join(dir, "worktrees"),
        commonDir: join(root, ".git"),
        homes: [".claude"],
        env: { HOME: "/home/u" },
      };
      const spec = sandboxSpec(
        {
          ...base,
          gitDir: { path: join(session, "git"), writable: true },
          readOnly: [join(wt, "node_modules"), join(wt, ".venv"), "/etc"],
          writable: [ask],
          programs: [root, join(root, "no-such-program")],
        },
        session,
      );
      expect(spec.repo).toBe(root);
      expect(spec.gitDir).toEqual({ path: join(session, "git"), writable: true });
      // Only what exists, and only inside the worktree.
      expect(spec.readOnly).toEqual([join(wt, "node_modules")]);
      expect(existsSync(ask) && statSync(ask).size === 0).toBe(true);
      expect(spec.writableIfPresent).toEqual(["/home/u/.claude"]);
      expect(spec.programs).toEqual([root]);
      // A program that is a link under /tmp is made again as a link, its target bound: a launcher finds its package beside its real self.
      const real = join(root, "real-agent.js");
      writeFileSync(real, "");
      const bin = mkdtempSync("/tmp/loop-sbx-bin-");
      const link = join(bin, "agent");
      symlinkSync(real, link);
      const linked = sandboxSpec({ ...base, homes: [], writable: [], programs: [link, real], env: {} }, session);
      // One inside a folder bound anyway (npm's .bin in its node_modules) is there as it is: no link made over it.
      const inside = sandboxSpec({ ...base, homes: [], writable: [], programs: [link, bin, real], env: {} }, session);
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

  test("a checkout that is not a folder at its place (a link to the operator's checkout) is refused with its path, and nothing is mounted (sandboxRequest)", () => {
    const { dir, root } = makeRepo("loop-sbx-");
    try {
      const wts = join(dir, "worktrees");
      mkdirSync(join(wts, "fix"), { recursive: true });
      const request = (worktree: string) => () =>
        sandboxRequest({ bwrap: "b", repo: root, worktree, stateRoot: join(root, ".loop"), runner: "claude", writable: [], env: {} });
      expect(request(join(wts, "fix"))().commonDir).toBe(join(root, ".git"));
      symlinkSync(root, join(wts, "evil"));
      expect(request(join(wts, "evil"))).toThrow(`no sandbox over ${join(wts, "evil")}: it is not the folder loop made (it is a link to ${root})`);
      // claude's config home is the session's own (lib/supervisor/config-home.ts): nothing of $HOME is bound writable for it.
      expect(request(join(wts, "fix"))().homes).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
