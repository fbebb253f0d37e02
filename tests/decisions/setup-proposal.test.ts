// What `loop init` proposes as workspace.setup and verify (lib/decisions/setup-proposal.ts): a row
// of plain data per ecosystem and case, each guess naming its file, and nothing guessed said so.
import { describe, expect, test } from "bun:test";
import { type ProjectFacts, proposeSetup, type PyprojectFacts } from "../../lib/decisions/setup-proposal.ts";

const pkg = (scripts: Record<string, string> = { test: "jest" }, o: { dependencies?: boolean; packageManager?: string } = {}) => ({
  scripts,
  dependencies: o.dependencies ?? true,
  packageManager: o.packageManager ?? null,
});
const py = (o: Partial<PyprojectFacts> = {}): PyprojectFacts => ({
  project: true,
  buildSystem: true,
  poetry: false,
  dependencies: [],
  extras: {},
  groups: {},
  ...o,
});
const facts = (o: Partial<ProjectFacts>): ProjectFacts => ({
  files: [],
  packageJson: null,
  yarnBerry: null,
  pyproject: null,
  requirements: {},
  onPath: ["npm", "pnpm", "yarn", "bun", "uv", "poetry", "cargo", "go", "python3"],
  ...o,
});
const noUv = ["npm", "python3", "cargo", "go"];

describe("proposeSetup", () => {
  const cases: { name: string; f: ProjectFacts; setup: string | null; verify: string | null; from: (string | null)[] }[] = [
    {
      name: "npm: package-lock.json",
      f: facts({ files: ["package.json", "package-lock.json"], packageJson: pkg() }),
      setup: "npm ci --prefer-offline --no-audit --no-fund",
      verify: "npm test",
      from: ["package-lock.json", "package.json"],
    },
    {
      name: "npm: a shrinkwrap",
      f: facts({ files: ["package.json", "npm-shrinkwrap.json"], packageJson: pkg() }),
      setup: "npm ci --prefer-offline --no-audit --no-fund",
      verify: "npm test",
      from: ["npm-shrinkwrap.json", "package.json"],
    },
    {
      name: "pnpm",
      f: facts({ files: ["package.json", "pnpm-lock.yaml"], packageJson: pkg() }),
      setup: "pnpm install --frozen-lockfile --prefer-offline",
      verify: "pnpm test",
      from: ["pnpm-lock.yaml", "package.json"],
    },
    {
      name: "yarn classic",
      f: facts({ files: ["package.json", "yarn.lock"], packageJson: pkg(), yarnBerry: false }),
      setup: "yarn install --frozen-lockfile --prefer-offline --non-interactive",
      verify: "yarn test",
      from: ["yarn.lock", "package.json"],
    },
    {
      name: "yarn berry",
      f: facts({ files: ["package.json", "yarn.lock"], packageJson: pkg(), yarnBerry: true }),
      setup: "yarn install --immutable",
      verify: "yarn test",
      from: ["yarn.lock", "package.json"],
    },
    {
      name: "bun.lock with a test script",
      f: facts({ files: ["package.json", "bun.lock"], packageJson: pkg() }),
      setup: "bun install --frozen-lockfile",
      verify: "bun run test",
      from: ["bun.lock", "package.json"],
    },
    {
      name: "bun.lockb without a test script",
      f: facts({ files: ["package.json", "bun.lockb"], packageJson: pkg({}) }),
      setup: "bun install --frozen-lockfile",
      verify: "bun test",
      from: ["bun.lockb", "bun.lockb"],
    },
    {
      name: "package.json with dependencies, no lockfile: npm install",
      f: facts({ files: ["package.json"], packageJson: pkg() }),
      setup: "npm install --prefer-offline --no-audit --no-fund",
      verify: "npm test",
      from: ["package.json", "package.json"],
    },
    {
      name: "no lockfile, packageManager pnpm",
      f: facts({ files: ["package.json"], packageJson: pkg(undefined, { packageManager: "pnpm@9.1.0" }) }),
      setup: "pnpm install --prefer-offline",
      verify: "pnpm test",
      from: ["package.json", "package.json"],
    },
    {
      name: "package.json without dependencies: nothing to install",
      f: facts({ files: ["package.json"], packageJson: pkg({ test: "node t.js" }, { dependencies: false }) }),
      setup: null,
      verify: "npm test",
      from: [null, "package.json"],
    },
    {
      name: "uv.lock, a test dependency group",
      f: facts({ files: ["pyproject.toml", "uv.lock"], pyproject: py({ groups: { test: ["pytest>=8"] } }) }),
      setup: "uv sync --locked --group test",
      verify: ".venv/bin/python -m pytest",
      from: ["uv.lock", "pyproject.toml"],
    },
    {
      name: "uv.lock, the dev group (uv's default) and a tests extra",
      f: facts({ files: ["pyproject.toml", "uv.lock"], pyproject: py({ groups: { dev: ["pytest"] }, extras: { tests: ["hypothesis"] } }) }),
      setup: "uv sync --locked --extra tests",
      verify: ".venv/bin/python -m pytest",
      from: ["uv.lock", "pyproject.toml"],
    },
    {
      name: "poetry.lock: the venv in the checkout",
      f: facts({ files: ["pyproject.toml", "poetry.lock"], pyproject: py({ project: false, poetry: true }) }),
      setup: "POETRY_VIRTUALENVS_IN_PROJECT=true poetry install --no-interaction",
      verify: ".venv/bin/python -m pytest",
      from: ["poetry.lock", "pyproject.toml"],
    },
    {
      name: "pyproject [project] and uv on PATH, no lockfile",
      f: facts({ files: ["pyproject.toml"], pyproject: py({ extras: { test: ["pytest"] } }) }),
      setup: "uv sync --extra test",
      verify: ".venv/bin/python -m pytest",
      from: ["pyproject.toml", "pyproject.toml"],
    },
    {
      name: "pyproject, no uv: a venv, the test extra, editable",
      f: facts({ files: ["pyproject.toml"], pyproject: py({ extras: { test: ["pytest", "coverage"] } }), onPath: noUv }),
      setup: "python3 -m venv .venv && .venv/bin/python -m pip install -e '.[test]'",
      verify: ".venv/bin/python -m pytest",
      from: ["pyproject.toml", "pyproject.toml"],
    },
    {
      name: "pyproject, no uv, a dependency group",
      f: facts({ files: ["pyproject.toml"], pyproject: py({ groups: { dev: ["pytest"] } }), onPath: noUv }),
      setup: "python3 -m venv .venv && .venv/bin/python -m pip install -e . --group dev",
      verify: ".venv/bin/python -m pytest",
      from: ["pyproject.toml", "pyproject.toml"],
    },
    {
      name: "pyproject that declares no pytest: pytest added",
      f: facts({ files: ["pyproject.toml"], pyproject: py(), onPath: noUv }),
      setup: "python3 -m venv .venv && .venv/bin/python -m pip install -e . pytest",
      verify: ".venv/bin/python -m pytest",
      from: ["pyproject.toml", "pyproject.toml"],
    },
    {
      name: "setup.py and requirements files",
      f: facts({
        files: ["setup.py", "requirements.txt", "requirements-dev.txt"],
        requirements: { "requirements-dev.txt": "pytest==8.0\n", "requirements.txt": "click\n" },
        onPath: noUv,
      }),
      setup: "python3 -m venv .venv && .venv/bin/python -m pip install -e . -r requirements.txt -r requirements-dev.txt",
      verify: ".venv/bin/python -m pytest",
      from: ["setup.py", "setup.py"],
    },
    {
      name: "a requirements/ folder: its tests file, not its docs or dev files",
      f: facts({
        files: ["pyproject.toml", "requirements", "requirements/tests.txt", "requirements/docs.txt", "requirements/dev.txt"],
        pyproject: py(),
        requirements: { "requirements/tests.txt": "pytest==8.3.5\n", "requirements/docs.txt": "sphinx\n", "requirements/dev.txt": "tox\n" },
        onPath: noUv,
      }),
      setup: "python3 -m venv .venv && .venv/bin/python -m pip install -e . -r requirements/tests.txt",
      verify: ".venv/bin/python -m pytest",
      from: ["pyproject.toml", "pyproject.toml"],
    },
    {
      name: "requirements.txt alone, uv on PATH: uv's venv and pip",
      f: facts({ files: ["requirements.txt"], requirements: { "requirements.txt": "requests\n" } }),
      setup: "uv venv .venv && uv pip install --python .venv/bin/python -r requirements.txt pytest",
      verify: ".venv/bin/python -m pytest",
      from: ["requirements.txt", "requirements.txt"],
    },
    {
      name: "cargo: Cargo.lock",
      f: facts({ files: ["Cargo.toml", "Cargo.lock"] }),
      setup: "cargo fetch --locked",
      verify: "cargo test",
      from: ["Cargo.lock", "Cargo.toml"],
    },
    { name: "go: go.sum", f: facts({ files: ["go.mod", "go.sum"] }), setup: "go mod download", verify: "go test ./...", from: ["go.sum", "go.mod"] },
    { name: "go.mod without go.sum: nothing to download", f: facts({ files: ["go.mod"] }), setup: null, verify: "go test ./...", from: [null, "go.mod"] },
    { name: "a Makefile only", f: facts({ files: ["Makefile"] }), setup: null, verify: "make test", from: [null, "Makefile"] },
    { name: "nothing at all: both said", f: facts({ files: ["README.md"] }), setup: null, verify: null, from: [null, null] },
    {
      name: "node and python together: both setups, node's verify",
      f: facts({
        files: ["package.json", "package-lock.json", "requirements.txt"],
        packageJson: pkg(),
        requirements: { "requirements.txt": "pytest\n" },
        onPath: noUv,
      }),
      setup: "npm ci --prefer-offline --no-audit --no-fund && python3 -m venv .venv && .venv/bin/python -m pip install -r requirements.txt",
      verify: "npm test",
      from: ["package-lock.json", "requirements.txt", "package.json"],
    },
  ];
  for (const c of cases)
    test(c.name, () => {
      const p = proposeSetup(c.f);
      expect({ setup: p.setup, verify: p.verify }).toEqual({ setup: c.setup, verify: c.verify });
      expect(p.guesses.map((g) => g.from)).toEqual(c.from);
      // Every guess says why, and a guess of nothing says so.
      for (const g of p.guesses) expect(g.why.length).toBeGreaterThan(10);
      if (c.setup === null) expect(p.guesses.find((g) => g.key === "setup")!.why).toContain("no workspace.setup proposed");
    });

  test("a tool the setup needs and PATH lacks is named", () => {
    const p = proposeSetup(facts({ files: ["package.json", "pnpm-lock.yaml"], packageJson: pkg(), onPath: ["npm"] }));
    expect(p.guesses[0]!.why).toContain("pnpm is not on PATH here");
  });

  test("a pyproject.toml that is not TOML is said", () => {
    const p = proposeSetup(facts({ files: ["pyproject.toml"], pyprojectInvalid: true, onPath: noUv }));
    expect(p.guesses[0]).toMatchObject({ key: "setup", value: null, from: "pyproject.toml" });
    expect(p.setup).toBe("python3 -m venv .venv && .venv/bin/python -m pip install pytest");
  });

  test("uv.lock whose groups name no pytest: the proposal says the verify cannot run it", () => {
    const p = proposeSetup(facts({ files: ["pyproject.toml", "uv.lock"], pyproject: py({ groups: { lint: ["ruff"] } }) }));
    expect(p.setup).toBe("uv sync --locked");
    expect(p.guesses[0]!.why).toContain("pytest is not in what it installs");
  });
});
