// What a project's root says about its dependencies (lib/decisions/setup-proposal.ts ProjectFacts):
// read from the files on disk (`loop init`) or from a commit's blobs (a verify that could not find
// a command: lib/decisions/setup-missing.ts). Every file is parsed as data, bounded in size; one
// that is not what it should be says nothing.
import type { ProjectFacts } from "../decisions/setup-proposal.ts";
import { gitTry } from "./git.ts";

/** The most of a manifest read: larger ones are not a project's package.json or pyproject.toml. */
const MANIFEST_MAX = 1 << 20;
/** A lockfile may be large (a monorepo's package-lock.json): read up to this. */
const LOCKFILE_MAX = 64 << 20;

/** The folder whose `*.txt` files are read beside the root's (`requirements/tests.txt`). */
export const REQUIREMENTS_DIR = "requirements";

/** Reads one file of the root by name, at most `max` bytes; null when absent, not a file, or larger. */
type ReadFile = (name: string, max: number) => string | null;

const table = (v: unknown): Record<string, unknown> | null => (v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : null);
const strings = (v: unknown): string[] =>
  Array.isArray(v)
    ? v.flatMap((x) => (typeof x === "string" ? [x] : typeof table(x)?.["include-group"] === "string" ? [String(table(x)!["include-group"])] : []))
    : [];
const lists = (v: unknown): Record<string, string[]> => Object.fromEntries(Object.entries(table(v) ?? {}).map(([k, x]) => [k, strings(x)]));

/**
 * The facts of a root holding `names`, its files read through `read`; `onPath`: the programs found.
 * With `bins`, package-lock.json's `bin` entries too (the names node_modules/.bin would hold).
 */
export function projectFacts(names: readonly string[], read: ReadFile, onPath: readonly string[], o: { bins?: boolean } = {}): ProjectFacts {
  let packageJson: ProjectFacts["packageJson"] = null;
  try {
    const pkg = table(JSON.parse(names.includes("package.json") ? (read("package.json", MANIFEST_MAX) ?? "null") : "null"));
    if (pkg) {
      const scripts = Object.fromEntries(Object.entries(table(pkg.scripts) ?? {}).filter((e): e is [string, string] => typeof e[1] === "string"));
      const declared = ["dependencies", "devDependencies", "optionalDependencies", "peerDependencies"].flatMap((k) => Object.keys(table(pkg[k]) ?? {}));
      packageJson = {
        scripts,
        dependencies: declared.length > 0,
        declared,
        packageManager: typeof pkg.packageManager === "string" ? pkg.packageManager : null,
      };
    }
  } catch {
    // Not JSON: no scripts or dependencies to read.
  }
  const yarnHead = names.includes("yarn.lock") ? (read("yarn.lock", LOCKFILE_MAX) ?? "") : null;
  const yarnBerry = yarnHead === null ? null : /^__metadata:/m.test(yarnHead.slice(0, 4096)) || names.includes(".yarnrc.yml");
  let pyproject: ProjectFacts["pyproject"] = null;
  let pyprojectInvalid = false;
  const pyText = names.includes("pyproject.toml") ? read("pyproject.toml", MANIFEST_MAX) : null;
  if (pyText !== null) {
    try {
      const t = Bun.TOML.parse(pyText) as Record<string, unknown>;
      const project = table(t.project);
      const poetry = table(table(t.tool)?.poetry);
      pyproject = {
        project: project !== null,
        buildSystem: table(t["build-system"]) !== null,
        poetry: poetry !== null,
        dependencies: [
          ...strings(project?.dependencies),
          ...Object.keys(table(poetry?.dependencies) ?? {}),
          ...Object.keys(table(poetry?.["dev-dependencies"]) ?? {}),
        ],
        extras: lists(project?.["optional-dependencies"]),
        groups: {
          ...lists(t["dependency-groups"]),
          ...Object.fromEntries(Object.entries(table(poetry?.group) ?? {}).map(([k, g]) => [k, Object.keys(table(table(g)?.dependencies) ?? {})])),
        },
      };
    } catch {
      pyprojectInvalid = true;
    }
  } else if (names.includes("pyproject.toml")) pyprojectInvalid = true;
  const requirements: Record<string, string> = {};
  for (const name of names) if (/^(requirements\/[\w.-]+|[^/]*requirements[\w.-]*)\.txt$/.test(name)) requirements[name] = read(name, MANIFEST_MAX) ?? "";
  const nodeBins = o.bins && names.includes("package-lock.json") ? lockBins(read("package-lock.json", LOCKFILE_MAX)) : [];
  return {
    files: [...names],
    packageJson,
    yarnBerry,
    pyproject,
    ...(pyprojectInvalid ? { pyprojectInvalid } : {}),
    requirements,
    onPath,
    ...(nodeBins.length ? { nodeBins } : {}),
  };
}

/** The names package-lock.json's packages put in node_modules/.bin (each entry's `bin`), of its top-level packages. */
function lockBins(text: string | null): string[] {
  try {
    const packages = table(table(JSON.parse(text ?? "null"))?.packages) ?? {};
    const out = new Set<string>();
    for (const [path, entry] of Object.entries(packages)) {
      // Only node_modules/<name> and node_modules/@scope/<name>: their bins are linked at the top.
      if (!/^node_modules\/(@[^/]+\/)?[^/]+$/.test(path)) continue;
      const bin = table(entry)?.bin;
      if (typeof bin === "string") out.add(path.slice(path.lastIndexOf("/") + 1));
      else for (const name of Object.keys(table(bin) ?? {})) out.add(name);
    }
    return [...out];
  } catch {
    return [];
  }
}

/**
 * The names at a commit's root, and those of its `requirements/` folder (where many Python projects
 * keep their pinned requirements), and a reader of its files (blobs only: a link or a folder reads as null).
 */
export function commitRoot(repo: string, commit: string): { names: string[]; read: ReadFile } {
  const entries = new Map<string, { type: string; id: string }>();
  const list = (args: string[]) => {
    const r = gitTry(repo, ["ls-tree", "-z", commit, ...args]);
    if (r.code === 0)
      for (const line of r.stdout.split("\0")) {
        const m = /^(\d+) (\w+) ([0-9a-f]+)\t(.+)$/s.exec(line);
        if (m) entries.set(m[4]!, { type: m[1] === "120000" ? "link" : m[2]!, id: m[3]! });
      }
  };
  list([]);
  if (entries.get(REQUIREMENTS_DIR)?.type === "tree") list(["--", `${REQUIREMENTS_DIR}/`]);
  const read: ReadFile = (name, max) => {
    const e = entries.get(name);
    if (e?.type !== "blob") return null;
    const size = gitTry(repo, ["cat-file", "-s", e.id]);
    if (size.code !== 0 || Number(size.stdout.trim()) > max) return null;
    const blob = gitTry(repo, ["cat-file", "blob", e.id]);
    return blob.code === 0 ? blob.stdout : null;
  };
  return { names: [...entries.keys()], read };
}
