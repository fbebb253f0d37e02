// The item's environment is its own (lib/definition/item-environment.ts), with plain data: the
// operator's active environments across the ecosystems dropped, paths into the main checkout or
// another worktree dropped or taken off PATH, the checkout's own tools first, idempotent.
import { describe, expect, test } from "bun:test";
import { type CheckoutPlace, itemEnvironment } from "../../lib/definition/item-environment.ts";
import { childEnvironment } from "../../lib/definition/child-environment.ts";

const MAIN = "/home/op/proj";
const WT = "/home/op/.local/state/loop/proj-abc";
const place = (o: Partial<CheckoutPlace> = {}): CheckoutPlace => ({ checkout: `${WT}/fix-a`, foreign: [MAIN, WT], venv: null, bins: [], ...o });

describe("itemEnvironment", () => {
  test("the operator's active virtualenv: VIRTUAL_ENV and its bin on PATH go, wherever it is", () => {
    const r = itemEnvironment(
      { VIRTUAL_ENV: "/home/op/.venvs/proj", VIRTUAL_ENV_PROMPT: "(proj)", PATH: "/home/op/.venvs/proj/bin:/usr/bin:/bin", HOME: "/home/op" },
      place(),
    );
    expect(r.env).toEqual({ PATH: "/usr/bin:/bin", HOME: "/home/op" });
    expect(r.dropped).toEqual([
      { name: "VIRTUAL_ENV", why: "activated_environment" },
      { name: "VIRTUAL_ENV_PROMPT", why: "activated_environment" },
    ]);
    expect(r.removed).toEqual(["PATH: /home/op/.venvs/proj/bin"]);
  });

  test("the rest of the class: conda, PYTHONHOME, uv's project environment, pipenv's and poetry's shells, an npm run's variables", () => {
    const parent = {
      CONDA_PREFIX: "/opt/conda/envs/dev",
      CONDA_PREFIX_1: "/opt/conda",
      CONDA_DEFAULT_ENV: "dev",
      CONDA_SHLVL: "2",
      CONDA_PROMPT_MODIFIER: "(dev) ",
      PYTHONHOME: "/opt/py",
      UV_PROJECT_ENVIRONMENT: "/home/op/.venvs/proj",
      PIPENV_ACTIVE: "1",
      POETRY_ACTIVE: "1",
      npm_lifecycle_event: "loop",
      npm_lifecycle_script: "loop run",
      npm_package_name: "proj",
      npm_package_json: `${MAIN}/package.json`,
      npm_config_local_prefix: MAIN,
      npm_command: "run-script",
      INIT_CWD: MAIN,
      npm_config_registry: "https://registry.example/",
      PATH: `/opt/conda/envs/dev/bin:/opt/conda/bin:${MAIN}/node_modules/.bin:/usr/bin`,
    };
    const r = itemEnvironment(parent, place());
    expect(r.env).toEqual({ npm_config_registry: "https://registry.example/", PATH: "/usr/bin" });
    expect(Object.fromEntries(r.dropped.map((d) => [d.name, d.why]))).toEqual({
      CONDA_DEFAULT_ENV: "activated_environment",
      CONDA_PREFIX: "activated_environment",
      CONDA_PREFIX_1: "activated_environment",
      CONDA_PROMPT_MODIFIER: "activated_environment",
      CONDA_SHLVL: "activated_environment",
      INIT_CWD: "npm_run",
      PIPENV_ACTIVE: "activated_environment",
      POETRY_ACTIVE: "activated_environment",
      PYTHONHOME: "activated_environment",
      UV_PROJECT_ENVIRONMENT: "activated_environment",
      npm_command: "npm_run",
      npm_config_local_prefix: "npm_run",
      npm_lifecycle_event: "npm_run",
      npm_lifecycle_script: "npm_run",
      npm_package_json: "npm_run",
      npm_package_name: "npm_run",
    });
    expect(r.removed).toEqual(["PATH: /opt/conda/envs/dev/bin", "PATH: /opt/conda/bin", `PATH: ${MAIN}/node_modules/.bin`]);
  });

  test("any variable naming a path in the main checkout or another worktree goes (GOPATH, GOFLAGS' -modfile, CARGO_TARGET_DIR, BUNDLE_GEMFILE, GEM_HOME); path lists lose those entries; the same kinds pointing elsewhere stay", () => {
    const parent = {
      GOPATH: `${MAIN}/.go`,
      GOFLAGS: `-mod=mod -modfile=${MAIN}/go.alt.mod`,
      CARGO_TARGET_DIR: `${WT}/other/target`,
      BUNDLE_GEMFILE: `${MAIN}/Gemfile`,
      GEM_HOME: `${MAIN}/vendor/gems`,
      PYTHONPATH: `${MAIN}/src:/opt/site`,
      NODE_PATH: `${MAIN}/node_modules`,
      GOCACHE: "/home/op/.cache/go-build",
      RUSTUP_TOOLCHAIN: "stable",
      CARGO_HOME: "/home/op/.cargo",
      OWN_FILE: `${WT}/fix-a/config.toml`,
      LOOP_WORKTREES: WT,
      PATH: `${MAIN}/bin:${WT}/other/node_modules/.bin:/usr/bin`,
    };
    const r = itemEnvironment(parent, place());
    expect(r.env).toEqual({
      GOCACHE: "/home/op/.cache/go-build",
      RUSTUP_TOOLCHAIN: "stable",
      CARGO_HOME: "/home/op/.cargo",
      OWN_FILE: `${WT}/fix-a/config.toml`,
      LOOP_WORKTREES: WT,
      PYTHONPATH: "/opt/site",
      PATH: "/usr/bin",
    });
    expect(r.dropped.map((d) => d.name)).toEqual(["BUNDLE_GEMFILE", "CARGO_TARGET_DIR", "GEM_HOME", "GOFLAGS", "GOPATH", "NODE_PATH"]);
    expect(r.dropped.every((d) => d.why === "names_another_checkout")).toBe(true);
    expect(r.removed).toEqual([`NODE_PATH: ${MAIN}/node_modules`, `PATH: ${MAIN}/bin`, `PATH: ${WT}/other/node_modules/.bin`, `PYTHONPATH: ${MAIN}/src`]);
  });

  test("a checkout inside the main checkout's folder is its own, not another's", () => {
    const r = itemEnvironment(
      { X: `${MAIN}/.wt/a/x`, Y: `${MAIN}/src`, PATH: "/usr/bin" },
      { checkout: `${MAIN}/.wt/a`, foreign: [MAIN], venv: null, bins: [] },
    );
    expect(r.env).toEqual({ X: `${MAIN}/.wt/a/x`, PATH: "/usr/bin" });
    // A prefix of a name is no folder: /home/op/proj2 is not in /home/op/proj.
    expect(itemEnvironment({ Z: "/home/op/proj2/x" }, place()).env).toEqual({ Z: "/home/op/proj2/x" });
  });

  test("what setup made comes first: the checkout's venv (VIRTUAL_ENV naming it) and node_modules/.bin, once, applied twice the same", () => {
    const p = place({ venv: ".venv", bins: [".venv/bin", "node_modules/.bin"] });
    const parent = { VIRTUAL_ENV: "/home/op/.venvs/proj", PATH: `/home/op/.venvs/proj/bin:/usr/bin:${WT}/fix-a/.venv/bin` };
    const once = itemEnvironment(parent, p);
    expect(once.env).toEqual({ PATH: `${WT}/fix-a/.venv/bin:${WT}/fix-a/node_modules/.bin:/usr/bin`, VIRTUAL_ENV: `${WT}/fix-a/.venv` });
    expect(once.dropped).toEqual([{ name: "VIRTUAL_ENV", why: "activated_environment" }]);
    const twice = itemEnvironment(once.env, p);
    expect(twice.env).toEqual(once.env);
    expect(twice.dropped).toEqual([]);
    expect(twice.removed).toEqual([]);
  });

  test("childEnvironment applies it after the policy, and PWD names the checkout", () => {
    const env = childEnvironment(
      { VIRTUAL_ENV: "/v", PATH: "/v/bin:/usr/bin", GITHUB_TOKEN: "t", PWD: MAIN, OLDPWD: "/x" },
      { policy: "inherit", keep: [], drop: ["GITHUB_TOKEN"], place: place() },
      { cwd: `${WT}/fix-a` },
    );
    expect(env).toEqual({ PATH: "/usr/bin", PWD: `${WT}/fix-a` });
  });
});
