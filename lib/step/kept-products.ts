// Setup once, not per item (docs/operations.md#setup-once-per-lockfile): right after `workspace.setup`
// ran in an item's checkout, before its agent starts, loop copies what it made into a folder of its
// own (`<worktrees>/.setup/<key>`), recorded under the state root with the setup key and the stamps of
// the copy. A later item whose start point has the same key gets a copy of that copy (a reflink where
// the file system can, never a hardlink: its agent could write through one into what the next verify
// trusts) instead of running setup again. The agent's checkout never supplies the copy: it is made
// before the agent starts, and taken again only when every entry is still as loop left it.
// A copy cut short is never trusted: the record is written (atomically) only once the copy is whole.
// What names the checkout setup ran in (a virtualenv's scripts) is written again naming the checkout
// it is copied into (lib/repo/product-place.ts); what cannot be is not kept.
import { type BigIntStats, constants, cpSync, lstatSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { spawnSync } from "node:child_process";
import { changedProducts, type ProductStamps, stampProducts } from "../repo/products.ts";
import { type PlaceBinding, type placeBinding, relocateProducts } from "../repo/product-place.ts";
import { failpoint } from "../shared/failpoint.ts";
import { readJsonOrNull, writeFileAtomic } from "../shared/fsutil.ts";
import { statePaths } from "../shared/paths.ts";
import { moveToTrash, trashOf } from "../shared/trash.ts";

/** The record of the one kept copy (docs/state.md). */
interface KeptRecord {
  version: 1;
  key: string;
  command: string;
  /** The item whose setup made it. */
  madeBy: string;
  /** Top-most paths, relative to a checkout (and to the kept folder). */
  paths: string[];
  /** Every entry of the kept folder as loop left it. */
  stamps: ProductStamps;
  /** The files naming the checkout setup ran in (lib/repo/product-place.ts); absent in older records (none). */
  place?: PlaceBinding;
}

function recordPath(stateRoot: string): string {
  return join(statePaths(stateRoot).trees, "setup-products.json");
}

/** The folder of kept copies, beside the checkouts (one file system: a reflink, a rename to the trash). */
function keptRoot(worktrees: string): string {
  return join(worktrees, ".setup");
}

function readRecord(stateRoot: string): KeptRecord | null {
  const r = readJsonOrNull<KeptRecord>(recordPath(stateRoot));
  if (
    r?.version !== 1 ||
    typeof r.key !== "string" ||
    !/^[0-9a-f]{8,64}$/.test(r.key) ||
    typeof r.madeBy !== "string" ||
    !Array.isArray(r.paths) ||
    !r.stamps ||
    typeof r.stamps !== "object"
  )
    return null;
  return r;
}

/**
 * Copy `paths` from `from` into `to` (each top-most, its parent made when missing): `cp -a
 * --reflink=auto` (links copied as links, never followed), else Node's copy with a clone where it
 * can. Never hardlinks. Throws when a copy fails.
 */
function copyPaths(from: string, to: string, paths: readonly string[]): void {
  paths.forEach((p, i) => {
    // Inside the copy: a kill here leaves part of it, which no record names (docs/failpoints.md).
    if (i === 1) failpoint("setup:during_copy");
    const src = join(from, p);
    const dst = join(to, p);
    mkdirSync(dirname(dst), { recursive: true });
    const r = spawnSync("cp", ["-a", "--reflink=auto", "--no-target-directory", "--", src, dst], { stdio: ["ignore", "ignore", "pipe"] });
    if (r.status === 0) return;
    // A cp without --reflink (not GNU): Node's own copy, a clone where the file system has them.
    rmSync(dst, { recursive: true, force: true });
    cpSync(src, dst, { recursive: true, mode: constants.COPYFILE_FICLONE, verbatimSymlinks: true, preserveTimestamps: true, errorOnExist: true, force: false });
  });
  if (paths.length === 1) failpoint("setup:during_copy");
}

/** What a kept copy holds as far as its record knows (bytes), for `loop status`'s trash figure. */
function recordBytes(r: KeptRecord | null): number | null {
  if (!r) return null;
  let bytes = 0;
  for (const st of Object.values(r.stamps)) if (typeof st === "string" && !st.startsWith("d:")) bytes += Number(st.split(":")[2]) || 0;
  return bytes;
}

/** Move every kept folder to the trash (a copy cut short, an older key's); `known`: the one the record named. */
function trashAll(worktrees: string, known: KeptRecord | null): void {
  const root = keptRoot(worktrees);
  let names: string[];
  try {
    names = readdirSync(root);
  } catch {
    return;
  }
  for (const name of names) {
    const bytes = known?.key === name ? recordBytes(known) : null;
    if (!moveToTrash(join(root, name), trashOf(worktrees), `setup-${name}`, bytes)) rmSync(join(root, name), { recursive: true, force: true });
  }
}

/**
 * After setup ran in `worktree` (before the agent): keep a copy of what it made, replacing any
 * other kept copy. Returns why nothing was kept (products bound to their checkout's path, or a copy
 * that failed), or null.
 */
export function keepProducts(o: {
  stateRoot: string;
  worktrees: string;
  worktree: string;
  key: string;
  command: string;
  item: string;
  paths: string[];
  stamps: ProductStamps;
  /** Where what setup made names its checkout (lib/repo/product-place.ts placeBinding). */
  place: ReturnType<typeof placeBinding>;
}): string | null {
  // The old record first: from here on nothing trusts the old copy.
  const old = readRecord(o.stateRoot);
  rmSync(recordPath(o.stateRoot), { force: true });
  trashAll(o.worktrees, old);
  if ("bound" in o.place) return `what it made names its checkout's path where loop cannot change it: ${o.place.bound}`;
  const dir = join(keptRoot(o.worktrees), o.key);
  try {
    mkdirSync(dir, { recursive: true });
    copyPaths(o.worktree, dir, o.paths);
  } catch (err) {
    trashAll(o.worktrees, null);
    return `the copy failed: ${(err as Error).message}`;
  }
  const record: KeptRecord = {
    version: 1,
    key: o.key,
    command: o.command,
    madeBy: o.item,
    paths: o.paths,
    stamps: stampProducts(dir, o.paths),
    place: o.place.binding,
  };
  writeFileAtomic(recordPath(o.stateRoot), JSON.stringify(record) + "\n");
  return null;
}

/**
 * The kept copy for `key` and `command` copied into `worktree` (which holds none of it), or null
 * when there is none, or it is not as loop left it (then it is dropped). Returns what it holds and
 * which item's setup made it. Throws when the copy fails (what it left is not recorded: the caller
 * removes it and runs setup).
 */
export function reuseProducts(o: {
  stateRoot: string;
  worktrees: string;
  worktree: string;
  key: string;
  command: string;
}): { paths: string[]; madeBy: string; place: PlaceBinding } | null {
  const r = readRecord(o.stateRoot);
  if (!r || r.key !== o.key || r.command !== o.command) return null;
  const dir = join(keptRoot(o.worktrees), r.key);
  const st: BigIntStats | undefined = lstatSync(dir, { bigint: true, throwIfNoEntry: false });
  const paths = r.paths.filter((p): p is string => typeof p === "string" && p !== "" && !p.split("/").includes(".."));
  if (!st?.isDirectory() || paths.length !== r.paths.length || changedProducts(dir, paths, r.stamps).length) {
    // Changed since loop made it (without the sandbox an agent can reach it): never handed on.
    forgetKept(o.stateRoot, o.worktrees);
    return null;
  }
  // Something of the start point's own where a product goes: setup runs there instead.
  if (paths.some((p) => lstatSync(join(o.worktree, p), { throwIfNoEntry: false }))) return null;
  copyPaths(dir, o.worktree, paths);
  // What names the checkout setup ran in names this one now.
  const place = relocateProducts(validPlace(r.place) ?? { dir: o.worktree, files: [] }, o.worktree);
  return { paths, madeBy: r.madeBy, place };
}

function validPlace(p: unknown): PlaceBinding | null {
  const b = p as PlaceBinding | null | undefined;
  return b && typeof b.dir === "string" && Array.isArray(b.files) && b.files.every((f) => typeof f === "string" && !f.split("/").includes("..")) ? b : null;
}

/** Drop the kept copy (moved to the trash), or only the one `item`'s setup made; returns whether one was dropped. */
export function forgetKept(stateRoot: string, worktrees: string, item?: string): boolean {
  const r = readRecord(stateRoot);
  if (item !== undefined && r?.madeBy !== item) return false;
  rmSync(recordPath(stateRoot), { force: true });
  trashAll(worktrees, r);
  return r !== null;
}
