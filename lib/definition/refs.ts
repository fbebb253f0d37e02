// Work-item refs (docs/loop-json.md#work-item-refs): `<provider>:[<host>/]<owner>/<repo>#<number>`;
// a GitLab project's path may be nested (`gitlab:[<host>/]group/subgroup/project#<iid>`); a
// tracker's issue is named by its key (`linear:ENG-123`, `jira:PROJ-42`: docs/trackers.md#refs).
// Refs come from the command line and loop.json, so anything outside the grammar is rejected with
// a message naming the offending part; nothing is ever sanitized. The canonical form is the
// identity used for deduplication. No path is built from a ref: paths come from item ids.
import { RefError } from "../shared/errors.ts";

export interface WorkItemRef {
  provider: string;
  /** Lowercased host with optional `:port`; null when absent or the provider's default. */
  host: string | null;
  /** The namespace: a GitHub owner, or a GitLab group path (`group/subgroup`, slashes included); "" for a tracker's key. */
  owner: string;
  /** The repository, or a tracker's team or project key (`ENG`, `PROJ`). */
  repo: string;
  number: number;
  canonical: string;
}

type Selector = { kind: "id"; id: string } | { kind: "ref"; ref: WorkItemRef };

const MAX_REF_LENGTH = 256;
const MAX_ID_LENGTH = 64;
const DEFAULT_HOSTS: Record<string, string> = { github: "github.com", gitlab: "gitlab.com" };
/** Providers whose repositories may sit in nested namespaces, and how deep (GitLab: up to 20 levels of groups). */
const MAX_NAMESPACE_DEPTH: Record<string, number> = { gitlab: 20 };

const PROVIDER = /^[a-z][a-z0-9-]*$/;
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
const HOST_LABEL = /^[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?$/;
const DIGITS = /^[0-9]+$/;
const ITEM_ID = /^[a-z0-9][a-z0-9-]*(?:[._][a-z0-9-]+)*$/;
const REF_SHAPE = "<provider>:[<host>/]<owner>/<repo>#<number>";

// Quote a value for an error message so control, non-ASCII and bidi characters cannot reach a terminal raw.
function quote(s: string): string {
  return JSON.stringify(s).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

function codePoint(c: string): string {
  return `U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}`;
}

export function parseRef(input: string): WorkItemRef {
  const fail = (why: string): never => {
    throw new RefError(`invalid work-item ref ${quote(input)}: ${why}`, input);
  };

  if (input.length === 0) fail("empty");
  if (input.length > MAX_REF_LENGTH) fail(`longer than ${MAX_REF_LENGTH} characters`);
  for (let i = 0; i < input.length; i++) {
    const c = input[i]!;
    if (/\s/.test(c)) fail(`whitespace (${codePoint(c)}) at offset ${i}`);
    if (c < " " || c === "\x7f") fail(`control character (${codePoint(c)}) at offset ${i}`);
    if (c > "\x7f") fail(`non-ASCII character (${codePoint(c)}) at offset ${i}`);
    if (c === "\\") fail(`backslash at offset ${i}`);
  }
  if (input.startsWith("-")) fail("must not start with '-'");
  if (input.startsWith("/")) fail("must not start with '/'");

  const colon = input.indexOf(":");
  if (colon < 0) fail(`missing provider (expected ${REF_SHAPE})`);
  const provider = input.slice(0, colon);
  if (provider === "") fail("missing provider before ':'");
  if (!PROVIDER.test(provider)) fail(`provider ${quote(provider)} must match [a-z][a-z0-9-]*`);

  const rest = input.slice(colon + 1);
  if (KEYED.has(provider)) return keyedRef(provider, rest, fail);
  const hash = rest.indexOf("#");
  if (hash < 0) fail(`missing '#<number>' (expected ${REF_SHAPE})`);
  const path = rest.slice(0, hash);
  const digits = rest.slice(hash + 1);

  if (path === "") fail("missing <owner>/<repo>");
  if (path.startsWith("/")) fail("path must not start with '/'");
  const segments = path.split("/");
  if (segments.some((s) => s === "")) fail(`empty path segment in ${quote(path)}`);
  for (const s of segments) if (s.includes("..")) fail(`path segment ${quote(s)} must not contain '..'`);
  if (segments.length === 1) fail(`missing repo (expected <owner>/<repo>, got ${quote(path)})`);
  // A first segment holding a dot or a colon is a host (a GitLab group whose path holds a dot
  // therefore needs its host written, e.g. gitlab:gitlab.com/my.group/project#1).
  const hasHost = segments.length > 2 && /[.:]/.test(segments[0]!);
  const depth = MAX_NAMESPACE_DEPTH[provider] ?? 1;
  if (segments.length - (hasHost ? 1 : 0) > depth + 1)
    fail(
      depth === 1
        ? `too many path segments in ${quote(path)} (expected [<host>/]<owner>/<repo>; a host contains a dot)`
        : `too many path segments in ${quote(path)} (expected [<host>/]<group>/.../<project>, at most ${depth} levels of groups; a host contains a dot)`,
    );

  const names = segments.slice(hasHost ? 1 : 0);
  const repo = names.at(-1)!;
  const owner = names.slice(0, -1).join("/");
  let host = hasHost ? parseHost(segments[0]!, fail) : null;
  if (host !== null && host === DEFAULT_HOSTS[provider]) host = null;
  for (const o of names.slice(0, -1)) checkName("owner", o, fail);
  checkName("repo", repo, fail);

  if (digits === "") fail("missing number after '#'");
  if (!DIGITS.test(digits)) fail(`number ${quote(digits)} must be decimal digits`);
  const number = Number(digits);
  if (number < 1) fail("number must be at least 1");
  if (!Number.isSafeInteger(number)) fail(`number must be at most ${Number.MAX_SAFE_INTEGER}`);

  const canonical = `${refPrefix({ provider, host, path: `${owner}/${repo}` })}#${number}`;
  return { provider, host, owner, repo, number, canonical };
}

/** Trackers whose issues are named `<KEY>-<number>` (lib/definition/tracker-kinds.ts KEYED_TRACKERS). */
const KEYED = new Set(["linear", "jira"]);

/** `linear:ENG-123`, `jira:PROJ-42`: the key in capitals (as the tracker shows it), the number at least 1. */
function keyedRef(provider: string, rest: string, fail: (why: string) => never): WorkItemRef {
  const m = /^([A-Za-z][A-Za-z0-9_]*)-([0-9]+)$/.exec(rest);
  if (!m) return fail(`a ${provider} issue is <KEY>-<number> (expected ${provider}:ENG-123)`);
  const key = m[1]!.toUpperCase();
  if (key.length > 10) fail(`key ${quote(m[1]!)} is longer than 10 characters`);
  const number = Number(m[2]!);
  if (number < 1) fail("number must be at least 1");
  if (!Number.isSafeInteger(number)) fail(`number must be at most ${Number.MAX_SAFE_INTEGER}`);
  return { provider, host: null, owner: "", repo: key, number, canonical: `${provider}:${key}-${number}` };
}

/**
 * `<provider>:[<host>/]<path>`, the part of a canonical ref before `#`: the host is left out when it
 * is the provider's default, unless the path's first segment holds a dot (it would read as a host).
 */
export function refPrefix(o: { provider: string; host: string | null; path: string }): string {
  const host = o.host ?? (/[.:]/.test(o.path.split("/")[0]!) && o.path.includes("/", o.path.indexOf("/") + 1) ? (DEFAULT_HOSTS[o.provider] ?? null) : null);
  return `${o.provider}:${host === null ? "" : `${host}/`}${o.path}`;
}

function checkName(part: string, value: string, fail: (why: string) => never): void {
  if (!/^[A-Za-z0-9]/.test(value)) fail(`${part} ${quote(value)} must start with a letter or digit`);
  if (!NAME.test(value)) fail(`${part} ${quote(value)} may contain only letters, digits, '.', '_' and '-'`);
}

/** Returns the canonical host: lowercased, port without leading zeros. */
function parseHost(segment: string, fail: (why: string) => never): string {
  const colon = segment.indexOf(":");
  const name = colon < 0 ? segment : segment.slice(0, colon);
  const labels = name.split(".");
  if (labels.length < 2) fail(`host ${quote(name)} must be a dotted hostname`);
  for (const label of labels) {
    if (label === "") fail(`host ${quote(name)} has an empty label`);
    if (label.length > 63) fail(`host label ${quote(label)} is longer than 63 characters`);
    if (!HOST_LABEL.test(label)) fail(`host label ${quote(label)} must be letters, digits and inner '-'`);
  }
  if (colon < 0) return name.toLowerCase();

  const port = segment.slice(colon + 1);
  if (!DIGITS.test(port)) fail(`port ${quote(port)} must be decimal digits`);
  const portNumber = Number(port);
  if (portNumber < 1 || portNumber > 65535) fail(`port ${port} is out of range 1..65535`);
  return `${name.toLowerCase()}:${portNumber}`;
}

export function tryParseRef(input: string): WorkItemRef | RefError {
  try {
    return parseRef(input);
  } catch (e) {
    if (e instanceof RefError) return e;
    throw e;
  }
}

export function isItemId(s: string): boolean {
  return s.length <= MAX_ID_LENGTH && ITEM_ID.test(s);
}

/** `<repo>-<number>`, reduced to [a-z0-9-] so it is always a valid item id. */
export function itemIdFromRef(ref: WorkItemRef): string {
  const suffix = `-${ref.number}`;
  const base =
    ref.repo
      .toLowerCase()
      .replace(/[^a-z0-9-]+/g, "-")
      .replace(/-+/g, "-")
      .replace(/^-|-$/g, "")
      .slice(0, MAX_ID_LENGTH - suffix.length)
      .replace(/-$/, "") || "item";
  return base + suffix;
}

/** A `--work-item` value: a ref when it contains ':', otherwise an item id. */
export function parseSelector(input: string): Selector {
  if (input.includes(":")) return { kind: "ref", ref: parseRef(input) };
  if (isItemId(input)) return { kind: "id", id: input };

  const fail = (why: string): never => {
    throw new RefError(`invalid work-item ${quote(input)}: ${why}`, input);
  };
  if (input === "") fail("empty");
  if (/[/#]/.test(input)) fail(`a ref needs a provider (expected ${REF_SHAPE})`);
  if (input.length > MAX_ID_LENGTH) fail(`item id is longer than ${MAX_ID_LENGTH} characters`);
  return fail("not an item id (lowercase letters, digits and '-', with single '.' or '_' between them)" + ` and not a ref (${REF_SHAPE})`);
}
