// Setup once in a Python repository (docs/operations.md#setup-once-per-lockfile): a virtualenv names
// its checkout's path (its scripts' `#!` lines, `activate`, an editable install's `.pth`), so it cannot
// simply move to another item's checkout. Loop finds those files once, right after setup ran, and
// writes them again naming the new checkout when the products move: with the spare checkout renamed
// to the next item's place, or with the kept copy copied there. Real venvs of the machine's python3,
// made offline (`--without-pip`; the editable install is the `.pth` `pip install -e` leaves), and a
// console script as pip writes one. Each verify checks it runs its own checkout's code.
import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { demoDefinition, type Project, scenario } from "../helpers/project.ts";
import { countRun, reusedFrom, setupLog, setupRuns } from "../helpers/setup-once.ts";

const PY = existsSync("/usr/bin/python3") ? "/usr/bin/python3" : (Bun.which("python3") ?? "python3");

const FILES = {
  "pyproject.toml": '[project]\nname = "calc"\nversion = "0.1.0"\n',
  "src/calc/__init__.py": "def add(a, b):\n    return a + b\n",
};

/** A venv in the checkout, an editable install of its src, and a console script naming the venv's python. */
const setupOf = (p: Project) =>
  [
    countRun(p),
    `${PY} -m venv --without-pip .venv`,
    `site=$(.venv/bin/python3 -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")`,
    `echo "$PWD/src" > "$site/_editable_calc.pth"`,
    `printf '#!%s/.venv/bin/python3\\nimport calc\\nprint(calc.__file__)\\n' "$PWD" > .venv/bin/calc-where`,
    "chmod +x .venv/bin/calc-where",
  ].join(" && ");

/** The console script runs (its interpreter is this checkout's), imports this checkout's calc, and activate names this venv. */
const OWN =
  'test "$(realpath "$(.venv/bin/calc-where)")" = "$(realpath src/calc/__init__.py)" && ' +
  '. .venv/bin/activate && test "$(realpath "$VIRTUAL_ENV")" = "$(realpath .venv)"';

const item = (id: string, verifyExtra = "") => ({
  id,
  prompt: `@demo write ${id}.txt ${id}\n@demo commit ${id}`,
  verify: `test -s ${id}.txt && ${OWN}${verifyExtra ? ` && ${verifyExtra}` : ""}`,
});

const definition =
  (items: unknown[]) =>
  (p: Project): Record<string, unknown> =>
    demoDefinition(items, { defaults: { landing: "merge", maxAttempts: 1 }, workspace: { setup: setupOf(p) } });

describe("setup once, a virtualenv", () => {
  test.concurrent(
    "the venv moves with the spare checkout: setup runs once for three items, each running its own checkout's code",
    () =>
      scenario(definition([item("one"), item("two"), item("three")]), { files: FILES }, async (p) => {
        expect((await p.runToDrain()).reason, p.history()).toBe("Succeeded");
        expect(setupRuns(p)).toBe(1);
        expect([reusedFrom(p, "one"), reusedFrom(p, "two"), reusedFrom(p, "three")]).toEqual([null, "one", "two"]);
        expect(setupLog(p, "three")).toContain("the one two passed in");
      }),
    180_000,
  );

  test.concurrent(
    "the venv made by the verify on the base moves to the first item's checkout",
    () =>
      scenario(
        (p) => ({ ...definition([item("one"), item("two")])(p), workspace: { setup: setupOf(p), baseVerify: true } }),
        { files: FILES },
        async (p) => {
          expect((await p.runToDrain()).reason, p.history()).toBe("Succeeded");
          expect(setupRuns(p)).toBe(1);
          expect([reusedFrom(p, "one"), reusedFrom(p, "two")]).toEqual(["_base", "one"]);
        },
      ),
    180_000,
  );

  test.concurrent(
    "the venv moves with the kept copy too: a spare a verify changed is not taken, and the copy of setup's venv names the new checkout",
    () =>
      scenario(
        // One's verify (repository code) rewrites the venv's console script: its checkout is not handed on.
        definition([item("one", "echo '# changed' >> .venv/bin/calc-where"), item("two")]),
        { files: FILES },
        async (p) => {
          expect((await p.runToDrain()).reason, p.history()).toBe("Succeeded");
          expect(setupRuns(p)).toBe(1);
          expect(reusedFrom(p, "two")).toBe("one");
          expect(setupLog(p, "two")).toContain("what it made for one");
        },
      ),
    180_000,
  );
});
