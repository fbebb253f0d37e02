// Before loop's own git writes a ref of the repository (the item branch, the landing target, an
// archive name), the files git writes for it — its lock, its reflog, and the folders on their way —
// are made git's own again. Without the sandbox the agent can write the repository's refs and logs
// folders: a link at `logs/refs/heads/loop/<name>/item/b` to loop.json (or a FIFO, or a hard link to
// loop.db) would have git append its reflog line there, or block. Git opens a reflog to append,
// following links; so whatever is not a plain folder or a plain, singly linked file is removed first
// (a ref's log is git's record, never the operator's only copy of anything). In the sandbox the
// repository is read-only to the agent and this finds nothing.
import { lstatSync, rmSync } from "node:fs";
import { join } from "node:path";

/** The repository's files git writes when it updates `refs` (full names, `refs/heads/…`) and, in a worktree's git folder, HEAD. */
function refFiles(commonDir: string, refs: readonly string[], worktreeGitDirs: readonly string[]): string[] {
  const out: string[] = [];
  for (const ref of refs) out.push(join(commonDir, `${ref}.lock`), join(commonDir, "logs", ref), join(commonDir, "logs", `${ref}.lock`));
  for (const dir of worktreeGitDirs)
    out.push(
      join(dir, "logs", "HEAD"),
      join(dir, "HEAD.lock"),
      join(dir, "ORIG_HEAD"),
      join(dir, "MERGE_HEAD"),
      join(dir, "MERGE_MSG"),
      join(dir, "MERGE_MODE"),
      join(dir, "AUTO_MERGE"),
      join(dir, "COMMIT_EDITMSG"),
      join(dir, "index.lock"),
    );
  return out;
}

/**
 * Remove what could turn loop's ref writes against it: for each file git writes, every folder on
 * its way (below the git folder) that is not a plain folder, and the file itself when it is not a
 * plain file with one name. Returns what was removed (for a warning).
 */
export function disarmRefTraps(o: { commonDir: string; refs: readonly string[]; worktreeGitDirs?: readonly string[] }): string[] {
  const removed: string[] = [];
  for (const file of refFiles(o.commonDir, o.refs, o.worktreeGitDirs ?? [])) {
    const root = (o.worktreeGitDirs ?? []).find((d) => file.startsWith(`${d}/`)) ?? o.commonDir;
    const parts = file.slice(root.length + 1).split("/");
    let at = root;
    for (const [i, part] of parts.entries()) {
      at = join(at, part);
      const st = lstatSync(at, { throwIfNoEntry: false });
      if (!st) break;
      const last = i === parts.length - 1;
      // A lock of a ref loop owns is never another's to hold while loop holds its lease: a stale one
      // (or a planted one) goes too. On the way, only a link or a special file is a trap: a regular
      // file there is a ref (or its log) of that name, which git refuses to write below, and says so.
      const trap = last ? !st.isFile() || st.nlink > 1 || file.endsWith(".lock") : !st.isDirectory() && !st.isFile();
      if (trap) {
        rmSync(at, { force: true, recursive: st.isDirectory() && !st.isSymbolicLink() });
        removed.push(at);
        break;
      }
      // A regular file on the way: nothing below it can exist (git refuses the ref and says why).
      if (!last && !st.isDirectory()) break;
    }
  }
  return removed;
}
