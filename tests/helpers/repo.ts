// THE git helper and THE temp repository builder of the tests. Git runs with the scrubbed test
// environment (tests/helpers/env.ts), so a GIT_DIR set by a hook never points it elsewhere.
import { appendFileSync, cpSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
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
  writeFileSync(join(root, "loop.json"), typeof def === "string" ? def : JSON.stringify(withoutBaseVerify(def), null, 2) + "\n");
}

/**
 * Most scenarios' verify fails until their items land (`test -s DONE.md`): the verify on the base
 * (docs/cli/loop-run.md#the-verify-on-the-base) would pause them before their first launch. A
 * definition object that does not say is written with `workspace.baseVerify: false`; the tests of
 * the base verify set it.
 */
function withoutBaseVerify(def: unknown): unknown {
  if (typeof def !== "object" || def === null || Array.isArray(def) || !("items" in def)) return def;
  const d = def as { workspace?: Record<string, unknown> };
  if (d.workspace !== undefined && (typeof d.workspace !== "object" || d.workspace === null || "baseVerify" in d.workspace)) return def;
  // Before the items, as loop.json is written by hand: a test that reads the file's end reads them.
  const { items, ...rest } = d as { items: unknown; workspace?: Record<string, unknown> };
  return { ...rest, workspace: { ...(d.workspace ?? {}), baseVerify: false }, items };
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

/** The repositories of fakeWithFeature, made once per test process for each set of refspecs. */
const featureFixtures = new Map<string, { work: string; bare: string; head: string }>();

function featureFixture(refspecs: string[]): { work: string; bare: string; head: string } {
  const key = refspecs.join(" ");
  let made = featureFixtures.get(key);
  if (made) return made;
  const dir = mkdtempSync(join(tmpdir(), "loop-feature-fixture-"));
  const work = seedWork(dir);
  const bare = join(dir, "remote.git");
  git(dir, "init", "-q", "--bare", "-b", "main", bare);
  git(work, "push", "-q", bare, "main:main");
  git(work, "checkout", "-qb", "feature");
  writeFileSync(join(work, "b.txt"), "b\n");
  git(work, "add", "-A");
  git(work, "commit", "-qm", "b");
  git(work, "push", "-q", bare, ...refspecs);
  made = { work, bare, head: git(work, "rev-parse", "HEAD") };
  featureFixtures.set(key, made);
  return made;
}

/**
 * A forge fake over a bare repository whose `main` has one commit (a.txt) and a branch `feature`
 * one commit ahead (b.txt), pushed as each of `refspecs`; `<dir>/work` is the work repository
 * they came from, on `feature`. `start` makes the fake with `copyOf` as its remote's copy
 * (startFakeGitHub's and startFakeGitLab's option). The repositories are made once per process
 * and each fake gets its own file copy of them: a test changes its own, never another's, and
 * pays no git process for them (making them is a dozen).
 */
export function fakeWithFeature<F extends { bare: string }>(
  dir: string,
  start: (copyOf: string) => F,
  refspecs = ["feature:feature"],
): { fake: F; work: string; head: string } {
  const made = featureFixture(refspecs);
  const work = join(dir, "work");
  cpSync(made.work, work, { recursive: true });
  return { fake: start(made.bare), work, head: made.head };
}
