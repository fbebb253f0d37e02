// What `loop init` proposes as `workspace.setup` and `defaults.verify` (docs/cli/loop-init.md#what-init-guesses):
// a pure function of the files in the project's root and what they say, so every case is a row of
// plain data. Each guess names the file it came from; where nothing is guessed, that is said too.
// The verify uses what the setup makes (the checkout's `.venv`, its `node_modules`), never a
// program of the operator's shell: a venv is made in the checkout and is not relocatable.

/** What `loop init` read of pyproject.toml. */
export interface PyprojectFacts {
  /** A `[project]` table (PEP 621): something an installer can install. */
  project: boolean;
  /** A `[build-system]` table. */
  buildSystem: boolean;
  /** A `[tool.poetry]` table. */
  poetry: boolean;
  /** `[project].dependencies`, and poetry's dependencies and dev-dependencies (names). */
  dependencies: readonly string[];
  /** `[project.optional-dependencies]`: each extra's requirements. */
  extras: Record<string, readonly string[]>;
  /** `[dependency-groups]` (PEP 735): each group's requirements (an include-group entry as its group's name); poetry's groups too. */
  groups: Record<string, readonly string[]>;
}

/** What `loop init` found in the project root: the proposal's whole input. */
export interface ProjectFacts {
  /** The names in the root (files and folders; only those this module knows are looked at). */
  files: readonly string[];
  /** package.json, when it is JSON: its scripts, whether it declares dependencies (and their names), its `packageManager`. */
  packageJson: { scripts: Record<string, string>; dependencies: boolean; declared?: readonly string[]; packageManager: string | null } | null;
  /** yarn.lock's head says which yarn wrote it: true for berry (2+, `__metadata:`), false for classic, null without one. */
  yarnBerry: boolean | null;
  /** pyproject.toml parsed (null: absent or not TOML; `pyprojectInvalid` says which). */
  pyproject: PyprojectFacts | null;
  pyprojectInvalid?: boolean;
  /** The requirements files' contents, by name (requirements.txt, requirements-dev.txt, …). */
  requirements: Record<string, string>;
  /** Programs on PATH, among npm, pnpm, yarn, bun, uv, poetry, cargo, go, python3. */
  onPath: readonly string[];
  /** The names package-lock.json says node_modules/.bin holds (read only where asked). */
  nodeBins?: readonly string[];
}

/** One guess (or the absence of one), for the operator. */
export interface Guess {
  key: "setup" | "verify";
  /** The command guessed (null: nothing). */
  value: string | null;
  /** The file it was guessed from (null: none). */
  from: string | null;
  /** Why, in a sentence. */
  why: string;
}

interface SetupProposal {
  setup: string | null;
  verify: string | null;
  guesses: Guess[];
}

/** The extras and dependency groups a test run needs, by the names projects give them, in order of preference. */
const TEST_NAMES = ["test", "tests", "testing", "dev"] as const;
const VENV_PYTHON = ".venv/bin/python";
const PYTEST = `${VENV_PYTHON} -m pytest`;
const NODE_LOCKS = ["bun.lock", "bun.lockb", "pnpm-lock.yaml", "yarn.lock", "package-lock.json", "npm-shrinkwrap.json"] as const;
const REQUIREMENTS = /^(requirements([-_.][\w-]+)?|(dev|test)[-_]requirements|requirements\/(tests?|testing))\.txt$/;

type Manager = "npm" | "pnpm" | "yarn" | "bun";

/** The setup and verify `loop init` proposes for a project, and what each was guessed from. */
export function proposeSetup(f: ProjectFacts): SetupProposal {
  const has = (name: string) => f.files.includes(name);
  const onPath = (cmd: string) => f.onPath.includes(cmd);
  const missing = (cmd: string) => (onPath(cmd) ? "" : ` (${cmd} is not on PATH here: install it before \`loop run\`)`);
  const guesses: Guess[] = [];
  const setups: string[] = [];

  // Node: the lockfile says which package manager, and the install that reproduces it.
  const lock = NODE_LOCKS.find(has) ?? null;
  let manager: Manager | null = null;
  if (lock) {
    manager = lock.startsWith("bun") ? "bun" : lock.startsWith("pnpm") ? "pnpm" : lock === "yarn.lock" ? "yarn" : "npm";
    const cmd = LOCKED_INSTALL[manager](f.yarnBerry === true);
    setups.push(cmd);
    const which = manager === "yarn" ? (f.yarnBerry ? "yarn berry's (its `__metadata:`)" : "yarn classic's") : `${manager}'s`;
    guesses.push({
      key: "setup",
      value: cmd,
      from: lock,
      why: `${which} lockfile: installs exactly what it pins into the checkout's node_modules${missing(manager)}`,
    });
  } else if (f.packageJson?.dependencies) {
    manager = managerOf(f.packageJson.packageManager) ?? "npm";
    const cmd = OPEN_INSTALL[manager];
    setups.push(cmd);
    guesses.push({
      key: "setup",
      value: cmd,
      from: "package.json",
      why: `it declares dependencies and there is no lockfile: installs the newest versions it allows (commit a lockfile for the same ones every time)${missing(manager)}`,
    });
  } else if (f.packageJson) manager = managerOf(f.packageJson.packageManager) ?? "npm";

  if (f.pyprojectInvalid)
    guesses.push({ key: "setup", value: null, from: "pyproject.toml", why: "it is not valid TOML (or too large to read): nothing was read from it" });
  // Python: the lockfile's tool, else uv where it is on PATH, else a venv and pip.
  const python = pythonSetup(f, has, onPath, missing);
  if (python) {
    setups.push(python.setup);
    guesses.push({ key: "setup", value: python.setup, from: python.from, why: python.why });
  }

  // Rust and Go: what the lockfile pins, fetched into the toolchain's cache (the build itself happens in the verify).
  if (has("Cargo.lock")) {
    setups.push("cargo fetch --locked");
    guesses.push({ key: "setup", value: "cargo fetch --locked", from: "Cargo.lock", why: `downloads the crates it pins${missing("cargo")}` });
  } else if (has("Cargo.toml")) {
    setups.push("cargo fetch");
    guesses.push({
      key: "setup",
      value: "cargo fetch",
      from: "Cargo.toml",
      why: `no Cargo.lock: downloads the crates it allows (the lockfile it writes stays in the checkout, never committed)${missing("cargo")}`,
    });
  }
  if (has("go.sum")) {
    setups.push("go mod download");
    guesses.push({ key: "setup", value: "go mod download", from: "go.sum", why: `downloads the modules it pins${missing("go")}` });
  }
  if (setups.length === 0)
    guesses.push({
      key: "setup",
      value: null,
      from: null,
      why: "no lockfile or manifest that installs anything (package.json with dependencies, pyproject.toml, setup.py, requirements*.txt, Cargo.toml, go.sum): no workspace.setup proposed",
    });

  const verify = guessVerify(f, has, manager, python !== null);
  guesses.push(verify);
  return { setup: setups.length ? setups.join(" && ") : null, verify: verify.value, guesses };
}

const LOCKED_INSTALL: Record<Manager, (berry: boolean) => string> = {
  npm: () => "npm ci --prefer-offline --no-audit --no-fund",
  pnpm: () => "pnpm install --frozen-lockfile --prefer-offline",
  yarn: (berry) => (berry ? "yarn install --immutable" : "yarn install --frozen-lockfile --prefer-offline --non-interactive"),
  bun: () => "bun install --frozen-lockfile",
};

const OPEN_INSTALL: Record<Manager, string> = {
  npm: "npm install --prefer-offline --no-audit --no-fund",
  pnpm: "pnpm install --prefer-offline",
  yarn: "yarn install --non-interactive",
  bun: "bun install",
};

/** package.json's `packageManager` ("pnpm@9.1.0"), as a manager; null for none or another. */
function managerOf(pm: string | null): Manager | null {
  const name = pm?.split("@")[0];
  return name === "npm" || name === "pnpm" || name === "yarn" || name === "bun" ? name : null;
}

/** The first extra or group a test run needs, by its name. */
function testName(table: Record<string, readonly string[]> | undefined): string | null {
  return TEST_NAMES.find((n) => table && Object.hasOwn(table, n)) ?? null;
}

/** Whether requirements (PEP 508 strings, or a requirements file's lines) include pytest. */
function namesPytest(reqs: readonly string[]): boolean {
  return reqs.some((r) => /^\s*pytest(?![\w.-])/i.test(r));
}

function pythonSetup(
  f: ProjectFacts,
  has: (n: string) => boolean,
  onPath: (c: string) => boolean,
  missing: (c: string) => string,
): { setup: string; from: string; why: string } | null {
  const py = f.pyproject;
  const reqFiles = Object.keys(f.requirements)
    .filter((n) => REQUIREMENTS.test(n))
    .sort(requirementsOrder);
  const installable = Boolean(py?.project || py?.buildSystem) || has("setup.py");
  const isPython = installable || has("uv.lock") || has("poetry.lock") || reqFiles.length > 0 || has("pyproject.toml") || has("setup.cfg") || has("pytest.ini");
  if (!isPython) return null;
  const extra = testName(py?.extras);
  const group = testName(py?.groups);
  const chosen = [...(extra ? py!.extras[extra]! : []), ...(group ? py!.groups[group]! : [])];
  const named = [extra ? `its "${extra}" extra` : null, group ? `its "${group}" dependency group` : null].filter(Boolean).join(" and ");
  const withTests = named ? `, with ${named}` : "";
  const noPytest = (reqs: readonly string[]) =>
    namesPytest(reqs) ? "" : "; pytest is not in what it installs: declare it (a test extra or dependency group), or the verify cannot run it";
  if (has("uv.lock")) {
    const setup = ["uv sync --locked", extra ? `--extra ${extra}` : "", group && group !== "dev" ? `--group ${group}` : ""].filter(Boolean).join(" ");
    return {
      setup,
      from: "uv.lock",
      why: `uv's lockfile: makes the checkout's .venv with exactly what it pins${withTests}${noPytest([...chosen, ...allGroups(py, "dev")])}${missing("uv")}`,
    };
  }
  if (has("poetry.lock")) {
    const setup = ["POETRY_VIRTUALENVS_IN_PROJECT=true poetry install --no-interaction", extra ? `--extras ${extra}` : ""].filter(Boolean).join(" ");
    return {
      setup,
      from: "poetry.lock",
      why: `poetry's lockfile: makes the venv in the checkout (.venv) with what it pins, its non-optional groups included${missing("poetry")}`,
    };
  }
  if (py?.project && onPath("uv")) {
    const setup = ["uv sync", extra ? `--extra ${extra}` : "", group && group !== "dev" ? `--group ${group}` : ""].filter(Boolean).join(" ");
    return {
      setup,
      from: "pyproject.toml",
      why: `a [project] table, no lockfile, and uv is on PATH: makes the checkout's .venv with the project installed${withTests}${noPytest([...chosen, ...allGroups(py, "dev")])}`,
    };
  }
  // A venv and pip (or uv's pip where uv is on PATH): the project editable, with its tests' extra or group, and its requirements files.
  const args: string[] = [];
  if (installable) args.push(extra ? `-e '.[${extra}]'` : "-e .");
  if (group) args.push(`--group ${group}`);
  for (const r of reqFiles) args.push(`-r ${r}`);
  const reqs = [...chosen, ...reqFiles.flatMap((r) => f.requirements[r]!.split("\n"))];
  if (!namesPytest(reqs)) args.push("pytest");
  const uv = onPath("uv");
  const setup = uv
    ? `uv venv .venv && uv pip install --python ${VENV_PYTHON} ${args.join(" ")}`
    : `python3 -m venv .venv && ${VENV_PYTHON} -m pip install ${args.join(" ")}`;
  const from = installable
    ? py?.project || py?.buildSystem
      ? "pyproject.toml"
      : "setup.py"
    : (reqFiles[0] ?? (has("pyproject.toml") ? "pyproject.toml" : has("setup.cfg") ? "setup.cfg" : "pytest.ini"));
  const what = [
    installable ? `the project, editable${withTests}` : null,
    reqFiles.length ? reqFiles.join(", ") : null,
    namesPytest(reqs) ? null : "pytest (declared nowhere it looked)",
  ]
    .filter(Boolean)
    .join("; ");
  const pipGroup = group && !uv ? " (pip 25.1 or later reads --group)" : "";
  return {
    setup,
    from,
    why: `a Python project without a lockfile: a venv in the checkout (.venv) by ${uv ? "uv" : "python3 -m venv and pip"}, holding ${what}${pipGroup}${uv ? "" : missing("python3")}`,
  };
}

/** requirements.txt first, then the others by name. */
function requirementsOrder(a: string, b: string): number {
  return a === "requirements.txt" ? -1 : b === "requirements.txt" ? 1 : a.localeCompare(b);
}

/** A group's requirements (uv installs `dev` by default). */
function allGroups(py: PyprojectFacts | null, name: string): readonly string[] {
  return py?.groups[name] ?? [];
}

function guessVerify(f: ProjectFacts, has: (n: string) => boolean, manager: Manager | null, python: boolean): Guess {
  const scripts = f.packageJson?.scripts ?? {};
  const bun = ["bunfig.toml", "bun.lockb", "bun.lock"].find(has);
  if (bun && scripts.test) return { key: "verify", value: "bun run test", from: "package.json", why: `its "test" script, run by bun (${bun})` };
  if (bun) return { key: "verify", value: "bun test", from: bun, why: "bun's test runner" };
  if (scripts.test) {
    const value = `${manager ?? "npm"} test`;
    return { key: "verify", value, from: "package.json", why: `its "test" script, run by ${manager ?? "npm"} (node_modules/.bin is on its PATH)` };
  }
  if (has("Cargo.toml")) return { key: "verify", value: "cargo test", from: "Cargo.toml", why: "cargo's tests" };
  if (has("go.mod")) return { key: "verify", value: "go test ./...", from: "go.mod", why: "go's tests, every package" };
  if (python) {
    const from = ["pytest.ini", "pyproject.toml", "setup.py", "setup.cfg"].find(has) ?? "requirements.txt";
    return {
      key: "verify",
      value: PYTEST,
      from,
      why: "pytest, with the checkout's .venv that the setup makes (never the python3 of the shell that runs loop)",
    };
  }
  if (has("Makefile")) return { key: "verify", value: "make test", from: "Makefile", why: "its test target" };
  return {
    key: "verify",
    value: null,
    from: null,
    why: 'no test command found (no package.json "test" script, Cargo.toml, go.mod, Python project or Makefile): the placeholder "exit 1" is written; set yours',
  };
}
