// setup_missing (lib/decisions/setup-missing.ts): a verify's exit code and output, and what the start
// point's root holds, in; whether a command the setup would have installed was not found, out. Pure.
import { describe, expect, test } from "bun:test";
import { type SetupMissingFacts, setupMissing, setupMissingFault } from "../../lib/decisions/setup-missing.ts";
import type { ProjectFacts, PyprojectFacts } from "../../lib/decisions/setup-proposal.ts";

const root = (o: Partial<ProjectFacts>): ProjectFacts => ({
  files: [],
  packageJson: null,
  yarnBerry: null,
  pyproject: null,
  requirements: {},
  onPath: [],
  ...o,
});
const node = (declared: string[] = ["jest"], o: Partial<ProjectFacts> = {}) =>
  root({
    files: ["package.json", "package-lock.json"],
    packageJson: { scripts: { test: "jest" }, dependencies: declared.length > 0, declared, packageManager: null },
    ...o,
  });
const py = (o: Partial<PyprojectFacts> = {}): ProjectFacts =>
  root({
    files: ["pyproject.toml"],
    pyproject: { project: true, buildSystem: true, poetry: false, dependencies: ["click>=8"], extras: { test: ["pytest"] }, groups: {}, ...o },
  });
const facts = (o: Partial<SetupMissingFacts>): SetupMissingFacts => ({ exitCode: 127, output: "", hasSetup: false, project: node(), ...o });

describe("setupMissing", () => {
  const cases: { name: string; f: SetupMissingFacts; want: { command: string; from: string[] } | null }[] = [
    {
      name: "npm test, jest a devDependency: dash's words",
      f: facts({ output: "> app@1.0.0 test\n> jest\n\nsh: 1: jest: not found\n" }),
      want: { command: "jest", from: ["package.json", "package-lock.json"] },
    },
    {
      name: "bash's words",
      f: facts({ output: "bash: line 1: jest: command not found\n" }),
      want: { command: "jest", from: ["package.json", "package-lock.json"] },
    },
    { name: "busybox's words", f: facts({ output: "sh: jest: not found" }), want: { command: "jest", from: ["package.json", "package-lock.json"] } },
    { name: "zsh's words", f: facts({ output: "zsh:1: command not found: jest\n" }), want: { command: "jest", from: ["package.json", "package-lock.json"] } },
    {
      name: "a program named otherwise than its package (typescript's tsc)",
      f: facts({ output: "sh: 1: tsc: not found\n", project: node(["typescript"]) }),
      want: { command: "tsc", from: ["package.json", "package-lock.json"] },
    },
    {
      name: "a program package-lock.json says node_modules/.bin holds",
      f: facts({ output: "sh: 1: mocha: not found\n", project: node(["x"], { nodeBins: ["mocha"] }) }),
      want: { command: "mocha", from: ["package-lock.json"] },
    },
    {
      name: "a path into node_modules",
      f: facts({ output: "sh: 1: ./node_modules/.bin/vitest: not found\n", project: node([]) }),
      want: { command: "./node_modules/.bin/vitest", from: ["package.json", "package-lock.json"] },
    },
    {
      name: "pytest in a Python project",
      f: facts({ output: "sh: 1: pytest: not found\n", project: py() }),
      want: { command: "pytest", from: ["pyproject.toml"] },
    },
    {
      name: "the venv's python a setup makes",
      f: facts({ output: "sh: 1: .venv/bin/python: not found\n", project: py() }),
      want: { command: ".venv/bin/python", from: ["pyproject.toml"] },
    },
    {
      name: "python -m pytest, no module (exit 1)",
      f: facts({ exitCode: 1, output: "/usr/bin/python3: No module named pytest\n", project: py() }),
      want: { command: "pytest", from: ["pyproject.toml"] },
    },
    {
      name: "a declared dependency not installed (pytest's collection error)",
      f: facts({ exitCode: 2, output: "E   ModuleNotFoundError: No module named 'click'\n", project: py() }),
      want: { command: "click", from: ["pyproject.toml"] },
    },
    {
      name: "a requirements file declares it",
      f: facts({
        output: "sh: 1: behave2: not found\n",
        project: root({ files: ["requirements.txt"], requirements: { "requirements.txt": "behave2==1.0\n" } }),
      }),
      want: { command: "behave2", from: ["requirements.txt"] },
    },
    // Not setup_missing:
    { name: "a setup is set: an ordinary failure", f: facts({ output: "sh: 1: jest: not found\n", hasSetup: true }), want: null },
    { name: "exit 1 from the tests themselves", f: facts({ exitCode: 1, output: "Tests: 1 failed, 3 passed\n" }), want: null },
    { name: "exit 127 on a program the project does not declare", f: facts({ output: "sh: 1: mytool: not found\n" }), want: null },
    { name: "a toolchain program (node itself) is the machine's, not setup's", f: facts({ output: "sh: 1: node: not found\n" }), want: null },
    {
      name: "jest not found in a repository with no package.json",
      f: facts({ output: "sh: 1: jest: not found\n", project: root({ files: ["Makefile"] }) }),
      want: null,
    },
    { name: "a not-found line, but the exit code is not 127", f: facts({ exitCode: 1, output: "sh: 1: jest: not found\n" }), want: null },
    {
      name: "the project's own module missing is not a dependency",
      f: facts({ exitCode: 2, output: "E   ModuleNotFoundError: No module named 'pkg'\n", project: py() }),
      want: null,
    },
    { name: "no exit code (killed)", f: facts({ exitCode: null, output: "sh: 1: jest: not found\n" }), want: null },
    { name: "a command with control characters is not taken", f: facts({ output: "sh: 1: je\u001b[2Jst: not found\n" }), want: null },
  ];
  for (const c of cases)
    test(c.name, () => {
      const r = setupMissing(c.f);
      expect(r === null ? null : { command: r.command, from: r.from }).toEqual(c.want);
    });

  test("the fault names the command, the files, workspace.setup and the setup init would propose; the verify's line bounded", () => {
    const m = setupMissing(facts({ output: "sh: 1: jest: not found\n" }))!;
    expect(m.line).toBe("sh: 1: jest: not found");
    const f = setupMissingFault({ ...m, item: "fix-login", attempt: 1 });
    expect(f.kind).toBe("setup_missing");
    expect(f.message).toContain("the verify of fix-login (attempt 1) could not find `jest`");
    expect(f.message).toContain("package.json, package-lock.json");
    expect(f.message).toContain('("sh: 1: jest: not found")');
    expect(setupMissingFault({ ...m, line: "x".repeat(500), item: "a", attempt: 1 }).message).toContain(`${"x".repeat(200)}…`);
    expect(f.fix).toContain('"workspace.setup"');
    expect(f.fix).toContain("npm ci --prefer-offline --no-audit --no-fund");
    expect(f.fix).toContain("loop ctl resume");
  });
});
