// The spare checkout (docs/state.md#the-spare-checkout): a passed item's checkout is not thrown away
// but kept, by one rename, as `<worktrees>/.spare-<item>`, with its records (what loop wrote there and
// what setup made). The next item's launch takes it by renaming it to its own place: then the tree
// sync writes only the files that differ between the two commits, and what setup made comes with it,
// instead of five thousand files and a dependency folder written again.
//
// It is trusted exactly as a retry's checkout is: every file is compared with loop's stamps and
// written again unless still as loop left it, anything else is removed, and what setup made is taken
// only when every entry is as setup left it, for the same command and setup key. What setup made that
// names its checkout's path (a virtualenv's scripts) is written again naming the new one by the
// launch (lib/repo/product-place.ts); products that cannot be moved keep a checkout from being a spare.
// Records follow the folder: written only after it is in place, removed before it goes, so records
// that exist always belong to the one folder there. A crash between leaves a folder without records,
// which is never taken and goes to the trash with the next spare.
import { lstatSync, readdirSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { changedProducts } from "../repo/products.ts";
import { failpoint } from "../shared/failpoint.ts";
import { moveToTrash, trashOf } from "../shared/trash.ts";
import { checkoutBytes, checkoutProducts, productsKeyOf, productsPlaceOf, productStampsOf, treeFiles } from "./airlock.ts";

const PREFIX = ".spare-";
/** The records' name under trees/ (no item id starts with a dot). */
const RECORDS = ".spare";

function spares(worktrees: string): string[] {
  try {
    return readdirSync(worktrees)
      .filter((n) => n.startsWith(PREFIX))
      .sort();
  } catch {
    return [];
  }
}

function moveIfThere(from: string, to: string): void {
  try {
    renameSync(from, to);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    rmSync(to, { force: true });
  }
}

/** Drop the spare (with `item`: only the one its checkout became): its records first, then every spare folder to the trash. */
export function dropSpare(stateRoot: string, worktrees: string, item?: string): void {
  if (item !== undefined && !spares(worktrees).includes(PREFIX + item)) return;
  const f = treeFiles(stateRoot, RECORDS);
  const bytes = checkoutBytes(stateRoot, RECORDS);
  rmSync(f.stamps, { force: true });
  rmSync(f.products, { force: true });
  const names = spares(worktrees);
  for (const name of names) {
    const path = join(worktrees, name);
    // The records' figure is the one spare's: with more than one (a crash between), none is known.
    if (!moveToTrash(path, trashOf(worktrees), name.slice(1), names.length === 1 ? bytes : null)) rmSync(path, { recursive: true, force: true });
    failpoint("trash:after_move");
  }
}

/**
 * Keep `item`'s checkout at `worktree` (directly under `worktrees`) as the spare, replacing the one
 * before; false (nothing moved) when it cannot serve another item: loop has no record of writing
 * it, or what setup made there names its path where loop cannot change it.
 */
export function keepSpare(o: { stateRoot: string; worktrees: string; worktree: string; item: string }): boolean {
  const from = treeFiles(o.stateRoot, o.item);
  const st = lstatSync(o.worktree, { throwIfNoEntry: false });
  if (!st?.isDirectory() || !lstatSync(from.stamps, { throwIfNoEntry: false })?.isFile()) return false;
  // What setup made must be able to move to another item's path (lib/repo/product-place.ts).
  if (checkoutProducts(o.stateRoot, o.item)?.length && !productsPlaceOf(o.stateRoot, o.item)) return false;
  dropSpare(o.stateRoot, o.worktrees);
  renameSync(o.worktree, join(o.worktrees, PREFIX + o.item));
  failpoint("spare:after_move");
  const to = treeFiles(o.stateRoot, RECORDS);
  moveIfThere(from.products, to.products);
  renameSync(from.stamps, to.stamps);
  return true;
}

/**
 * Take the spare as `item`'s checkout at `worktree` (which must not exist): the item whose checkout
 * it was, or null when there is none to take (none, its records missing, what setup made there
 * changed or made by another command or setup key: then it is dropped).
 */
export function takeSpare(o: {
  stateRoot: string;
  worktrees: string;
  worktree: string;
  item: string;
  /** workspace.setup, or undefined without one. */
  command: string | undefined;
  key: string | null;
}): string | null {
  const names = spares(o.worktrees);
  const rec = treeFiles(o.stateRoot, RECORDS);
  const dir = names.length === 1 ? join(o.worktrees, names[0]!) : null;
  const usable = dir !== null && lstatSync(dir, { throwIfNoEntry: false })?.isDirectory() && lstatSync(rec.stamps, { throwIfNoEntry: false })?.isFile();
  if (!usable || !productsFit(o.stateRoot, dir, o.command, o.key)) {
    if (names.length) dropSpare(o.stateRoot, o.worktrees);
    return null;
  }
  // The records first: a crash after them leaves the item records without a folder (written afresh).
  const to = treeFiles(o.stateRoot, o.item);
  moveIfThere(rec.products, to.products);
  renameSync(rec.stamps, to.stamps);
  failpoint("spare:after_records");
  renameSync(dir, o.worktree);
  return names[0]!.slice(PREFIX.length);
}

/** Whether what setup made in the spare serves this item: the same command and key, every entry as setup left it; none without setup. */
function productsFit(stateRoot: string, dir: string, command: string | undefined, key: string | null): boolean {
  if (command === undefined) return !checkoutProducts(stateRoot, RECORDS)?.length;
  const paths = checkoutProducts(stateRoot, RECORDS, command, key);
  const stamps = productStampsOf(stateRoot, RECORDS);
  // A record without its key (an older one) is not taken: the key is what says the inputs are the same.
  if (!paths || !stamps || productsKeyOf(stateRoot, RECORDS) !== key) return false;
  return changedProducts(dir, paths, stamps).length === 0;
}
