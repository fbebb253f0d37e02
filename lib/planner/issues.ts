// Where `loop plan --issues` and `loop add --from-issues` get their issues: an injectable source, so
// the planner does not depend on how a forge is reached. The real one is loop.json's "forge" section
// (lib/forge/, docs/forge.md#issues-for-the-planner); without that section both flags refuse (exit 2).
import { forgeHost } from "../definition/forge-kinds.ts";
import { loadDefinition } from "../definition/loop-json.ts";
import type { NormForge } from "../definition/normalized.ts";
import { refPrefix } from "../definition/refs.ts";
import { describeFailure, type ForgeResult } from "../forge/provider.ts";
import { sanitizeLine } from "../forge/untrusted.ts";
import { cleanText } from "../shared/untrusted-text.ts";
import { ForgeError, UsageError } from "../shared/errors.ts";
import { forgeTimeout } from "../forge/timeout.ts";
import type { Issue, PullRequest } from "./prompt.ts";
import type { DefaultRepo } from "./text-format.ts";

export interface IssueSource {
  /** Where `#N` points (the forge's repository). */
  repo: DefaultRepo;
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
export function configuredIssueSource(root: string, env: Record<string, string | undefined> = {}, warn: (message: string) => void = () => {}): IssueSource | null {
  let forge: NormForge | undefined;
  try {
    forge = loadDefinition(root).forge;
  } catch {
    return null;
  }
  return forge ? forgeIssueSource(forge, env[forge.tokenEnv] || null, { warn, timeoutMs: forgeTimeout(env, warn) }) : null;
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
      // A body is cut by the prompt (FORGE_CAPS), whose notice then counts from its whole length.
      return found.issues.map((i) => ({ ref: refOf(i.number), title: sanitizeLine(i.title, 200), body: cleanText(i.body), labels: i.labels.map((l) => sanitizeLine(l, 50)) }));
    },
    async openPullRequests() {
      const f = await forge();
      const listed = need(await f.openPulls(), `listing the open ${f.pullNoun}s of ${settings.repo}`);
      if (listed.cut) warn(`forge: listing the open ${f.pullNoun}s of ${settings.repo}: there are more than loop reads; the ${listed.items.length} newest were read, the rest are not in the prompt`);
      const pulls = listed.items;
      return pulls.map((p) => ({ ref: refOf(p.number), title: sanitizeLine(p.title, 200), body: cleanText(p.body) }));
    },
  };
}

function need<T>(r: ForgeResult<T>, what: string): T {
  if (r.ok) return r.value;
  throw new ForgeError(`forge: ${what} failed: ${describeFailure(r)}; nothing was written`);
}

/** The source a flag needs, or the exit-2 refusal naming the missing section. */
export function requireIssueSource(source: IssueSource | null, flag: string): IssueSource {
  if (source === null)
    throw new UsageError(`${flag} needs a "forge" section in loop.json (which forge and repository to search), and this loop.json has none; nothing was done`);
  return source;
}
