// `loop init` on real temp repositories: the setup and verify it proposes from a lockfile or a
// manifest (docs/cli/loop-init.md#what-init-guesses), said with the file each came from, written
// into a loop.json that `loop run` imports; and nothing guessed is said too. init runs nothing.
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runLoopSync as cli } from "../helpers/cli.ts";
import { makeRepo } from "../helpers/repo.ts";

const temps: string[] = [];
afterAll(() => temps.forEach((d) => rmSync(d, { recursive: true, force: true })));

function repo(files: Record<string, string>): { root: string; dir: string } {
  const r = makeRepo({ prefix: "loop-init-setup-", files });
  temps.push(r.dir);
  return r;
}

/** A PATH of the system's programs, and with `uv`: a folder holding a program by that name (init only looks for it). */
function pathWith(dir: string, programs: string[]): string {
  const bin = join(dir, "bin");
  mkdirSync(bin, { recursive: true });
  for (const p of programs) {
    writeFileSync(join(bin, p), "#!/bin/sh\nexit 99\n");
    chmodSync(join(bin, p), 0o755);
  }
  return `${bin}:/usr/bin:/bin`;
}

const NODE = {
  "package.json": JSON.stringify({ name: "app", scripts: { test: "jest" }, devDependencies: { jest: "^29.0.0" } }) + "\n",
  "package-lock.json": JSON.stringify({ name: "app", lockfileVersion: 3, packages: {} }) + "\n",
  "tests/a.test.js": "test('a', () => {});\n",
};

const PYTHON = {
  "pyproject.toml":
    '[project]\nname = "pkg"\nversion = "0.1"\n[project.optional-dependencies]\ntest = ["pytest>=8"]\n[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n',
  "src/pkg/__init__.py": "",
  "tests/test_a.py": "def test_a():\n    pass\n",
};

describe("loop init proposes the setup it can see a need for", () => {
  test("npm: package-lock.json gives `npm ci`, package.json's test script the verify; both said with their file; loop run imports what it wrote", () => {
    const { root, dir } = repo(NODE);
    const r = cli(["init", "--json"], { cwd: root, env: { PATH: pathWith(dir, []) } });
    expect(r.code, r.stderr).toBe(0);
    const doc = JSON.parse(r.stdout);
    expect(doc).toMatchObject({ setup: "npm ci --prefer-offline --no-audit --no-fund", verify: "npm test" });
    expect(doc.guesses.map((g: { key: string; from: string }) => [g.key, g.from])).toEqual([
      ["setup", "package-lock.json"],
      ["verify", "package.json"],
    ]);
    const text = readFileSync(join(root, "loop.json"), "utf8");
    expect(text).toContain('"setup": "npm ci --prefer-offline --no-audit --no-fund",');
    expect(text).toContain("Guessed from package-lock.json");
    // A valid definition with the setup in it: a step imports it, and waits for its review (control.review).
    const waits = cli(["run", "--json"], { cwd: root });
    expect(waits.code, waits.stderr).toBe(1);
    expect(JSON.parse(waits.stdout).action).toBe("review");
    expect(cli(["ctl", "start", "--yes", "--json"], { cwd: root }).code).toBe(0);
    const run = cli(["run", "--json"], { cwd: root });
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout).action).toBe("drained");
  });

  test("text output says each guess and its file", () => {
    const { root, dir } = repo(NODE);
    const r = cli(["init", "--text"], { cwd: root, env: { PATH: pathWith(dir, []) } });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("setup `npm ci --prefer-offline --no-audit --no-fund` (guessed from package-lock.json:");
    expect(r.stdout).toContain("verify `npm test` (guessed from package.json:");
  });

  test("python without uv: a venv in the checkout, the project editable with its test extra; the verify runs the venv's python", () => {
    const { root, dir } = repo(PYTHON);
    const r = cli(["init", "--json"], { cwd: root, env: { PATH: pathWith(dir, []) } });
    expect(r.code, r.stderr).toBe(0);
    const doc = JSON.parse(r.stdout);
    expect(doc.setup).toBe("python3 -m venv .venv && .venv/bin/python -m pip install -e '.[test]'");
    expect(doc.verify).toBe(".venv/bin/python -m pytest");
    expect(doc.guesses[0]).toMatchObject({ key: "setup", from: "pyproject.toml" });
    expect(readFileSync(join(root, "loop.json"), "utf8")).toContain('"verify": ".venv/bin/python -m pytest"');
  });

  test("python with its test pins in requirements/ (as click keeps them): that folder's tests.txt, not its docs or dev files; a link named requirements is not followed", () => {
    const { root, dir } = repo({
      "pyproject.toml": '[project]\nname = "pkg"\nversion = "0.1"\n[build-system]\nrequires = ["flit_core<4"]\nbuild-backend = "flit_core.buildapi"\n',
      "requirements/tests.txt": "pytest==8.3.5\npluggy==1.5.0\n",
      "requirements/docs.txt": "sphinx==8.2.3\n",
      "requirements/dev.txt": "tox==4.0\n",
      "src/pkg/__init__.py": "",
    });
    const r = cli(["init", "--json"], { cwd: root, env: { PATH: pathWith(dir, []) } });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).setup).toBe("python3 -m venv .venv && .venv/bin/python -m pip install -e . -r requirements/tests.txt");

    const other = repo({ "pyproject.toml": '[project]\nname = "pkg"\nversion = "0.1"\n', "pins/tests.txt": "pytest==8.3.5\n" });
    symlinkSync("pins", join(other.root, "requirements"));
    const l = cli(["init", "--json"], { cwd: other.root, env: { PATH: pathWith(other.dir, []) } });
    expect(l.code, l.stderr).toBe(0);
    expect(JSON.parse(l.stdout).setup).toBe("python3 -m venv .venv && .venv/bin/python -m pip install -e . pytest");
  });

  test("python with uv on PATH: uv sync with the test extra", () => {
    const { root, dir } = repo(PYTHON);
    const r = cli(["init", "--json"], { cwd: root, env: { PATH: pathWith(dir, ["uv"]) } });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ setup: "uv sync --extra test", verify: ".venv/bin/python -m pytest" });
  });

  test("nothing to install and no test command: no setup written, and both said", () => {
    const { root, dir } = repo({ "README.md": "hello\n" });
    const r = cli(["init", "--text"], { cwd: root, env: { PATH: pathWith(dir, []) } });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("setup: nothing guessed: no lockfile or manifest");
    expect(r.stdout).toContain("verify: nothing guessed: no test command found");
    const text = readFileSync(join(root, "loop.json"), "utf8");
    expect(text).not.toMatch(/^\s*"setup":/m);
    expect(text).toContain('No lockfile or manifest seen: no "setup"');
  });
});
