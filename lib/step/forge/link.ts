// A step's connection to its loop's forge (docs/forge.md): the provider, opened on first use and
// only in a loop with a `forge` section; the token read from the variable loop.json names; and the
// forge cache, a file under the state root holding what is not truth but saves requests (ETags
// and their bodies, the comment cursor, when a rate limit ends). Losing the file costs requests,
// never correctness: what was acted on is in the log.
import {
  type ConditionalCache,
  describeFailure,
  type ForgeFailure,
  type ForgeProvider,
  type KeyedTrackerClient,
  RATE_LIMIT_CAP_MS,
  type Tracker,
} from "../../forge/provider.ts";
import { statSync } from "node:fs";
import { join } from "node:path";
import { openForge, openTracker } from "../../forge/open.ts";
import { authorized, isLogin } from "../../forge/comments.ts";
import { readJsonOrNull, writeFileAtomic } from "../../shared/fsutil.ts";
import { forgeTimeout } from "../../forge/timeout.ts";
import {
  ETAG_ENTRIES,
  ETAG_ENTRY_BYTES,
  ETAG_TOTAL_BYTES,
  PERMISSION_CACHE_ENTRIES,
  PERMISSION_CACHE_MS,
  PERMISSION_READS_PER_STEP,
} from "../../forge/bounds.ts";
import type { StepContext } from "../context.ts";

interface CacheFile {
  etags: Record<string, { etag: string; body: unknown }>;
  /**
   * The `since` of the next comment listing, when it is later than what the log gives (it moved over
   * comments that needed nothing), and when the comments were last read (epoch ms).
   */
  comments: { since: string | null; polledAt: number };
  /** Epoch ms before which no request is made: a rate limit said so. */
  rateLimitedUntil: number;
  /** Item id → when reading its issue before launch first failed (epoch ms): the start of that wait's deadline. */
  launchWaits: Record<string, number>;
  /** Login → whether it may write, and when that was read (epoch ms): kept PERMISSION_CACHE_MS, at most PERMISSION_CACHE_ENTRIES. */
  permissions: Record<string, { writer: boolean; at: number }>;
  /** When the live tracker query last read the filter's issues (epoch ms; docs/trackers.md#live-query). */
  queriedAt: number;
}

export interface ForgeLink {
  provider: ForgeProvider;
  /**
   * Where the items' issues and their comments are (docs/trackers.md): the forge itself, or the
   * Linear or Jira client loop.json's `tracker` names (then `keyed` too).
   */
  tracker: Tracker;
  /** The Linear or Jira tracker, which also moves issues; null when the forge is the tracker. */
  keyed: KeyedTrackerClient | null;
  /** The name comment actors are recorded under (`<trackerName>:<login>`): the tracker's provider. */
  trackerName: string;
  /** Milliseconds between two reads of the issues' comments: the tracker's pollInterval. */
  pollInterval: number;
  cache: CacheFile;
  /** Write the cache file (the step calls it once it is done with the forge). */
  save(): void;
  /** A rate limit is in force: the message to report, or null. */
  limited(): string | null;
  /**
   * Record a failure: a rate limit is remembered; returns the failure as one line. Said on stderr
   * unless `o.quiet` (the caller says it once, in its own words).
   */
  failed(f: ForgeFailure, o?: { quiet?: boolean }): string;
  /**
   * Whether a login may steer the loop (lib/forge/comments.ts authorized); permissions read at
   * most PERMISSION_READS_PER_STEP times a step, each kept a while (docs/forge.md#comments). null:
   * its permission could not be read (said), so it is neither yes nor no yet.
   */
  authorized(login: string): Promise<boolean | null>;
  /** Why the last permission that could not be read was not: a rate limit (a wait), the step's budget spent, or another failure. */
  permissionUnread: { kind: "rate_limited" | "budget" | "failed"; message: string } | null;
}

const links = new WeakMap<StepContext, ForgeLink>();

function forgeCachePath(stateRoot: string): string {
  return join(stateRoot, "forge-cache.json");
}

/** The step's forge link; opened once per step. Null for a loop without a forge. */
export async function forgeLink(ctx: StepContext): Promise<ForgeLink | null> {
  const settings = ctx.def.forge;
  if (!settings) return null;
  const known = links.get(ctx);
  if (known) return known;
  const path = forgeCachePath(ctx.options.stateRoot);
  // A cache file far larger than the cache keeps (written before it was bounded) is not read: it only saves requests.
  const big = (statSync(path, { throwIfNoEntry: false })?.size ?? 0) > 2 * ETAG_TOTAL_BYTES + 1024 * 1024;
  if (big) ctx.options.log.warn(`forge: ${path} is larger than the forge cache keeps; starting it afresh (it only saves requests)`);
  const read = big ? null : readJsonOrNull<CacheFile>(path);
  const cache: CacheFile = {
    etags: read?.etags && typeof read.etags === "object" ? read.etags : {},
    comments: read?.comments ?? { since: null, polledAt: 0 },
    // A limit from an older cache (or a damaged one) holds no longer than the cap from now.
    rateLimitedUntil:
      typeof read?.rateLimitedUntil === "number" && Number.isFinite(read.rateLimitedUntil)
        ? Math.min(read.rateLimitedUntil, Date.now() + RATE_LIMIT_CAP_MS)
        : 0,
    launchWaits: read?.launchWaits && typeof read.launchWaits === "object" ? read.launchWaits : {},
    permissions: read?.permissions && typeof read.permissions === "object" ? read.permissions : {},
    queriedAt: typeof read?.queriedAt === "number" && Number.isFinite(read.queriedAt) ? read.queriedAt : 0,
  };
  // Bounded in entries and bytes (docs/forge.md#bounds): an answer too large to keep is asked again whole.
  const sizes = new Map<string, number>();
  const sizeOf = (k: string) => sizes.get(k) ?? (sizes.set(k, JSON.stringify(cache.etags[k] ?? null).length), sizes.get(k)!);
  const fit = () => {
    let keys = Object.keys(cache.etags);
    for (const old of keys.slice(0, Math.max(0, keys.length - ETAG_ENTRIES))) delete cache.etags[old];
    keys = Object.keys(cache.etags);
    let total = keys.reduce((n, k) => n + sizeOf(k), 0);
    for (const k of keys) {
      if (total <= ETAG_TOTAL_BYTES) break;
      total -= sizeOf(k);
      delete cache.etags[k];
    }
  };
  fit();
  const conditional: ConditionalCache = {
    get: (k) => (Object.hasOwn(cache.etags, k) ? cache.etags[k] : undefined),
    set: (k, e) => {
      delete cache.etags[k];
      sizes.delete(k);
      const size = JSON.stringify(e).length;
      if (size > ETAG_ENTRY_BYTES) return;
      cache.etags[k] = e;
      sizes.set(k, size);
      fit();
    },
  };
  const token = ctx.options.env[settings.tokenEnv] || null;
  if (!token) ctx.options.log.warn(`forge: $${settings.tokenEnv} is not set; requests go unauthenticated (nothing can be opened, commented on or merged)`);
  const provider = await openForge({
    settings,
    token,
    cache: conditional,
    timeoutMs: forgeTimeout(ctx.options.env, ctx.options.log.warn),
    notice: (m) => ctx.options.log.warn(`forge: ${m}`),
  });
  // A Linear or Jira tracker: its own client, its own key (one of loop's secrets, like the forge's).
  const trackerDef = ctx.def.tracker;
  const keyed = trackerDef
    ? await openTracker({
        settings: trackerDef,
        token: ctx.options.env[trackerDef.tokenEnv] || null,
        timeoutMs: forgeTimeout(ctx.options.env, ctx.options.log.warn),
      })
    : null;
  if (trackerDef && !ctx.options.env[trackerDef.tokenEnv])
    ctx.options.log.warn(`tracker: $${trackerDef.tokenEnv} is not set; ${trackerDef.provider} will refuse loop's requests`);
  const link: ForgeLink = {
    authorized: async () => null,
    permissionUnread: null,
    provider,
    tracker: keyed ?? provider,
    keyed,
    trackerName: trackerDef?.provider ?? settings.provider,
    pollInterval: trackerDef?.pollInterval ?? settings.pollInterval,
    cache,
    save: () => writeFileAtomic(path, JSON.stringify(cache) + "\n"),
    limited: () => (Date.now() < cache.rateLimitedUntil ? `forge rate limit: no request before ${new Date(cache.rateLimitedUntil).toISOString()}` : null),
    failed: (f, o) => {
      const line = describeFailure(f);
      if (f.kind === "rate_limited") cache.rateLimitedUntil = Math.max(cache.rateLimitedUntil, f.retryAt);
      if (!o?.quiet) ctx.options.log.warn(`forge: ${line}${f.kind === "rate_limited" ? "; nothing changed, a later step goes on" : ""}`);
      return line;
    },
  };
  let reads = 0;
  link.authorized = async (login) => {
    // Linear and Jira: loop.json's tracker.authorizedUsers, read by the client itself (it never asks the tracker).
    if (keyed) {
      const r = await keyed.canWrite(login);
      return r.ok ? r.value : unread({ kind: "failed", message: link.failed(r) });
    }
    const who = { provider: settings.provider, login, allow: settings.authorizedUsers };
    if (authorized({ ...who, authorizeWriters: false, writer: null })) return true;
    if (!settings.authorizeWriters || !isLogin(settings.provider, login)) return false;
    const known = Object.hasOwn(cache.permissions, login) ? cache.permissions[login]! : undefined;
    if (!known || !(Date.now() - known.at < PERMISSION_CACHE_MS)) {
      // A storm of commenters costs a bounded number of requests a step; the rest are asked on later steps.
      const limited = link.limited();
      if (limited) return unread({ kind: "rate_limited", message: limited });
      if (reads >= PERMISSION_READS_PER_STEP)
        return unread({ kind: "budget", message: `more than ${PERMISSION_READS_PER_STEP} permissions to read this step; the rest are read on later steps` });
      reads++;
      const r = await provider.canWrite(login);
      // Not read: not authorized now (fail closed), not cached, and said to be unknown, so the
      // comment is asked about again later instead of being dropped.
      if (!r.ok) return unread({ kind: r.kind === "rate_limited" ? "rate_limited" : "failed", message: link.failed(r) });
      delete cache.permissions[login];
      cache.permissions[login] = { writer: r.value, at: Date.now() };
      const logins = Object.keys(cache.permissions);
      for (const old of logins.slice(0, Math.max(0, logins.length - PERMISSION_CACHE_ENTRIES))) delete cache.permissions[old];
    }
    return authorized({ ...who, authorizeWriters: true, writer: cache.permissions[login]?.writer ?? null });
  };
  const unread = (u: NonNullable<ForgeLink["permissionUnread"]>): null => {
    link.permissionUnread = u;
    return null;
  };
  links.set(ctx, link);
  return link;
}

/** Save the step's forge cache, if it opened one. */
export function saveForgeLink(ctx: StepContext): void {
  links.get(ctx)?.save();
}
