// What `--version --json` says (lib/shared/build-info.ts, docs/cli/README.md#version): a compiled
// build's baked stamp, or from source the commit of the checkout it runs from, asked of real git
// in temp repositories.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { sourceRevision, versionDocument } from "../../lib/shared/build-info.ts";
import { BUILD, VERSION } from "../../lib/shared/version.ts";
import { removeDir, TempDirs } from "../helpers/fs.ts";
import { git, makeRepo } from "../helpers/repo.ts";
import { testEnv } from "../helpers/env.ts";

const temp = new TempDirs();
const repos: string[] = [];
afterAll(() => {
  temp.cleanup();
  for (const d of repos) removeDir(d);
});

/** A temp git repository with one commit (tests/helpers/repo.ts). */
function repo(): string {
  const { dir, root } = makeRepo("loop-buildinfo-");
  repos.push(dir);
  return root;
}

describe("sourceRevision", () => {
  test("a clean checkout: its HEAD, not dirty; a changed tracked file makes it dirty, an untracked one does not", () => {
    const root = repo();
    const head = git(root, "rev-parse", "HEAD");
    expect(sourceRevision(root)).toEqual({ commit: head, dirty: false });
    writeFileSync(join(root, "new-untracked.txt"), "x\n");
    expect(sourceRevision(root)).toEqual({ commit: head, dirty: false });
    writeFileSync(join(root, "project.txt"), "changed\n");
    expect(sourceRevision(root)).toEqual({ commit: head, dirty: true });
  });

  test("a folder inside someone else's checkout is not a checkout of its own: null", () => {
    const root = repo();
    const inner = join(root, "vendor", "loop");
    mkdirSync(inner, { recursive: true });
    expect(sourceRevision(inner)).toBeNull();
  });

  test("no git repository at all: null", () => {
    expect(sourceRevision(temp.make("loop-nogit-"))).toBeNull();
  });

  test("a GIT_DIR in the environment (a hook running loop) does not point it at another repository", () => {
    const root = repo();
    const other = repo();
    git(other, "commit", "-q", "--allow-empty", "-m", "another commit"); // not the same HEAD as root's
    // In a process of its own: Bun's spawn passes on the environment the process started with.
    const module = join(import.meta.dir, "..", "..", "lib", "shared", "build-info.ts");
    const r = Bun.spawnSync(
      [
        process.execPath,
        "-e",
        `import { sourceRevision } from ${JSON.stringify(module)}; console.log(JSON.stringify(sourceRevision(${JSON.stringify(root)})))`,
      ],
      {
        env: { ...testEnv(), GIT_DIR: join(other, ".git") },
        stdout: "pipe",
        stderr: "pipe",
      },
    );
    expect({ code: r.exitCode, stderr: r.stderr.toString() }).toEqual({ code: 0, stderr: "" });
    expect(JSON.parse(r.stdout.toString())).toEqual({ commit: git(root, "rev-parse", "HEAD"), dirty: false });
  });
});

describe("versionDocument", () => {
  test("a compiled build's stamp is reported as baked, and git is never asked", () => {
    const stamp = { commit: "a".repeat(40), dirty: false, target: "linux-arm64-musl" };
    const doc = versionDocument(
      stamp,
      () => {
        throw new Error("asked git");
      },
      "3.54.1",
    );
    expect(doc).toEqual({
      schema: "loop/version@1",
      version: VERSION,
      commit: stamp.commit,
      dirty: false,
      target: "linux-arm64-musl",
      platform: `${process.platform}-${process.arch}`,
      bun: Bun.version,
      sqlite: "3.54.1",
    });
  });

  test("from source: target source, the checkout's revision, or null without one", () => {
    expect(versionDocument(null, () => ({ commit: "b".repeat(40), dirty: true }), "3").commit).toBe("b".repeat(40));
    expect(versionDocument(null, () => ({ commit: "b".repeat(40), dirty: true }), "3")).toMatchObject({ target: "source", dirty: true });
    expect(versionDocument(null, () => null, "3")).toMatchObject({ target: "source", commit: null, dirty: null });
  });

  test("the tests run from source: no stamp is defined", () => {
    expect(BUILD).toBeNull();
  });
});
