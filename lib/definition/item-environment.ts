// The item's environment is the item's own (docs/runners.md#the-items-own-environment): nothing in
// the environment of an item's setup, agent or verify points into the repository's main checkout or
// another worktree, and what setup made in the checkout comes first. Pure: an environment and the
// checkout's place in, the environment out with what was dropped and why (`loop logs --verify`
// shows it). Applied after the policy (child-environment.ts childEnvironment), and again by the
// session wrapper on what it was given: applying it twice gives what applying it once gives.

/** Where an item's process runs, and what must not reach it. */
export interface CheckoutPlace {
  /** The item's checkout, as the child sees it (the sandbox binds it at the same path). */
  checkout: string;
  /** Folders no variable may name a path in, but for `checkout`: the main checkout, the loop's worktrees folder, as given and as their real paths. */
  foreign: string[];
  /** The checkout's virtualenv (relative, `.venv`): VIRTUAL_ENV names it; null: none. */
  venv: string | null;
  /** Folders of the checkout (relative) put first on PATH, in order: the venv's `bin`, `node_modules/.bin`. */
  bins: string[];
}

/** Why a variable was dropped. */
type DropWhy = "activated_environment" | "names_another_checkout" | "npm_run";

export interface Dropped {
  name: string;
  why: DropWhy;
}

interface ItemEnvironment {
  env: Record<string, string>;
  /** Variables dropped, in name order. */
  dropped: Dropped[];
  /** PATH (or PYTHONPATH, NODE_PATH) entries removed, as `NAME: entry`. */
  removed: string[];
}

/**
 * The operator's active environment, whatever it points at: an activated virtualenv or conda
 * environment (its `bin` leaves PATH too), and what makes Python or uv use another environment
 * than the checkout's (uv's project environment, PYTHONHOME, pipenv's and poetry's shells).
 */
const ACTIVATED: readonly string[] = [
  "VIRTUAL_ENV",
  "VIRTUAL_ENV_PROMPT",
  "CONDA_PREFIX",
  "CONDA_PREFIX_*",
  "CONDA_DEFAULT_ENV",
  "CONDA_PROMPT_MODIFIER",
  "CONDA_SHLVL",
  "PYTHONHOME",
  "__PYVENV_LAUNCHER__",
  "UV_PROJECT_ENVIRONMENT",
  "PIPENV_ACTIVE",
  "POETRY_ACTIVE",
];

/** The environment's own folders, whose `bin` is taken off PATH with them. */
const ENVIRONMENT_HOMES: readonly string[] = ["VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_PREFIX_*"];

/** What an `npm run` (or yarn's, bun's, pnpm's) around loop set: the operator's package, not the item's. */
const NPM_RUN: readonly string[] = ["npm_lifecycle_*", "npm_package_*", "npm_command", "npm_config_local_prefix", "INIT_CWD", "PROJECT_CWD"];

/** Lists of paths: entries in another checkout leave, the rest stays. */
const PATH_LISTS: readonly string[] = ["PATH", "PYTHONPATH", "NODE_PATH"];

/** Loop's own variables (set by loop, or for loop), and what atDirectory sets: never judged here. */
const OWN = (name: string) => name.startsWith("LOOP_") || name === "PWD";

function matches(pattern: string, name: string): boolean {
  return pattern.endsWith("*") ? name.startsWith(pattern.slice(0, -1)) : pattern === name;
}

const within = (p: string, dir: string) => {
  const d = dir.endsWith("/") && dir !== "/" ? dir.slice(0, -1) : dir;
  return p === d || p.startsWith(d === "/" ? "/" : d + "/");
};

/** Does `p` (absolute) lie in a foreign folder, and not in the checkout itself? */
function foreignPath(p: string, place: CheckoutPlace): boolean {
  const clean = p.replace(/\/+$/, "") || "/";
  return !within(clean, place.checkout) && place.foreign.some((f) => f !== "/" && within(clean, f));
}

/** Does a value name a path in a foreign folder (anywhere in it: `-modfile=/x/go.mod`, `a:b`)? */
function namesForeign(value: string, place: CheckoutPlace): boolean {
  return value.split(/[\s:=,;"']+/).some((t) => t.startsWith("/") && foreignPath(t, place));
}

const join = (dir: string, rel: string) => (dir.endsWith("/") ? dir + rel : `${dir}/${rel}`);

/** The environment of an item's process: see the header. */
export function itemEnvironment(parent: Record<string, string>, place: CheckoutPlace): ItemEnvironment {
  const env: Record<string, string> = {};
  const dropped: Dropped[] = [];
  const removed: string[] = [];
  // The activated environments' bin folders: off PATH wherever they are.
  const homes = Object.entries(parent)
    .filter(([n, v]) => v && ENVIRONMENT_HOMES.some((p) => matches(p, n)))
    .map(([, v]) => v.replace(/\/+$/, ""));
  const ownBins = place.bins.map((b) => join(place.checkout, b));
  for (const name of Object.keys(parent).sort()) {
    const value = parent[name]!;
    if (OWN(name)) {
      env[name] = value;
      continue;
    }
    if (ACTIVATED.some((p) => matches(p, name))) {
      dropped.push({ name, why: "activated_environment" });
      continue;
    }
    if (NPM_RUN.some((p) => matches(p, name))) {
      dropped.push({ name, why: "npm_run" });
      continue;
    }
    if (PATH_LISTS.includes(name)) {
      const kept: string[] = [];
      for (const entry of value.split(":")) {
        const clean = entry.replace(/\/+$/, "");
        const gone = entry.startsWith("/") && (foreignPath(entry, place) || homes.some((h) => clean === `${h}/bin` || clean === `${h}/Scripts`));
        // The checkout's own first entries are put back first below, once.
        if (name === "PATH" && ownBins.includes(clean)) continue;
        if (gone) removed.push(`${name}: ${entry}`);
        else kept.push(entry);
      }
      if (name === "PATH") env[name] = [...ownBins, ...kept].join(":");
      else if (kept.length) env[name] = kept.join(":");
      else dropped.push({ name, why: "names_another_checkout" });
      continue;
    }
    if (namesForeign(value, place)) {
      dropped.push({ name, why: "names_another_checkout" });
      continue;
    }
    env[name] = value;
  }
  if (env.PATH === undefined && ownBins.length) env.PATH = ownBins.join(":");
  if (place.venv !== null) env.VIRTUAL_ENV = join(place.checkout, place.venv);
  // The checkout's own venv named again is no drop: it is what the operator's was replaced with.
  const shown = place.venv !== null ? dropped.filter((d) => !(d.name === "VIRTUAL_ENV" && parent.VIRTUAL_ENV === env.VIRTUAL_ENV)) : dropped;
  return { env, dropped: shown, removed };
}
