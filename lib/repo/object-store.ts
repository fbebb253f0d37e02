// The repository's object store after a session (docs/threat-model.md#the-object-store). Git needs
// it writable to commit, in the sandbox too, so an agent can replace an object file with other
// content under the same name: every reader of that object (the operator's `git show main:…`, the
// next item's checkout) then gets the agent's content, and nothing in git notices. Object files
// are named by the hash of their content, so a change can be proven: before an attempt's verify,
// every object file or pack written since the attempt was reserved is checked against its name (a
// loose object inflated and hashed here; a pack, the multi-pack index and the commit-graph verified
// by git), and a changed `objects/info/alternates` is named. Cost: a `stat` per object file and the
// hashing of what the session wrote.
import { createHash } from "node:crypto";
import { existsSync, lstatSync, readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { inflateSync } from "node:zlib";
import { readRegularFile } from "../shared/fsutil.ts";
import { git, gitTry } from "./git.ts";

/** Slack for file systems whose change times are coarser than the clock that stamped the reservation. */
const SLACK_MS = 2_000;

/** The most a loose object is inflated to be checked: one the session wrote that holds more is reported, not inflated. */
const MAX_OBJECT_BYTES = 512 * 2 ** 20;

/** Whether a loose object's bytes hash to its name (`dir`/`file`): sha1 for 40 hex digits, sha256 for 64; "too large" beyond `max` inflated bytes. */
export function looseObjectMatches(name: string, deflated: Uint8Array, max = MAX_OBJECT_BYTES): boolean | "too large" {
  const algo = name.length === 40 ? "sha1" : name.length === 64 ? "sha256" : null;
  if (algo === null) return false;
  try {
    return createHash(algo).update(inflateSync(deflated, { maxOutputLength: max })).digest("hex") === name;
  } catch (err) {
    // A few bytes of zeros can inflate to gigabytes: bounded, and said.
    if ((err as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE" || err instanceof RangeError) return "too large";
    return false; // not zlib at all
  }
}

/**
 * What in the object store of `repo` changed since `since` (ms) and does not hold what its name
 * says, one line each (empty: nothing). Throws GitError when git cannot say where the store is.
 */
export function tamperedObjects(o: { repo: string; since: number }): string[] {
  const objects = resolve(o.repo, git(o.repo, ["rev-parse", "--git-path", "objects"]));
  const after = o.since - SLACK_MS;
  const changed = (path: string) => {
    const st = lstatSync(path);
    return st.ctimeMs >= after || st.mtimeMs >= after || st.isSymbolicLink();
  };
  const out: string[] = [];
  const verify = (what: string, args: string[]) => {
    const r = gitTry(o.repo, args);
    if (r.code !== 0) out.push(`${what} does not verify (${r.stderr.trim().split("\n")[0] ?? `git exited ${r.code}`})`);
  };
  for (const dir of readdirSync(objects)) {
    if (!/^[0-9a-f]{2}$/.test(dir)) continue;
    // A fan-out folder replaced by a link would have its objects read from elsewhere, unseen here.
    const fan = lstatSync(join(objects, dir));
    if (!fan.isDirectory()) {
      out.push(`objects/${dir} is ${fan.isSymbolicLink() ? "a symbolic link" : "not a directory"}`);
      continue;
    }
    for (const file of readdirSync(join(objects, dir))) {
      const path = join(objects, dir, file);
      if (!changed(path)) continue;
      const st = lstatSync(path);
      if (!st.isFile()) out.push(`objects/${dir}/${file} is ${st.isSymbolicLink() ? "a symbolic link" : "not a file"}`);
      else if (!/^[0-9a-f]+$/.test(file)) continue; // git's own temporary files (tmp_obj_*)
      else {
        const r = readRegularFile(path, { maxBytes: MAX_OBJECT_BYTES });
        if (r.kind === "absent") continue; // packed away meanwhile (a gc): what remains is checked in its pack
        const matches = r.kind === "ok" ? looseObjectMatches(dir + file, r.bytes) : null;
        if (matches === "too large") out.push(`objects/${dir}/${file} could not be checked: it holds more than ${MAX_OBJECT_BYTES / 2 ** 20} MiB`);
        else if (matches === null) out.push(`objects/${dir}/${file} could not be read (${r.kind === "error" ? r.message : ""})`);
        else if (!matches) out.push(`objects/${dir}/${file} does not hold the object its name says`);
      }
    }
  }
  const pack = join(objects, "pack");
  if (existsSync(pack)) {
    const packs = new Set<string>();
    for (const file of readdirSync(pack)) {
      if (!changed(join(pack, file))) continue;
      // A pack is verified through its index, whichever of its files changed.
      const m = /^(pack-[0-9a-f]+)\.(pack|idx|rev|bitmap)$/.exec(file);
      if (m) packs.add(m[1]!);
      else if (file === "multi-pack-index") verify("objects/pack/multi-pack-index", ["multi-pack-index", "verify"]);
    }
    for (const p of packs) {
      if (existsSync(join(pack, `${p}.idx`))) verify(`objects/pack/${p}`, ["verify-pack", join(pack, `${p}.idx`)]);
      else out.push(`objects/pack/${p}.pack has no index`);
    }
  }
  const info = join(objects, "info");
  if (existsSync(join(info, "alternates")) && changed(join(info, "alternates"))) out.push("objects/info/alternates was written: git would read objects from elsewhere");
  const graphs = [join(info, "commit-graph"), join(info, "commit-graphs")].filter((p) => existsSync(p));
  if (graphs.some(changed)) verify("objects/info/commit-graph", ["commit-graph", "verify"]);
  return out;
}
