// Pass 2 of validating loop.json (lib/definition/normalize.ts): the rules across fields (ids, refs,
// uniqueness, dependencies and their cycles, runners, verify defaults, secrets, the forge's refs),
// run on the raw value with per-field guards, so a badly-typed field elsewhere does not hide them.
import { isItemId, itemIdFromRef, parseRef, refPrefix } from "./refs.ts";
import { RefError } from "../shared/errors.ts";
import { BUILTIN_SECRETS } from "./child-environment.ts";
import { formatJsonPath } from "./json-strict.ts";
import { hasHidden, hiddenIn } from "../shared/untrusted-text.ts";
import { closest } from "../shared/suggest.ts";
import { DEFAULTS, KNOWN_RUNNERS } from "./normalized.ts";
import { FORGE_KINDS, forgeHost, type ForgeKind, isForgeLogin, KIND } from "./forge-kinds.ts";
import { isKeyedTracker, TRACKER_KIND } from "./tracker-kinds.ts";
import { branchNameProblem, branchNameReason, defaultTarget, itemBranch } from "./branches.ts";

// ---------------------------------------------------------------------------------------------
// Pass 2: rules across fields.

export interface Resolved {
  id: string | null;
  /** Canonical ref. */
  ref: string | null;
  /** The id came from the ref, not from an "id" key. */
  derived: boolean;
}

type Obj = Record<string, unknown>;
type Add = (path: string, message: string) => void;
export const isObj = (x: unknown): x is Obj => typeof x === "object" && x !== null && !Array.isArray(x);

/** Checks the cross-field rules, adding issues; returns each item's resolved id and canonical ref. */
export function checkMeaning(raw: Obj, add: Add): Resolved[] {
  const defaults = isObj(raw.defaults) ? raw.defaults : {};
  const workspace = isObj(raw.workspace) ? raw.workspace : {};

  // A command runner cannot take a built-in's name: `runner: "claude"` always means the preset.
  if (isObj(raw.runners))
    for (const name of KNOWN_RUNNERS)
      if (Object.hasOwn(raw.runners, name)) add(`runners.${name}`, `${JSON.stringify(name)} is a built-in runner; pick another name`);

  // valibot's record() skips these keys (they could change an object's prototype), so their values
  // would go unchecked and the runner silently vanish from the normalized definition.
  if (isObj(raw.runners))
    for (const name of ["constructor", "prototype", "__proto__"])
      if (Object.hasOwn(raw.runners, name)) add(`runners.${name}`, `${JSON.stringify(name)} cannot be a runner name; pick another`);

  // As for runners: valibot's record() skips these keys, so a price under one would vanish unchecked.
  if (isObj(raw.prices))
    for (const name of ["constructor", "prototype", "__proto__"])
      if (Object.hasOwn(raw.prices, name)) add(`prices.${name}`, `${JSON.stringify(name)} cannot be a model name here`);

  // Runner names the definition may use; null when `runners` is malformed (already reported by pass 1).
  const runnerNames =
    raw.runners === undefined
      ? [...KNOWN_RUNNERS]
      : isObj(raw.runners)
        ? [...new Set([...KNOWN_RUNNERS, ...Object.keys(raw.runners).filter((n) => isItemId(n) && n !== "constructor" && n !== "prototype")])]
        : null;
  const checkRunner = (path: string, runner: unknown) => {
    if (typeof runner === "string" && runnerNames && !runnerNames.includes(runner))
      add(path, `unknown runner ${JSON.stringify(runner)} (known: ${runnerNames.join(", ")})`);
  };
  checkRunner("defaults.runner", defaults.runner);

  // Branches: items work on loop/<name>/item/<id>; landing "merge" merges into the target, by
  // default loop/<name>/landed. Neither base nor target may collide with an item branch, and landing
  // must never merge into the base (with the default target too), which is the branch an operator
  // most likely has checked out. A name that is an id can still break every branch of the loop
  // ("x.lock"); it is then reported once, here, and the branches built from it are not checked.
  let name = typeof raw.name === "string" && isItemId(raw.name) ? raw.name : null;
  const nameProblem = name === null ? undefined : branchNameReason(`loop/${name}`);
  if (nameProblem !== undefined) {
    add("name", `cannot be used in branch names: ${JSON.stringify(itemBranch(name!, "<id>"))} ${nameProblem}`);
    name = null;
  }
  const base = typeof workspace.base === "string" ? workspace.base : DEFAULTS.base;
  // git cannot hold a branch and another branch below it, so "loop/<name>" collides too.
  const checkNotItemBranch = (path: string, branch: unknown) => {
    if (name === null || typeof branch !== "string" || branchNameProblem(branch)) return;
    const prefix = itemBranch(name, "");
    if (branch.startsWith(prefix) || prefix.startsWith(`${branch}/`))
      add(path, `${JSON.stringify(branch)} would collide with the item branches ${JSON.stringify(itemBranch(name, "<id>"))}`);
  };
  checkNotItemBranch("workspace.base", workspace.base);
  checkNotItemBranch("workspace.target", workspace.target);
  if (typeof workspace.target === "string" && workspace.target === base) add("workspace.target", `must differ from the base branch ${JSON.stringify(base)}`);
  if (workspace.target === undefined && name !== null && base === defaultTarget(name))
    add("workspace.base", `must differ from the merge target ${JSON.stringify(base)} (or set "workspace.target")`);

  const items = Array.isArray(raw.items) ? raw.items : [];
  const resolved = items.map((item, i) => resolveItem(item, `items[${i}]`, add));
  checkUniqueness(resolved, add);
  checkForge(raw, resolved, add);
  checkEnvironment(raw, add);
  checkHiddenText(raw, [], add);
  // An id may be a valid id but not a valid branch component ("x.lock"); derived ids never are.
  if (name !== null)
    resolved.forEach((r, i) => {
      if (r.id === null || !isItemId(r.id)) return;
      const why = branchNameProblem(itemBranch(name, r.id));
      if (why) add(r.derived ? `items[${i}].ref` : `items[${i}].id`, why);
    });
  const indexOf = new Map<string, number>();
  resolved.forEach((r, i) => r.id !== null && !indexOf.has(r.id) && indexOf.set(r.id, i));

  // A missing verify is an error only when the default is known to be absent (not merely malformed).
  // Nor when defaults holds a misspelling of it ("verfy"): its unknown-key error is the one problem, not a second.
  const misspelt = isObj(raw.defaults) && Object.keys(raw.defaults).some((k) => k !== "verify" && closest(k, ["verify"]) === "verify");
  const noDefaultVerify = (raw.defaults === undefined || isObj(raw.defaults)) && defaults.verify === undefined && !misspelt;
  const edges: number[][] = items.map(() => []);
  items.forEach((item, i) => {
    if (!isObj(item)) return;
    const at = `items[${i}]`;
    checkRunner(`${at}.runner`, item.runner);
    if (item.verify === undefined && noDefaultVerify)
      add(`${at}.verify`, 'no verify command and no default (set "verify": false to accept an agent exit 0 with a change on its branch)');
    if (!Array.isArray(item.dependsOn)) return;
    const seen = new Set<string>();
    item.dependsOn.forEach((dep: unknown, k: number) => {
      if (typeof dep !== "string") return;
      const path = `${at}.dependsOn[${k}]`;
      if (dep === resolved[i]!.id) add(path, `item ${JSON.stringify(dep)} depends on itself`);
      else if (!indexOf.has(dep)) add(path, `unknown item ${JSON.stringify(dep)}`);
      else if (seen.has(dep)) add(path, `duplicate dependency ${JSON.stringify(dep)}`);
      else edges[i]!.push(indexOf.get(dep)!);
      seen.add(dep);
    });
  });
  // workspace.stacked: each item depends on the one before it (lib/definition/normalize.ts), a cycle with a dependsOn on a later item.
  const ws = raw.workspace;
  if (isObj(ws) && ws.stacked === true) edges.forEach((e, i) => i > 0 && !e.includes(i - 1) && e.push(i - 1));
  for (const cycle of findCycles(edges)) {
    const ids = cycle.map((i) => resolved[i]!.id);
    add(`items[${cycle[0]}].dependsOn`, `dependency cycle ${[...ids, ids[0]].join(" -> ")}`);
  }
  return resolved;
}

/**
 * Loop's own secrets never reach what it starts: a variable named as one (built in, the forge's
 * and the tracker's tokenEnv, environment.secrets) cannot also be declared for a runner or passed (a pattern that
 * matches one is fine: the secret is still dropped).
 */
function checkEnvironment(raw: Obj, add: Add): void {
  const env = isObj(raw.environment) ? raw.environment : {};
  const forge = isObj(raw.forge) ? raw.forge : {};
  const secrets = new Set<string>([...BUILTIN_SECRETS, typeof forge.tokenEnv === "string" ? forge.tokenEnv : raw.forge !== undefined ? "GITHUB_TOKEN" : ""]);
  const tracker = isObj(raw.tracker) ? raw.tracker : {};
  if (isKeyedTracker(tracker.provider)) secrets.add(typeof tracker.tokenEnv === "string" ? tracker.tokenEnv : TRACKER_KIND[tracker.provider].tokenEnv);
  if (Array.isArray(env.secrets)) for (const s of env.secrets) if (typeof s === "string") secrets.add(s);
  const check = (path: string, list: unknown) => {
    if (!Array.isArray(list)) return;
    list.forEach((n, i) => {
      if (typeof n === "string" && secrets.has(n))
        add(`${path}[${i}]`, `${n} is one of loop's own secrets and never reaches an agent, a verify command or a planner; give them a variable of their own`);
    });
  };
  check("environment.pass", env.pass);
  if (isObj(raw.runners)) for (const [name, r] of Object.entries(raw.runners)) if (isObj(r)) check(`runners.${name}.environment`, r.environment);
}

/**
 * Rules of a loop with a forge: every ref names an issue of the forge's repository (a ref of
 * another provider or repository could not be read, answered or landed), and landing "pr" needs a
 * forge to open the PR on.
 */
function checkForge(raw: Obj, resolved: Resolved[], add: Add): void {
  // With a tracker of its own (Linear, Jira), refs name its issues, not the forge's (checkTracker).
  if (isObj(raw.tracker) && isKeyedTracker(raw.tracker.provider)) {
    checkTracker(raw.tracker, resolved, add);
    return checkForge({ ...raw, tracker: undefined }, [], add);
  }
  if (isObj(raw.tracker) && (raw.tracker.provider === "github" || raw.tracker.provider === "gitlab")) {
    const forge = isObj(raw.forge) ? raw.forge : null;
    if (forge?.provider !== raw.tracker.provider)
      add(
        "tracker.provider",
        `"${raw.tracker.provider}" is the forge's own tracker: it needs a "forge" section whose provider is "${raw.tracker.provider}"${forge ? ` (forge.provider is ${JSON.stringify(forge.provider)})` : ""}`,
      );
    for (const k of Object.keys(raw.tracker))
      if (k !== "provider" && k !== "$comment") add(`tracker.${k}`, `does not apply to the forge's own tracker (it is set in "forge")`);
  }
  if (isObj(raw.tracker) && raw.tracker.provider === "none") {
    for (const k of Object.keys(raw.tracker))
      if (k !== "provider" && k !== "$comment") add(`tracker.${k}`, 'does not apply to "none" (items come from loop.json alone)');
    resolved.forEach(
      (r, i) =>
        r.ref !== null &&
        add(`items[${i}].ref`, 'names an issue, but the tracker is "none": items come from loop.json alone (remove the ref, or name the tracker)'),
    );
    return checkForge({ ...raw, tracker: undefined }, [], add);
  }
  const defaults = isObj(raw.defaults) ? raw.defaults : {};
  const forge = isObj(raw.forge) ? raw.forge : null;
  if (raw.forge === undefined) {
    if (defaults.landing === "pr") add("defaults.landing", '"pr" needs a "forge" section to open pull requests on');
    if (raw.reactions !== undefined) add("reactions", 'needs a "forge" section: reactions are to what happens on pull requests');
    if (Array.isArray(raw.items))
      raw.items.forEach(
        (it, i) =>
          isObj(it) && it.reactions !== undefined && add(`items[${i}].reactions`, 'needs a "forge" section: reactions are to what happens on pull requests'),
      );
    return;
  }
  if (!forge || typeof forge.repo !== "string" || !(FORGE_KINDS as readonly unknown[]).includes(forge.provider)) return;
  const kind = KIND[forge.provider as ForgeKind];
  const depth = forge.repo.split("/").length - 1;
  if (depth > kind.depth) add("forge.repo", `must be "${kind.repoShape}" for ${forge.provider as string} (got ${depth + 1} segments)`);
  if (Array.isArray(forge.authorizedUsers))
    forge.authorizedUsers.forEach((u, i) => {
      if (typeof u === "string" && !isForgeLogin(forge.provider as ForgeKind, u)) add(`forge.authorizedUsers[${i}]`, `must be ${kind.loginRule}`);
    });
  const host = forgeHost(forge.provider as ForgeKind, typeof forge.apiUrl === "string" ? forge.apiUrl : kind.apiUrl);
  const want = `${refPrefix({ provider: forge.provider as string, host, path: forge.repo.toLowerCase() })}#`;
  resolved.forEach((r, i) => {
    if (r.ref === null) return;
    let parsed;
    try {
      parsed = parseRef(r.ref);
    } catch {
      return;
    }
    const canonical = `${refPrefix({ provider: parsed.provider, host: parsed.host, path: `${parsed.owner}/${parsed.repo}`.toLowerCase() })}#`;
    if (canonical !== want)
      add(
        `items[${i}].ref`,
        `${JSON.stringify(r.ref)} is not an issue of the forge's repository (forge.repo ${JSON.stringify(forge.repo)}${host ? ` on ${host}` : ""}): refs of a loop with a forge must be ${want}<number>`,
      );
  });
}

/**
 * Rules of a loop with Linear or Jira as its tracker (docs/trackers.md): its key (team or project),
 * Jira's site and email, users of its shape, and every ref one of its issues, `<provider>:<KEY>-<n>`.
 */
function checkTracker(t: Obj, resolved: Resolved[], add: Add): void {
  const kind = t.provider as "linear" | "jira";
  const rule = TRACKER_KIND[kind];
  const keyField = kind === "linear" ? "team" : "project";
  const other = kind === "linear" ? "project" : "team";
  if (t[other] !== undefined) add(`tracker.${other}`, `does not apply to ${kind} (its key is "${keyField}")`);
  if (kind === "linear") {
    if (t.email !== undefined) add("tracker.email", "does not apply to linear (its key alone authenticates)");
    if (t.jql !== undefined) add("tracker.jql", 'does not apply to linear (its filter is "team", "states" and "labels")');
  } else {
    if (t.tokenKind !== undefined) add("tracker.tokenKind", "does not apply to jira (Basic auth with email and API token)");
    if (t.apiUrl === undefined) add("tracker.apiUrl", "required for jira: the site, https://<site>.atlassian.net");
    if (t.email === undefined) add("tracker.email", "required for jira: the Atlassian account email its API token belongs to");
  }
  const key = t[keyField];
  if (key === undefined) add(`tracker.${keyField}`, `required for ${kind}: ${rule.keyRule}`);
  else if (typeof key === "string" && !rule.key.test(key)) add(`tracker.${keyField}`, `must be ${rule.keyRule}`);
  if (Array.isArray(t.authorizedUsers))
    t.authorizedUsers.forEach((u, i) => {
      if (typeof u === "string" && !rule.user.test(u)) add(`tracker.authorizedUsers[${i}]`, `must be ${rule.userRule}`);
    });
  if (typeof key !== "string" || !rule.key.test(key)) return;
  const want = `${kind}:${key}-`;
  resolved.forEach((r, i) => {
    if (r.ref !== null && !r.ref.startsWith(want))
      add(
        `items[${i}].ref`,
        `${JSON.stringify(r.ref)} is not an issue of the tracker (tracker.${keyField} ${JSON.stringify(key)}): refs of a loop with a ${kind} tracker must be ${want}<number>`,
      );
  });
}

function resolveItem(item: unknown, at: string, add: Add): Resolved {
  if (!isObj(item)) return { id: null, ref: null, derived: false };
  let ref: string | null = null;
  let fromRef: string | null = null;
  if (typeof item.ref === "string") {
    try {
      const parsed = parseRef(item.ref);
      ref = parsed.canonical;
      fromRef = itemIdFromRef(parsed);
    } catch (e) {
      if (!(e instanceof RefError)) throw e;
      add(`${at}.ref`, e.message);
    }
  }
  if (item.id === undefined && item.ref === undefined) add(at, 'needs an "id" (or a "ref" to derive one from)');
  if (item.id === undefined) return { id: fromRef, ref, derived: fromRef !== null };
  // A malformed explicit id is reported by pass 1; it still counts as a name so that its
  // dependents do not also get a misleading "unknown item".
  return { id: typeof item.id === "string" ? item.id : null, ref, derived: false };
}

/** Ids and canonical refs are identities: two items sharing one would share state, so both are errors. */
function checkUniqueness(resolved: Resolved[], add: Add): void {
  const firstRef = new Map<string, number>();
  const firstId = new Map<string, number>();
  const source = (r: Resolved) => (r.derived ? `derived from ref ${JSON.stringify(r.ref)}` : "explicit id");
  resolved.forEach((r, i) => {
    if (r.ref !== null) {
      const j = firstRef.get(r.ref);
      if (j === undefined) firstRef.set(r.ref, i);
      else add(`items[${i}].ref`, `duplicate ref ${JSON.stringify(r.ref)} (also items[${j}])`);
    }
    if (r.id === null) return;
    const j = firstId.get(r.id);
    if (j === undefined) return void firstId.set(r.id, i);
    const other = resolved[j]!;
    const id = JSON.stringify(r.id);
    if (!r.derived && !other.derived) add(`items[${i}].id`, `duplicate id ${id} (also items[${j}])`);
    else if (r.ref === other.ref)
      return; // same ref, same derived id: the duplicate ref names this pair
    else
      add(
        r.derived ? `items[${i}].ref` : `items[${i}].id`,
        `id ${id} (${source(r)}) collides with items[${j}] (${source(other)}); give one of them an explicit "id"`,
      );
  });
}

/** Each dependency cycle found by a depth-first walk, as item indexes in dependency order. */
function findCycles(edges: number[][]): number[][] {
  const state = edges.map(() => 0); // 0 unvisited, 1 on the stack, 2 done
  const stack: number[] = [];
  const cycles: number[][] = [];
  const visit = (u: number) => {
    state[u] = 1;
    stack.push(u);
    for (const w of edges[u]!) {
      if (state[w] === 1) cycles.push(stack.slice(stack.indexOf(w)));
      else if (state[w] === 0) visit(w);
    }
    stack.pop();
    state[u] = 2;
  };
  edges.forEach((_, u) => state[u] === 0 && visit(u));
  return cycles;
}

/**
 * loop.json stores no hidden characters (lib/shared/untrusted-text.ts): in a bidi-aware diff or
 * editor a right-to-left override can show a verify command reordered, and variation selectors or
 * tag characters can carry a message no reviewer sees into an agent's handoff. Every string, keys
 * and `$comment`s included, is checked; the first few offenders are named by code point.
 */
function checkHiddenText(value: unknown, at: readonly (string | number)[], add: Add): void {
  if (typeof value === "string") {
    const h = hiddenIn(value);
    if (h.count > 0)
      add(
        formatJsonPath(at),
        `holds ${h.count} hidden character${h.count === 1 ? "" : "s"} (${h.first.map((c) => `${c.codePoint} at character ${c.at}`).join(", ")}${h.count > h.first.length ? ", …" : ""}): loop.json stores none, since they can hide or reorder what a person reads; remove them`,
      );
  } else if (Array.isArray(value)) value.forEach((v, i) => checkHiddenText(v, [...at, i], add));
  else if (isObj(value))
    for (const [k, v] of Object.entries(value)) {
      if (hasHidden(k))
        add(
          formatJsonPath(at),
          `a key holds hidden characters (${hiddenIn(k)
            .first.map((c) => c.codePoint)
            .join(", ")}): loop.json stores none; remove them`,
        );
      checkHiddenText(v, [...at, k], add);
    }
}
