// THE git helper and THE temp repository builder of the tests. Git runs with the scrubbed test
// environment (tests/helpers/env.ts), so a GIT_DIR set by a hook never points it elsewhere.
import { appendFileSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { testEnv } from "./env.ts";

/** `git <args>` in `cwd`; its trimmed stdout, or an error naming the command and git's stderr. */
export function git(cwd: string, ...args: string[]): string {
  const r = Bun.spawnSync(["git", ...args], { cwd, env: testEnv(), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`git ${args.join(" ")} (in ${cwd}) failed: ${r.stderr.toString()}`);
  return r.stdout.toString().trim();
}

/** Did `git <args>` in `cwd` succeed? */
export function gitOk(cwd: string, ...args: string[]): boolean {
  return Bun.spawnSync(["git", ...args], { cwd, env: testEnv(), stdin: "ignore", stdout: "ignore", stderr: "ignore" }).exitCode === 0;
}

/** The files of the first commit when none are given. */
export const DEFAULT_FILES: Readonly<Record<string, string>> = { "project.txt": "a tiny project\n" };

export interface RepoOptions {
  /** Prefix of the temp directory's name. */
  prefix?: string;
  /** Files of the first commit, by path relative to the repository (default DEFAULT_FILES). */
  files?: Record<string, string>;
  /** loop.json, committed with the files: an object (written as JSON) or raw text. */
  definition?: unknown;
}

/**
 * Make `root` a git repository on branch main with a local identity and no commit signing (a
 * caller's global config must not sign or prompt), holding `files` and `definition` in one commit.
 */
export function initRepo(root: string, o: Omit<RepoOptions, "prefix"> = {}): void {
  mkdirSync(root, { recursive: true });
  git(root, "init", "-q", "-b", "main");
  // The same as three `git config` calls, without three more processes per repository.
  appendFileSync(join(root, ".git", "config"), "[user]\n\temail = test@loop.invalid\n\tname = loop test\n[commit]\n\tgpgsign = false\n");
  for (const [name, text] of Object.entries(o.files ?? DEFAULT_FILES)) {
    mkdirSync(dirname(join(root, name)), { recursive: true });
    writeFileSync(join(root, name), text);
  }
  if (o.definition !== undefined) writeLoopJson(root, o.definition);
  git(root, "add", "-A");
  git(root, "commit", "-q", "--allow-empty", "-m", "initial");
}

/**
 * A temp directory holding a fresh repository at <dir>/repo (see initRepo); <dir> is free for
 * the test's own files (launch logs, markers). The caller removes <dir>.
 */
export function makeRepo(o: string | RepoOptions = {}): { dir: string; root: string } {
  const opts = typeof o === "string" ? { prefix: o } : o;
  const dir = mkdtempSync(join(tmpdir(), opts.prefix ?? "loop-test-"));
  const root = join(dir, "repo");
  initRepo(root, opts);
  return { dir, root };
}

/** Write <root>/loop.json: an object as pretty JSON, a string as it is. */
export function writeLoopJson(root: string, def: unknown): void {
  writeFileSync(join(root, "loop.json"), typeof def === "string" ? def : JSON.stringify(def, null, 2) + "\n");
}

/** A work repository `<dir>/work` to seed a forge fake from: branch `main`, one commit (a.txt). */
export function seedWork(dir: string): string {
  const work = join(dir, "work");
  git(dir, "init", "-q", "-b", "main", work);
  git(work, "config", "user.email", "t@loop.invalid");
  git(work, "config", "user.name", "t");
  writeFileSync(join(work, "a.txt"), "a\n");
  git(work, "add", "-A");
  git(work, "commit", "-qm", "a");
  return work;
}

/**
 * A forge fake seeded from a work repository whose `main` has one commit (a.txt), then a branch
 * `feature` one commit ahead (b.txt) pushed to the fake's bare repository as each of `refspecs`.
 * `start` makes the fake from the work repository (seeded with main only).
 */
export function fakeWithFeature<F extends { bare: string }>(dir: string, start: (work: string) => F, refspecs = ["feature:feature"]): { fake: F; work: string; head: string } {
  const work = seedWork(dir);
  const fake = start(work);
  git(work, "checkout", "-qb", "feature");
  writeFileSync(join(work, "b.txt"), "b\n");
  git(work, "add", "-A");
  git(work, "commit", "-qm", "b");
  git(work, "push", "-q", fake.bare, ...refspecs);
  return { fake, work, head: git(work, "rev-parse", "HEAD") };
}
