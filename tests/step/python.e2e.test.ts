// Any repository, not only Node (docs/operations.md#on-a-real-repository): a small Python
// package made here (src layout), with the real interpreter and venvs made offline
// (`python3 -m venv --without-pip`; an editable install is a .pth file in the venv's site-packages
// naming a checkout's src, which is what `pip install -e` leaves). The operator's venv is active in
// `loop run`'s environment (VIRTUAL_ENV, its bin first on PATH), its .pth naming the main checkout's
// src: the verify must test the item's own code in the item's own environment.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { demoDefinition, git, Project } from "../helpers/project.ts";

/** The machine's python3 (Debian's where it is: a pyenv shim needs its own environment). */
const PY = existsSync("/usr/bin/python3") ? "/usr/bin/python3" : (Bun.which("python3") ?? "python3");

const FILES: Record<string, string> = {
  "pyproject.toml": '[project]\nname = "calc"\nversion = "0.1.0"\n',
  "src/calc/__init__.py": "def add(a, b):\n    return a + b\n",
  // Which calc it imported goes to the verify's log.
  "tests/test_calc.py":
    'import sys, unittest\nimport calc\n\nprint("calc from", calc.__file__, file=sys.stderr)\n\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(calc.add(2, 2), 4)\n',
};

/** The verify init guesses for such a repository: a bare python3. */
const VERIFY = "python3 -m unittest discover -s tests -v";

/** A venv at `dir` whose site-packages holds a .pth naming `src` (an editable install, offline). */
function venv(dir: string, src: string): void {
  const r = Bun.spawnSync([PY, "-m", "venv", "--without-pip", dir], { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`python3 -m venv: ${r.stderr.toString()}`);
  const site = Bun.spawnSync([join(dir, "bin", "python3"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], { stdout: "pipe" })
    .stdout.toString()
    .trim();
  Bun.write(join(site, "_editable_calc.pth"), `${src}\n`);
}

/** The operator's shell: `venvDir` activated (VIRTUAL_ENV, its bin first), its .pth naming the main checkout's src. */
function activated(p: Project, venvDir: string): void {
  venv(venvDir, join(p.root, "src"));
  p.env.VIRTUAL_ENV = venvDir;
  p.env.PATH = `${venvDir}/bin:${dirname(PY)}:/usr/bin:/bin`;
}

function pythonProject(o: {
  gitignore: string;
  runner: string;
  setup?: string;
  verify?: string;
  maxAttempts?: number;
  landing?: string;
  sandbox?: boolean;
}): Project {
  return new Project(
    demoDefinition([{ id: "x", prompt: "change calc", runner: "agent", verify: o.verify ?? VERIFY }], {
      defaults: { landing: o.landing ?? "merge", maxAttempts: o.maxAttempts ?? 1, ...(o.sandbox ? { sandbox: "bwrap" } : {}) },
      runners: { agent: { command: ["sh", "-c", o.runner] } },
      ...(o.setup ? { workspace: { setup: o.setup } } : {}),
    }),
    { files: { ...FILES, ".gitignore": o.gitignore }, env: {} },
  );
}

/** Every path in every ref of the repository. */
function pathsInAnyRef(p: Project): string[] {
  return git(p.root, "log", "--all", "--format=", "--name-only").split("\n").filter(Boolean);
}

const projects: Project[] = [];
afterAll(() => projects.forEach((p) => p.dispose()));

describe("a Python repository, the operator's venv active", () => {
  test.concurrent("an agent that breaks a module does not pass: the verify's python3 is not the operator's venv, whose editable install imports the main checkout's code; loop logs --verify says what was dropped", async () => {
    const p = pythonProject({
      gitignore: ".loop/\n.venv/\n",
      runner: "printf 'def add(a, b) return a + b\\n' > src/calc/__init__.py && git commit -qam broken",
    });
    projects.push(p);
    // The operator's venv in the main checkout, as `python3 -m venv .venv && pip install -e .` leaves it.
    activated(p, join(p.root, ".venv"));
    // In the main checkout, the verify passes (the operator's code is fine).
    const main = Bun.spawnSync(["sh", "-c", VERIFY], {
      cwd: p.root,
      env: { PATH: p.env.PATH!, VIRTUAL_ENV: p.env.VIRTUAL_ENV!, HOME: process.env.HOME ?? "/root" },
      stderr: "pipe",
    });
    expect(main.exitCode, main.stderr.toString()).toBe(0);
    await p.runToDrain({ codes: [0, 1] });
    const it = p.projection().items.x!;
    expect(it.status).toBe("failed");
    const tail = it.attempts[0]!.verify!.tail;
    expect(tail).not.toContain(`calc from ${p.root}/src`);
    const logs = await p.loop(["logs", "x", "--verify"]);
    expect(logs.code).toBe(0);
    expect(logs.stderr).toContain("VIRTUAL_ENV (activated_environment)");
    expect(logs.stderr).toContain(`taken off PATH: ${p.root}/.venv/bin`);
    expect(logs.stderr).not.toContain(`PATH=${p.root}/.venv/bin`);
    await p.finish();
  }, 240_000);

  for (const sandbox of [false, ...(Bun.which("bwrap") ? [true] : [])])
    test.concurrent(`${sandbox ? "in the sandbox, " : ""}the venv setup made in the checkout comes first: a correct change passes with a bare python3 verify, importing the checkout's code; the venv is not in .gitignore and nothing of it is in any ref`, async () => {
      // Setup's later command finds what its first made: python3 there is the new venv's.
      const setup = `${PY} -m venv --without-pip .venv && echo "$PWD/src" > "$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/_item_calc.pth"`;
      // The change is left uncommitted: the seal's commit of what the agent left must leave the venv out.
      // The agent says which python3 and VIRTUAL_ENV it had, in its session folder (read-only in the sandbox).
      const runner = `echo "$VIRTUAL_ENV $(command -v python3)" > "$(dirname "$LOOP_HANDOFF")/agent-env.txt" 2>/dev/null; printf 'def add(a, b):\\n    return a + b\\n\\n\\ndef mul(a, b):\\n    return a * b\\n' > src/calc/__init__.py`;
      const p = pythonProject({ gitignore: ".loop/\n", runner, setup, sandbox, verify: `${VERIFY} && python3 -c 'import calc; assert calc.mul(2, 3) == 6'` });
      projects.push(p);
      const operator = join(p.aux, "operator-venv");
      activated(p, operator);
      const r = await p.runToDrain({ codes: [0, 1] });
      // Nothing was installed into the operator's venv.
      expect([...new Bun.Glob("lib/*/site-packages/*.pth").scanSync({ cwd: operator })]).toEqual([expect.stringMatching(/_editable_calc\.pth$/)]);
      expect(r.reason, p.history()).toBe("Succeeded");
      const it = p.projection().items.x!;
      expect(it.status).toBe("passed");
      const worktree = it.session!.worktree;
      if (!sandbox) expect(readFileSync(join(p.sessionDir("x", 1), "agent-env.txt"), "utf8")).toBe(`${worktree}/.venv ${worktree}/.venv/bin/python3\n`);
      expect(it.attempts[0]!.verify!.tail).toContain(`calc from ${worktree}/src/calc/__init__.py`);
      // The verify ran with the checkout's venv first, named by VIRTUAL_ENV.
      const logs = await p.loop(["logs", "x", "--verify"]);
      expect(logs.stderr).toContain(`PATH=${worktree}/.venv/bin:`);
      expect(logs.stderr).toContain(`VIRTUAL_ENV=${worktree}/.venv`);
      // It landed, without a file of the venv in any ref.
      expect(git(p.root, "show", "loop/t/landed:src/calc/__init__.py")).toContain("def mul");
      const paths = pathsInAnyRef(p);
      expect(paths.filter((x) => x.startsWith(".venv/") || x.endsWith("pyvenv.cfg"))).toEqual([]);
      await p.finish();
    }, 240_000);

  test.concurrent("a venv the agent left (not setup's, not ignored) is never committed silently: setup_output_committed names it, nothing lands", async () => {
    const runner = `${PY} -m venv --without-pip env && printf 'def add(a, b):\\n    return b + a\\n' > src/calc/__init__.py`;
    const p = pythonProject({ gitignore: ".loop/\n", runner });
    projects.push(p);
    activated(p, join(p.aux, "operator-venv"));
    await p.runToDrain({ codes: [0, 1] });
    const v = p.eventsOf("verify_finished", "x");
    expect(v.map((e) => e.payload.code)).toEqual(["setup_output_committed"]);
    expect(String(v[0]!.payload.reason)).toContain("env/pyvenv.cfg");
    expect(p.projection().items.x!.status).toBe("failed");
    expect(git(p.root, "for-each-ref", "--format=%(refname)", "refs/heads/loop/t/landed")).toBe("");
    await p.finish();
  }, 240_000);

  test.concurrent("a setup that fails in Python: the reason quotes the traceback's exception, then the last lines", async () => {
    const setup = `${PY} -m venv --without-pip .venv && python3 -c 'import calc_build_backend_missing'; s=$?; echo 'cleaning up'; echo 'removing .venv/build'; echo 'note: this error originates from a subprocess'; echo 'See above for output.'; exit $s`;
    const p = pythonProject({ gitignore: ".loop/\n.venv/\n", runner: "true", setup });
    projects.push(p);
    activated(p, join(p.aux, "operator-venv"));
    await p.runUntil((x) => x.action === "paused", { codes: [0, 1], what: "paused" });
    const fault = p.eventsOf("environment_fault")[0]!;
    expect(fault.payload.kind).toBe("setup_failed");
    expect(String(fault.payload.reason)).toContain(
      "workspace.setup exited 1: ModuleNotFoundError: No module named 'calc_build_backend_missing' / … / removing .venv/build / note: this error originates from a subprocess / See above for output.",
    );
    expect(p.projection().items.x).toMatchObject({ status: "pending", failures: 0 });
  }, 240_000);

  test.concurrent("an agent CLI installed only in the operator's venv (aider with pip, say) is still started, by its path, though its bin is off the agent's PATH", async () => {
    const p = new Project(
      demoDefinition([{ id: "x", prompt: "p", runner: "agent", verify: "test -s done.txt" }], {
        defaults: { landing: "none", maxAttempts: 1 },
        runners: { agent: { command: ["venv-agent"] } },
      }),
      {
        files: { ...FILES, ".gitignore": ".loop/\n" },
        env: {},
      },
    );
    projects.push(p);
    const operator = join(p.aux, "operator-venv");
    activated(p, operator);
    writeFileSync(join(operator, "bin", "venv-agent"), '#!/bin/sh\necho "$PATH" > done.txt\n', { mode: 0o755 });
    await p.runToDrain({ codes: [0, 1] });
    expect(p.projection().items.x!.status).toBe("passed");
    expect(p.eventsOf("session_started", "x")[0]!.payload.argv).toEqual([join(operator, "bin", "venv-agent")]);
    expect(git(p.root, "show", "loop/t/item/x:done.txt")).not.toContain(operator);
    await p.finish();
  }, 240_000);

  test.concurrent("an agent that replays a patch with git's plumbing (git apply --index, as a script replaying upstream commits does) finds its index matching the checkout loop wrote", async () => {
    const patch =
      "--- a/src/calc/__init__.py\n+++ b/src/calc/__init__.py\n@@ -1,2 +1,6 @@\n def add(a, b):\n     return a + b\n+\n+\n+def mul(a, b):\n+    return a * b\n";
    const runner = `git diff-files --name-only >&2; git diff-files --quiet || exit 1; printf -- '${patch}' | git apply --index`;
    const setup = `${PY} -m venv --without-pip .venv && echo "$PWD/src" > "$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/_item_calc.pth"`;
    const p = pythonProject({ gitignore: ".loop/\n.venv/\n", runner, setup });
    projects.push(p);
    activated(p, join(p.aux, "operator-venv"));
    await p.runToDrain({ codes: [0] });
    expect(p.projection().items.x!.status).toBe("passed");
    expect(git(p.root, "show", "loop/t/landed:src/calc/__init__.py")).toContain("def mul(a, b):");
    await p.finish();
  }, 240_000);

  test.concurrent("an agent exiting 3 that changed nothing is not passed, though the verify passes on the base: agent_failed, each attempt", async () => {
    const p = pythonProject({ gitignore: ".loop/\n.venv/\n", runner: "echo 'cannot read the task' >&2; exit 3", maxAttempts: 2, verify: "true" });
    projects.push(p);
    activated(p, join(p.aux, "operator-venv"));
    await p.runToDrain({ codes: [0, 1] });
    expect(p.eventsOf("verify_finished", "x").map((e) => [e.payload.code, e.payload.passed])).toEqual([
      ["agent_failed", false],
      ["agent_failed", false],
    ]);
    expect(p.projection().items.x!.status).toBe("failed");
    expect(readFileSync(join(p.root, "src/calc/__init__.py"), "utf8")).toBe(FILES["src/calc/__init__.py"]!);
    await p.finish();
  }, 240_000);

  test.concurrent("a verify failing on the base (the item's test of what it adds): the loop waits with the exception quoted and no attempt spent; resume --yes accepts it and the item passes", async () => {
    // Setup makes the checkout's own venv, its editable install naming the checkout's src (offline).
    const setup = `${PY} -m venv --without-pip .venv && echo "$PWD/src" > "$(.venv/bin/python3 -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")/_editable_calc.pth"`;
    const agent = "printf 'def add(a, b):\\n    return a + b\\n\\n\\ndef sub(a, b):\\n    return a - b\\n' > src/calc/__init__.py";
    const p = new Project(
      demoDefinition([{ id: "x", prompt: "add sub", runner: "agent" }], {
        defaults: { verify: VERIFY, landing: "merge", maxAttempts: 1 },
        runners: { agent: { command: ["sh", "-c", agent] } },
        workspace: { setup, baseVerify: true },
      }),
      {
        files: {
          ...FILES,
          "tests/test_sub.py":
            "import unittest\nimport calc\n\n\nclass S(unittest.TestCase):\n    def test_sub(self):\n        self.assertEqual(calc.sub(3, 1), 2)\n",
          ".gitignore": ".loop/\n.venv/\n",
        },
        env: {},
      },
    );
    projects.push(p);
    activated(p, join(p.aux, "operator-venv"));
    await p.runUntil((x) => x.action === "paused", { codes: [0, 1], what: "paused" });
    const fin = p.eventsOf("base_verify_finished")[0]!;
    expect(fin.payload).toMatchObject({ code: "failed", exitCode: 1 });
    // unittest's line naming the test that errored, then its last lines.
    expect(String(fin.payload.quote)).toStartWith("ERROR: test_sub (test_sub.S.test_sub)");
    expect(String(fin.payload.quote)).toEndWith("FAILED (errors=1)");
    expect(readFileSync(String(fin.payload.log), "utf8")).toContain("AttributeError: module 'calc' has no attribute 'sub'");
    // The base's own venv and code: the calc the verify imported is the base checkout's.
    expect(readFileSync(String(fin.payload.log), "utf8")).toMatch(/calc from \S*_base\/src\/calc\/__init__\.py/);
    expect(p.eventsOf("environment_fault")[0]!.payload.kind).toBe("base_verify_failed");
    expect(p.eventsOf("launch_reserved")).toHaveLength(0);
    expect(p.projection().items.x).toMatchObject({ status: "pending", failures: 0, attempts: [] });
    expect((await p.ctl(["resume", "--yes"])).code).toBe(0);
    await p.runToDrain({ codes: [0, 1] });
    expect(p.projection().items.x!.status, p.history()).toBe("passed");
    expect(p.eventsOf("base_verify_started")).toHaveLength(1);
    await p.finish();
  }, 240_000);
});
