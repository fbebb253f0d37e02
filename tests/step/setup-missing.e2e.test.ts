// setup_missing on a real `loop run` (docs/cli/loop-run.md#environment-faults): a Node project whose
// verify, `npm test`, runs `jest`, with no workspace.setup: npm's shell cannot find jest (exit 127).
// That is the environment's fault: the loop pauses naming workspace.setup, the attempt is given back
// (maxAttempts 1, and the item is not failed); with a setup added and `loop ctl resume`, it passes.
import { describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { demoDefinition, scenario } from "../helpers/project.ts";

const FILES: Record<string, string> = {
  ".gitignore": ".loop/\nnode_modules/\n",
  "package.json":
    JSON.stringify(
      { name: "app", version: "1.0.0", private: true, scripts: { test: "jest && test -s a.txt" }, devDependencies: { jest: "^29.0.0" } },
      null,
      2,
    ) + "\n",
  "package-lock.json":
    JSON.stringify(
      {
        name: "app",
        version: "1.0.0",
        lockfileVersion: 3,
        requires: true,
        packages: { "": { name: "app", version: "1.0.0", devDependencies: { jest: "^29.0.0" } } },
      },
      null,
      2,
    ) + "\n",
};

/** A setup that makes what `npm ci` would: a node_modules/.bin/jest (here a stand-in that passes; no registry in tests). */
const SETUP = "mkdir -p node_modules/.bin && printf '#!/bin/sh\\nexit 0\\n' > node_modules/.bin/jest && chmod +x node_modules/.bin/jest";

describe("setup_missing", () => {
  test(
    "jest not found, package.json and its lockfile, no workspace.setup: the loop pauses setup_missing and the attempt is not spent; with a setup and `loop ctl resume` the item passes",
    () =>
      scenario(
        demoDefinition([{ id: "a", prompt: "@demo write a.txt a", verify: "npm test" }], { defaults: { maxAttempts: 1 } }),
        { files: FILES },
        async (p) => {
          const r = await p.runUntil((x) => x.action === "paused", { codes: [0, 1], what: "paused" });
          const fault = p.eventsOf("environment_fault")[0]!;
          expect(fault.item).toBe("a");
          expect(fault.payload).toMatchObject({ kind: "setup_missing", attempt: null });
          expect(String(fault.payload.reason)).toContain("could not find `jest`");
          expect(String(fault.payload.reason)).toContain("package.json, package-lock.json");
          expect(String(fault.payload.fix)).toContain('"workspace.setup"');
          expect(String(fault.payload.fix)).toContain("npm ci --prefer-offline --no-audit --no-fund");
          expect(r.reason).toContain("environment fault verifying a:");
          // The verdict is recorded with its code; the attempt is given back, uncounted: not failed with maxAttempts 1.
          const it = p.projection().items.a!;
          expect(it.attempts[0]!.verify).toMatchObject({ code: "setup_missing", passed: false, exitCode: 127 });
          expect(it).toMatchObject({ status: "pending", failures: 0 });
          expect(it.attempts[0]!.outcome).toStartWith("requeued: environment fault (setup_missing)");
          expect(p.projection().loop).toMatchObject({ state: "paused", fault: { kind: "setup_missing" } });
          // Paused: a later step launches nothing.
          expect((await p.run([1])).action).toBe("paused");
          const st = JSON.parse((await p.loop(["status", "--json"])).stdout);
          expect(st.loop.cause).toMatchObject({ kind: "fault", fault: "setup_missing", item: "a" });
          expect(st.loop.cause.fix).toContain('"workspace.setup"');

          const def = JSON.parse(readFileSync(join(p.root, "loop.json"), "utf8"));
          def.workspace = { ...(def.workspace ?? {}), setup: SETUP };
          writeFileSync(join(p.root, "loop.json"), JSON.stringify(def));
          await p.ctl(["resume"]);
          expect((await p.runToDrain()).reason, p.history()).toBe("Succeeded");
          const after = p.projection().items.a!;
          expect(after.attempts.map((x) => x.outcome)).toEqual([it.attempts[0]!.outcome, "passed"]);
          expect(after.failures).toBe(0);
        },
      ),
    240_000,
  );

  test(
    "a Python project whose verify runs the venv a setup would make, with no setup: setup_missing, nothing spent; with a setup set (one that makes no venv), the same failure is the item's, charged",
    () =>
      scenario(
        demoDefinition([{ id: "p", prompt: "@demo write a.txt a", verify: ".venv/bin/python -m pytest" }], { defaults: { maxAttempts: 1 } }),
        {
          files: {
            "pyproject.toml": '[project]\nname = "pkg"\nversion = "0.1"\n[project.optional-dependencies]\ntest = ["pytest"]\n',
            "tests/test_a.py": "def test_a():\n    pass\n",
          },
        },
        async (p) => {
          await p.runUntil((x) => x.action === "paused", { codes: [0, 1], what: "paused" });
          const fault = p.eventsOf("environment_fault")[0]!;
          expect(fault.payload).toMatchObject({ kind: "setup_missing", attempt: null });
          expect(String(fault.payload.reason)).toContain("could not find `.venv/bin/python`");
          expect(String(fault.payload.fix)).toContain(".venv/bin/python -m pip install -e '.[test]'");
          expect(p.projection().items.p).toMatchObject({ status: "pending", failures: 0 });
          // A setup that does not make the venv: the verify's failure is the item's, charged as any.
          const def = JSON.parse(readFileSync(join(p.root, "loop.json"), "utf8"));
          def.workspace = { ...(def.workspace ?? {}), setup: "true" };
          writeFileSync(join(p.root, "loop.json"), JSON.stringify(def));
          await p.ctl(["resume"]);
          expect((await p.runToDrain({ codes: [0, 1] })).reason, p.history()).toBe("Failed");
          const it = p.projection().items.p!;
          expect(it.status).toBe("failed");
          expect(it.attempts.at(-1)!.verify).toMatchObject({ code: "exit_nonzero", exitCode: 127 });
        },
      ),
    240_000,
  );
});
