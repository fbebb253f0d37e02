// `setup_missing` (docs/cli/loop-run.md#environment-faults): a verify that could not find a command
// the project's setup would have installed (`jest: not found` in a Node project, `pytest` in a
// Python one) while loop.json has no `workspace.setup`. That is the environment's fault, not the
// item's: the loop pauses with a reason pointing at `workspace.setup`, and the attempt is given back.
// Pure: the verify's exit code and output, and what the start point's root holds (read by
// lib/repo/project-facts.ts), in; the command and why, or null, out.
import { type ProjectFacts, proposeSetup } from "./setup-proposal.ts";
import type { EnvironmentFault } from "./faults.ts";

export interface SetupMissingFacts {
  /** The verify's exit code (null: killed, or none). */
  exitCode: number | null;
  /** The end of the verify's output (its last kilobytes are enough: the shell's line is near the end). */
  output: string;
  /** loop.json sets `workspace.setup`. */
  hasSetup: boolean;
  /** The start point's root: what the setup would have run on. */
  project: ProjectFacts;
}

export interface SetupMissing {
  /** The command the shell could not find (or the Python module). */
  command: string;
  /** The line of the output that says so. */
  line: string;
  /** The files of the root that would have provided it. */
  from: string[];
  /** The setup `loop init` would propose for this root, or null. */
  proposal: string | null;
}

/** Programs a setup never installs: the toolchains themselves (missing, they are the machine's to provide). */
const TOOLCHAIN = new Set([
  "node",
  "nodejs",
  "npm",
  "npx",
  "pnpm",
  "yarn",
  "bun",
  "bunx",
  "corepack",
  "deno",
  "python",
  "python3",
  "pip",
  "pip3",
  "uv",
  "uvx",
  "poetry",
  "cargo",
  "rustc",
  "go",
  "make",
  "sh",
  "bash",
  "git",
]);

/** Programs of the Python test and lint tools, installed into a venv by a setup. */
const PYTHON_TOOLS = new Set(["pytest", "py.test", "tox", "nox", "coverage", "mypy", "ruff", "flake8", "black", "pylint", "hypothesis", "behave", "nose2"]);

/** Packages whose program is not named after them (node_modules/.bin). */
const NODE_BINS: Record<string, readonly string[]> = {
  typescript: ["tsc", "tsserver"],
  "@playwright/test": ["playwright"],
  "@biomejs/biome": ["biome"],
  "@vitest/browser": ["vitest"],
  "npm-run-all": ["run-p", "run-s", "npm-run-all"],
  "npm-run-all2": ["run-p", "run-s", "npm-run-all"],
  "webpack-cli": ["webpack"],
  "@angular/cli": ["ng"],
  "@nestjs/cli": ["nest"],
  "react-scripts": ["react-scripts"],
  "ts-node": ["ts-node", "ts-node-esm"],
  "@swc/cli": ["swc"],
  "@babel/cli": ["babel"],
  "@storybook/cli": ["storybook", "sb"],
  "@cucumber/cucumber": ["cucumber-js"],
};

const PYTHON_MARKERS = ["pyproject.toml", "setup.py", "setup.cfg", "uv.lock", "poetry.lock", "Pipfile", "pytest.ini", "tox.ini"];
const NODE_LOCKS = ["package-lock.json", "npm-shrinkwrap.json", "pnpm-lock.yaml", "yarn.lock", "bun.lock", "bun.lockb"];

/** What a shell says of a command it cannot find: dash, bash, busybox, zsh. */
const NOT_FOUND = [/^(?:[^\n:]*: )?(?:line \d+: |\d+: )?([^\s:'"]+): (?:command )?not found\s*$/, /^[^\n:]*:\s*\d*:? ?command not found: (\S+)\s*$/];
/** Python's `-m` on a module not installed: "No module named pytest". */
const NO_MODULE = /No module named '?([A-Za-z_][\w.]*)'?\s*$/;

/** A requirement's distribution name, normalized (PEP 503): "PyTest>=8" → "pytest". */
function distName(req: string): string | null {
  const m = /^\s*([A-Za-z0-9][A-Za-z0-9._-]*)/.exec(req);
  return m ? m[1]!.toLowerCase().replace(/[-_.]+/g, "-") : null;
}

/** The setup_missing verdict, or null: the verify failed for some other reason (or a setup is set). */
export function setupMissing(f: SetupMissingFacts): SetupMissing | null {
  if (f.hasSetup || f.exitCode === null || f.exitCode === 0) return null;
  const p = f.project;
  const lines = f.output.split("\n").map((l) => l.replace(/\r$/, ""));
  for (const line of lines.reverse()) {
    const found = f.exitCode === 127 ? notFound(line) : null;
    const module = found === null ? NO_MODULE.exec(line)?.[1] : undefined;
    if (found === null && module === undefined) continue;
    if (found !== null) {
      const from = nodeProvides(p, found) ?? pythonProvides(p, found);
      if (from) return { command: found, line: line.trim(), from, proposal: proposeSetup(p).setup };
    } else {
      const top = module!.split(".")[0]!;
      const from = pythonProvides(p, top);
      if (from) return { command: top, line: line.trim(), from, proposal: proposeSetup(p).setup };
    }
  }
  return null;
}

/** The command a shell line says it could not find; only a name or path of plain characters. */
function notFound(line: string): string | null {
  for (const re of NOT_FOUND) {
    const m = re.exec(line);
    if (m && /^[\w./@+-]+$/.test(m[1]!)) return m[1]!;
  }
  return null;
}

/** The verify's line as a fault quotes it: bounded (the verify wrote it; the caller has escaped it for a terminal). */
function quoted(line: string): string {
  return line.length > 200 ? `${line.slice(0, 200)}…` : line;
}

/** The environment fault of a setup_missing verdict: the loop's pause reason names the command, the files, and workspace.setup. */
export function setupMissingFault(o: SetupMissing & { item: string; attempt: number }): EnvironmentFault {
  return {
    kind: "setup_missing",
    message:
      `the verify of ${o.item} (attempt ${o.attempt}) could not find \`${o.command}\` (${JSON.stringify(quoted(o.line))}), which installing what ${o.from.join(", ")} declare${o.from.length === 1 ? "s" : ""} would provide; ` +
      `loop.json has no "workspace.setup", so nothing installs it in an item's checkout. The attempt was given back, not counted`,
    fix: `set "workspace.setup" in loop.json to the command that installs the project's dependencies${o.proposal ? ` (\`loop init\` proposes ${JSON.stringify(o.proposal)} for this repository)` : ""}, docs/loop-json.md#workspace; then \`loop ctl resume\`: the item runs again, setup first`,
  };
}

/** The files of a Node project whose install provides `command`, or null. */
function nodeProvides(p: ProjectFacts, command: string): string[] | null {
  if (!p.files.includes("package.json")) return null;
  const lock = NODE_LOCKS.filter((n) => p.files.includes(n));
  // A path into what an install makes: node_modules/.bin/jest.
  if (/^(\.\/)?node_modules\//.test(command)) return ["package.json", ...lock];
  if (command.includes("/") || TOOLCHAIN.has(command)) return null;
  const declared = p.packageJson?.declared ?? [];
  if (declared.includes(command) || declared.some((d) => NODE_BINS[d]?.includes(command))) return ["package.json", ...lock];
  if (p.nodeBins?.includes(command)) return ["package-lock.json"];
  return null;
}

/** The files of a Python project whose setup provides `command` (a program or a module), or null. */
function pythonProvides(p: ProjectFacts, command: string): string[] | null {
  const markers = [...PYTHON_MARKERS.filter((n) => p.files.includes(n)), ...Object.keys(p.requirements)];
  if (markers.length === 0) return null;
  // A path into the venv a setup makes: .venv/bin/python, venv/bin/pytest.
  if (/^(\.\/)?\.?venv\/bin\//.test(command)) return markers;
  if (command.includes("/") || TOOLCHAIN.has(command)) return null;
  const name = command.toLowerCase().replace(/[-_.]+/g, "-");
  if (PYTHON_TOOLS.has(command)) return markers;
  const py = p.pyproject;
  const declared = [
    ...(py?.dependencies ?? []),
    ...Object.values(py?.extras ?? {}).flat(),
    ...Object.values(py?.groups ?? {}).flat(),
    ...Object.values(p.requirements).flatMap((t) => t.split("\n")),
  ].map(distName);
  return declared.includes(name) ? markers : null;
}
