// `loop status` tells the truth where the log alone cannot (docs/cli/loop-status.md): a loop.json
// every step refuses, a loop that needs a person (`--check`, in step with `loop run`'s exit), and a
// step in progress, whose state.json may be a step behind the log.
import { describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Store } from "../../lib/log/store.ts";
import { demoDefinition, scenario } from "../helpers/project.ts";

const status = async (p: { loop: (a: string[]) => Promise<{ code: number; stdout: string; stderr: string }>; root: string }, ...flags: string[]) => {
  const r = await p.loop(["status", "--json", "--root", p.root, ...flags]);
  return { code: r.code, doc: JSON.parse(r.stdout || "null"), stderr: r.stderr };
};

describe("loop.json on disk (docs/cli/loop-status.md#loopjson-on-disk)", () => {
  test("a typo'd key: every `loop run` exits 2, and status says so as attention (kind definition) — exit 0 plain, 1 with --check; a valid change is said, and needs nobody", async () => {
    const def = demoDefinition([{ id: "a", prompt: "A." }]);
    await scenario(def, {}, async (p) => {
      await p.runToDrain();
      const quiet = await status(p, "--check");
      expect({ code: quiet.code, definition: quiet.doc.loop.definition, attention: quiet.doc.attention }).toEqual({
        code: 0,
        definition: { state: "imported", changes: [], problems: [] },
        attention: [],
      });

      const broken = JSON.parse(readFileSync(join(p.root, "loop.json"), "utf8"));
      broken.defaults.verfy = broken.defaults.verify;
      delete broken.defaults.verify;
      writeFileSync(join(p.root, "loop.json"), JSON.stringify(broken, null, 2));
      const run = await p.loop(["run", "--json", "--root", p.root]);
      expect(run.code).toBe(2);
      const plain = await status(p);
      expect(plain.code).toBe(0);
      expect(plain.doc.healthy).toBe(true);
      expect(plain.doc.loop.definition.state).toBe("invalid");
      expect(plain.doc.loop.definition.problems.join("\n")).toContain("defaults.verfy");
      expect(plain.doc.attention.map((a: { kind: string }) => a.kind)).toEqual(["definition"]);
      expect(plain.doc.attention[0].reason).toContain("every `loop run` refuses it");
      expect((await status(p, "--check")).code).toBe(1);
      const text = await p.loop(["status", "--text", "--root", p.root]);
      expect(text.stdout).toContain("needs a person:");
      expect(text.stdout).toContain("defaults.verfy");

      // Fixed, with an item added: valid, not yet imported; the next step imports it.
      p.writeDefinition(
        demoDefinition([
          { id: "a", prompt: "A." },
          { id: "b", prompt: "B." },
        ]),
      );
      const changed = await status(p, "--check");
      expect({ code: changed.code, definition: changed.doc.loop.definition, attention: changed.doc.attention }).toEqual({
        code: 0,
        definition: { state: "changed", changes: ["items added: b"], problems: [] },
        attention: [],
      });
      await p.run();
      expect((await status(p)).doc.loop.definition.state).toBe("imported");
    });
  }, 120_000);
});

describe("--check exits as `loop run` does", () => {
  test("a loop drained Failed: loop run exits 1 and so does status --check (plain status: 0); drained Succeeded: both 0", async () => {
    for (const [verify, expected] of [
      ["false", 1],
      ["true", 0],
    ] as const) {
      await scenario(demoDefinition([{ id: "a", prompt: "A.", verify, maxAttempts: 1 }]), {}, async (p) => {
        const drained = await p.runToDrain();
        const again = await p.loop(["run", "--json", "--root", p.root]);
        expect({ verify, run: again.code, attention: drained.attention.length > 0 }).toEqual({ verify, run: expected, attention: expected === 1 });
        const checked = await status(p, "--check");
        const plain = await status(p);
        expect({ verify, check: checked.code, plain: plain.code }).toEqual({ verify, check: again.code, plain: 0 });
      });
    }
  }, 120_000);
});

describe("a step in progress (docs/cli/loop-status.md)", () => {
  test("while a live process holds the lease, a state.json a step behind is not a finding: status names the step; once it is released, it is", async () => {
    await scenario(demoDefinition([{ id: "a", prompt: "A." }]), {}, async (p) => {
      await p.runToDrain();
      const path = join(p.stateRoot, "state.json");
      const original = readFileSync(path);
      const doc = JSON.parse(original.toString("utf8"));
      doc.loop.current = "a";
      writeFileSync(path, JSON.stringify(doc));
      const store = Store.open(p.stateRoot);
      try {
        const got = store.acquireLease(60_000, () => true);
        expect(got.ok).toBe(true);
        const during = await status(p);
        expect({ code: during.code, healthy: during.doc.healthy, step: during.doc.loop.step?.pid, findings: during.doc.findings }).toEqual({
          code: 0,
          healthy: true,
          step: process.pid,
          findings: [],
        });
        const text = await p.loop(["status", "--text", "--root", p.root]);
        expect(text.stdout).toContain(`a step is running (pid ${process.pid}`);
        if (got.ok) store.releaseLease(got.lease);
      } finally {
        store.close();
      }
      const after = await status(p);
      expect({ code: after.code, step: after.doc.loop.step, findings: after.doc.findings.map((f: { code: string }) => f.code) }).toEqual({
        code: 1,
        step: null,
        findings: ["state_field_mismatch"],
      });
      writeFileSync(path, original);
    });
  }, 120_000);
});

describe("a chained step holding the lease (docs/cli/loop-run.md#chained-steps)", () => {
  test("loop run says which step holds it; under --quiet (cron) it is said nowhere, exit 75 all the same; another holder is still said under --quiet", async () => {
    await scenario(demoDefinition([{ id: "a", prompt: "A." }]), {}, async (p) => {
      await p.runToDrain();
      for (const tag of ["chained", undefined] as const) {
        const store = Store.open(p.stateRoot);
        try {
          const got = store.acquireLease(60_000, () => true, new Date(), tag);
          expect(got.ok).toBe(true);
          const plain = await p.loop(["run", "--root", p.root]);
          const quiet = await p.loop(["run", "--quiet", "--root", p.root]);
          if (tag) {
            expect({ code: plain.code, said: JSON.parse(plain.stderr).error }).toEqual({
              code: 75,
              said: { code: "busy", message: expect.stringContaining(`a chained step holds the lease (pid ${process.pid}`) },
            });
            expect({ code: quiet.code, stdout: quiet.stdout, stderr: quiet.stderr }).toEqual({ code: 75, stdout: "", stderr: "" });
          } else {
            expect({ code: plain.code, said: JSON.parse(plain.stderr).error.message }).toEqual({
              code: 75,
              said: expect.stringContaining(`another step holds the lease (pid ${process.pid}`),
            });
            expect({ code: quiet.code, said: quiet.stderr }).toEqual({ code: 75, said: expect.stringContaining("another step holds the lease") });
          }
          if (got.ok) store.releaseLease(got.lease);
        } finally {
          store.close();
        }
      }
    });
  }, 120_000);
});
