// Where `loop plan --issues` and `loop add --from-issues` get their issues: an injectable source, so
// the planner does not depend on how a forge is reached. The forge of loop.json (issue 12, lib/forge/)
// provides the real one; until a loop.json has a "forge" section, both flags refuse (exit 2).
import { UsageError } from "../shared/errors.ts";
import type { Issue, PullRequest } from "./prompt.ts";
import type { DefaultRepo } from "./text-format.ts";

export interface IssueSource {
  /** Where `#N` points (the forge's repository). */
  repo: DefaultRepo;
  /** The open issues matching a search (the forge's own search syntax). */
  searchOpenIssues(search: string): Promise<Issue[]>;
  /** The open pull requests, so the planner can skip issues one already covers. */
  openPullRequests(): Promise<PullRequest[]>;
}

/**
 * The issue source of the loop at `root`. None yet: loop.json has no "forge" section in this version
 * (lib/forge/ will read it and return a source here).
 */
export function configuredIssueSource(_root: string): IssueSource | null {
  return null;
}

/** The source a flag needs, or the exit-2 refusal naming the missing section. */
export function requireIssueSource(source: IssueSource | null, flag: string): IssueSource {
  if (source === null)
    throw new UsageError(`${flag} needs a "forge" section in loop.json (which forge and repository to search), and this loop.json has none; nothing was done`);
  return source;
}
