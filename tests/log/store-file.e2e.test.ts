// The store's file and the state root around it, through the real entry point: a store is created
// only where there is no file at all (an empty or truncated loop.db is corruption for every
// command, never a new store that would relaunch passed items), whatever creates the state root
// writes its .gitignore, and a state root loop may not write is an environment error (io_error,
// exit 1), not a corrupt store (docs/state.md).
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, readdirSync, readFileSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BUN, demoDefinition, exec, git, LOOP, Project } from "../helpers/project.ts";

const T = 120_000;
const projects: Project[] = [];
afterAll(() => {
  for (const p of projects) {
    try {
      chmodSync(p.stateRoot, 0o755);
      chmodSync(join(p.stateRoot, "loop.db"), 0o644);
    } catch {}
    p.dispose();
  }
});

function project(def: Record<string, unknown>, files?: Record<string, string>): Project {
  const p = new Project(def, files ? { files } : {});
  projects.push(p);
  return p;
}

function jsonError(stderr: string): { code: string; message: string } {
  return JSON.parse(stderr.trim()).error;
}

describe("an empty or truncated loop.db is corruption for every command", () => {
  test(
    "0 bytes after items passed: run, run --watch, ctl, init --force, status and replay exit 2 corrupt_store; nothing is relaunched or committed",
    async () => {
      const p = project(
        demoDefinition([
          { id: "a", prompt: "Write it." },
          { id: "b", prompt: "And this.", dependsOn: ["a"] },
        ]),
      );
      await p.runToDrain();
      expect(p.projection().items.a!.status).toBe("passed");
      const branches = git(p.root, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/loop/");
      const sessions = readdirSync(join(p.stateRoot, "sessions")).sort();
      const definition = readFileSync(join(p.root, "loop.json"), "utf8");
      const db = join(p.stateRoot, "loop.db");
      const whole = readFileSync(db);
      writeFileSync(db, "");

      for (const args of [
        ["run", "--json"],
        ["run", "--watch", "--json"],
        ["ctl", "pause", "--json"],
        ["init", "--force", "--json"],
        ["status", "--json"],
        ["replay", "--json"],
      ]) {
        const r = await p.loop(args);
        expect({ args, code: r.code, stdout: r.stdout }).toEqual({ args, code: 2, stdout: "" });
        expect(jsonError(r.stderr).code).toBe("corrupt_store");
      }
      const r = await p.loop(["run", "--json"]);
      expect(jsonError(r.stderr).message).toContain("is empty (0 bytes), not a loop store");
      expect(jsonError(r.stderr).message).toContain("Restore it from a backup");
      // Nothing was made of it: still 0 bytes, no WAL, no launch, no commit, loop.json as it was.
      expect(readFileSync(db).length).toBe(0);
      expect(
        readdirSync(p.stateRoot)
          .filter((f) => f.startsWith("loop.db") || f === "run.pid")
          .sort(),
      ).toEqual(["loop.db"]);
      expect(readdirSync(join(p.stateRoot, "sessions")).sort()).toEqual(sessions);
      expect(git(p.root, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/loop/")).toBe(branches);
      expect(readFileSync(join(p.root, "loop.json"), "utf8")).toBe(definition);

      // Truncated (half the file): the same.
      writeFileSync(db, whole);
      truncateSync(db, Math.floor(whole.length / 2));
      for (const args of [
        ["run", "--json"],
        ["ctl", "pause", "--json"],
        ["status", "--json"],
      ]) {
        const t = await p.loop(args);
        expect({ args, code: t.code }).toEqual({ args, code: 2 });
        expect(jsonError(t.stderr).code).toBe("corrupt_store");
      }
      expect(readdirSync(join(p.stateRoot, "sessions")).sort()).toEqual(sessions);

      // Restored from the copy, the loop is whole again and nothing runs twice.
      writeFileSync(db, whole);
      expect((await p.run()).action).toBe("drained");
      expect(p.eventsOf("launch_reserved").map((e) => e.item)).toEqual(["a", "b"]);
      await p.finish();
    },
    T,
  );

  test("with no file at all `loop run` creates the store, whole, and leaves no temporary file behind", async () => {
    const p = project(demoDefinition([]));
    const r = await p.run();
    expect(r.action).toBe("drained");
    expect(
      readdirSync(p.stateRoot)
        .filter((f) => f.startsWith("loop.db"))
        .sort(),
    ).toEqual(["loop.db"]);
    expect(
      p
        .events()
        .slice(0, 2)
        .map((e) => e.type),
    ).toEqual(["store_opened", "store_bound"]);
  });
});

describe("whatever creates the state root writes its .gitignore", () => {
  test.each([
    ["loop run", ["run", "--json"]],
    ["loop run --watch", ["run", "--watch", "--interval", "50ms", "--json"]],
    ["loop init", ["init", "--force", "--json"]],
  ])("%s in a repository that does not ignore .loop: git sees nothing of the state root", async (_name, args) => {
    // The project's own .gitignore is empty: nothing but the state root's keeps git away from it.
    const p = project(demoDefinition([]), { ".gitignore": "", "README.md": "# project\n" });
    const r = await p.loop(args);
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(join(p.stateRoot, ".gitignore"), "utf8")).toBe("# loop's state root: never commit it\n*\n");
    expect(
      git(p.root, "status", "--porcelain", "--untracked-files=all")
        .split("\n")
        .filter((l) => l.includes(".loop")),
    ).toEqual([]);
  });

  test("an existing .gitignore, or one the operator replaced by a link, is never overwritten", async () => {
    const p = project(demoDefinition([]));
    expect((await p.run()).action).toBe("drained");
    writeFileSync(join(p.stateRoot, ".gitignore"), "mine\n");
    expect((await p.loop(["init", "--force", "--json"])).code).toBe(0);
    expect(readFileSync(join(p.stateRoot, ".gitignore"), "utf8")).toBe("mine\n");
  });
});

/** Run as a user the permission bits apply to: as root, without the capabilities that bypass them. */
const asRoot = process.getuid?.() === 0;
const setpriv = Bun.which("setpriv");
const unprivileged = asRoot ? (setpriv ? [setpriv, "--bounding-set=-dac_override,-dac_read_search"] : null) : [];

describe("a state root loop may not write is io_error (exit 1), not corrupt_store", () => {
  test.skipIf(unprivileged === null)(
    "a read-only state root, and a read-only loop.db: run and ctl exit 1 with io_error; the read verbs still report",
    async () => {
      const p = project(demoDefinition([]));
      expect((await p.run()).action).toBe("drained");
      const db = join(p.stateRoot, "loop.db");
      const before = readFileSync(db);
      const as = (args: string[]) => exec([...unprivileged!, BUN, LOOP, ...args, "--root", p.root], { cwd: p.root });
      for (const lock of [() => chmodSync(p.stateRoot, 0o555), () => chmodSync(db, 0o444)]) {
        lock();
        try {
          for (const args of [
            ["run", "--json"],
            ["ctl", "pause", "--json"],
          ]) {
            const r = await as(args);
            expect({ args, code: r.code, stdout: r.stdout }).toEqual({ args, code: 1, stdout: "" });
            const err = jsonError(r.stderr);
            expect(err.code).toBe("io_error");
            expect(err.message).toMatch(/^cannot write .*: EACCES: permission denied/);
          }
          for (const verb of ["status", "replay"]) expect((await as([verb, "--json"])).code).toBe(0);
        } finally {
          chmodSync(p.stateRoot, 0o755);
          chmodSync(db, 0o644);
        }
        expect(readFileSync(db).equals(before)).toBe(true);
      }
      const loose = readdirSync(p.stateRoot).filter((f) => f.startsWith("loop.db"));
      expect(loose.sort()).toEqual(["loop.db"]);
      expect(existsSync(join(p.stateRoot, "run.pid"))).toBe(false);
    },
    T,
  );
});
