// Which provider module serves a loop's forge. The module is loaded here, on demand: only a loop
// with a `forge` section ever evaluates it, and only its own provider, so tools that never talk to
// a forge start no slower.
import type { NormTracker } from "../definition/normalized.ts";
import type { ForgeProvider, KeyedTrackerClient, ProviderOptions } from "./provider.ts";

export async function openForge(o: ProviderOptions): Promise<ForgeProvider> {
  switch (o.settings.provider) {
    case "github": {
      const { GitHubProvider } = await import("./github.ts");
      return new GitHubProvider(o);
    }
    case "gitlab": {
      const { GitLabProvider } = await import("./gitlab.ts");
      return new GitLabProvider(o);
    }
  }
}

/** The Linear or Jira client loop.json's `tracker` names (docs/trackers.md), loaded the same way. */
export async function openTracker(o: { settings: NormTracker; token: string | null; timeoutMs?: number }): Promise<KeyedTrackerClient> {
  if (o.settings.provider === "jira") {
    const { JiraTracker } = await import("./jira.ts");
    return new JiraTracker(o);
  }
  const { LinearTracker } = await import("./linear.ts");
  return new LinearTracker(o);
}
