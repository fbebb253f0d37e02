// Where `loop plan --issues` and `loop add --from-issues` get their issues: an injectable source, so
// the planner does not depend on how a forge is reached. The real one is loop.json's tracker: a
// Linear "tracker" section (docs/trackers.md#linear: its filter selects the issues, the search is
// not Linear's) or a Jira one (docs/trackers.md#jira: its filter as JQL, the search more JQL ANDed
// to it), else the "forge" section (lib/forge/, docs/forge.md#issues-for-the-planner); without
// either both flags refuse (exit 2), and so does "none".
import { forgeHost } from "../definition/forge-kinds.ts";
import { loadDefinition } from "../definition/loop-json.ts";
import type { NormForge, NormTracker } from "../definition/normalized.ts";
import { refPrefix } from "../definition/refs.ts";
import { describeFailure, type ForgeResult, type Tracker } from "../forge/provider.ts";
import { sanitizeLine } from "../forge/untrusted.ts";
import { cleanText } from "../shared/untrusted-text.ts";
import { ForgeError, UsageError } from "../shared/errors.ts";
import { forgeTimeout } from "../forge/timeout.ts";
import type { Issue, PullRequest } from "./prompt.ts";
import type { DefaultRepo } from "./text-format.ts";

export interface IssueSource {
  /** Where `#N` points (the forge's repository); null for a tracker whose refs are keys (`linear:ENG-5`). */
  repo: DefaultRepo | null;
  /** The open issues matching a search (the forge's own search syntax). */
  searchOpenIssues(search: string): Promise<Issue[]>;
  /** The open pull requests (GitLab: merge requests), so the planner can skip issues one already covers. */
  openPullRequests(): Promise<PullRequest[]>;
}

/**
 * The issue source of the loop at `root`: its forge, or null when loop.json has no "forge" section.
 * A loop.json that does not load is null too: the verb itself reads it next and says what is wrong.
 * Nothing is asked of the forge until a flag needs it; the token is read from the variable the
 * section names, in `env`.
 */
export function configuredIssueSource(
  root: string,
  env: Record<string, string | undefined> = {},
  warn: (message: string) => void = () => {},
): IssueSource | null {
  let def;
  try {
    def = loadDefinition(root);
  } catch {
    return null;
  }
  const forge = def.forge ? forgeIssueSource(def.forge, env[def.forge.tokenEnv] || null, { warn, timeoutMs: forgeTimeout(env, warn) }) : null;
  if (def.tracker) return trackerIssueSource(def.tracker, env[def.tracker.tokenEnv] || null, forge, { warn, timeoutMs: forgeTimeout(env, warn) });
  if (def.trackerNone) return null;
  return forge;
}

/**
 * An IssueSource over a Linear or Jira tracker: the issues loop.json's filter selects, refs
 * `<provider>:<key>-<n>`; the open pull requests are the forge's, when there is one. Linear: the
 * search given is not Linear's, and is said to be ignored when it is not empty. Jira: the search is
 * JQL, ANDed to the filter's. Each client loads only when asked.
 */
function trackerIssueSource(
  settings: NormTracker,
  token: string | null,
  forge: IssueSource | null,
  o: { warn: (message: string) => void; timeoutMs?: number | undefined },
): IssueSource {
  const where = `the ${settings.provider} issues of ${settings.key}`;
  const timeout = o.timeoutMs !== undefined ? { timeoutMs: o.timeoutMs } : {};
  return {
    repo: null,
    async searchOpenIssues(search) {
      let tracker: Pick<Tracker, "searchOpenIssues">;
      if (settings.provider === "jira") {
        const { JiraTracker } = await import("../forge/jira.ts");
        tracker = new JiraTracker({ settings, token, ...timeout });
      } else {
        if (search.trim() !== "")
          o.warn(
            `tracker: ${JSON.stringify(sanitizeLine(search, 80))} is not used: Linear's issues are the ones loop.json's tracker selects (team, states, labels)`,
          );
        const { LinearTracker } = await import("../forge/linear.ts");
        tracker = new LinearTracker({ settings, token, ...timeout });
      }
      const what =
        settings.provider === "jira" && search.trim() !== "" ? `reading ${where} matching ${JSON.stringify(sanitizeLine(search, 200))}` : `reading ${where}`;
      const found = need(await tracker.searchOpenIssues(search), what, "tracker");
      for (const note of found.notes) o.warn(`tracker: reading ${where}: ${note}`);
      if (found.issues.length === 0) {
        const fields =
          settings.provider === "jira" ? "tracker.project, tracker.states, tracker.labels, tracker.jql" : "tracker.team, tracker.states, tracker.labels";
        o.warn(
          `tracker: reading ${where}: no open issue matches loop.json's filter (${fields}${settings.provider === "jira" && search.trim() !== "" ? ", and the JQL given" : ""})`,
        );
      }
      return found.issues.map((i) => ({
        ref: `${settings.provider}:${settings.key}-${i.number}`,
        title: sanitizeLine(i.title, 200),
        body: cleanText(i.body),
        labels: i.labels.map((l) => sanitizeLine(l, 50)),
      }));
    },
    async openPullRequests() {
      return forge ? forge.openPullRequests() : [];
    },
  };
}

/**
 * An IssueSource over a forge section (exported for tests that hand it a fake forge's settings).
 * `warn` hears what the search left out (other repositories' results, an incomplete search, the cap).
 */
function forgeIssueSource(settings: NormForge, token: string | null, o: { warn?: (message: string) => void; timeoutMs?: number } = {}): IssueSource {
  const warn = o.warn ?? (() => {});
  // The repository's path may be nested (GitLab: group/subgroup/project): the owner is all but its last segment.
  const segments = settings.repo.split("/");
  const repo = segments.at(-1)!;
  const owner = segments.slice(0, -1).join("/");
  const host = forgeHost(settings.provider, settings.apiUrl);
  const refOf = (n: number) => `${refPrefix({ provider: settings.provider, host, path: settings.repo })}#${n}`;
  let provider: ReturnType<typeof open> | null = null;
  const open = async () => {
    const { openForge } = await import("../forge/open.ts");
    return openForge({ settings, token, timeoutMs: o.timeoutMs, notice: (m) => warn(`forge: ${m}`) });
  };
  const forge = () => (provider ??= open());
  // Forge text is untrusted: hidden characters and HTML comments go, titles and labels are capped,
  // here at the boundary; the planner's prompt cuts the bodies and fences everything as data.
  return {
    repo: { provider: settings.provider, host, owner, repo },
    async searchOpenIssues(search) {
      const found = need(await (await forge()).searchOpenIssues(search), `searching the issues of ${settings.repo} for ${JSON.stringify(search)}`);
      for (const note of found.notes) warn(`forge: searching the issues of ${settings.repo}: ${note}`);
      if (found.issues.length === 0) warn(`forge: no open issue of ${settings.repo} matches ${JSON.stringify(sanitizeLine(search, 200))}`);
      // A body is cut by the prompt (FORGE_CAPS), whose notice then counts from its whole length.
      return found.issues.map((i) => ({
        ref: refOf(i.number),
        title: sanitizeLine(i.title, 200),
        body: cleanText(i.body),
        labels: i.labels.map((l) => sanitizeLine(l, 50)),
      }));
    },
    async openPullRequests() {
      const f = await forge();
      const listed = need(await f.openPulls(), `listing the open ${f.pullNoun}s of ${settings.repo}`);
      if (listed.cut)
        warn(
          `forge: listing the open ${f.pullNoun}s of ${settings.repo}: there are more than loop reads; the ${listed.items.length} newest were read, the rest are not in the prompt`,
        );
      const pulls = listed.items;
      return pulls.map((p) => ({ ref: refOf(p.number), title: sanitizeLine(p.title, 200), body: cleanText(p.body) }));
    },
  };
}

function need<T>(r: ForgeResult<T>, what: string, who = "forge"): T {
  if (r.ok) return r.value;
  throw new ForgeError(`${who}: ${what} failed: ${describeFailure(r)}; nothing was written`);
}

/** The source a flag needs, or the exit-2 refusal naming the missing section. */
export function requireIssueSource(source: IssueSource | null, flag: string): IssueSource {
  if (source === null)
    throw new UsageError(
      `${flag} needs a "forge" section in loop.json (which forge and repository to search) or a "tracker" loop can search (linear, jira), and this loop.json has neither; nothing was done`,
    );
  return source;
}
