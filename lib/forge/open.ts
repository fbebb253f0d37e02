// Which provider module serves a loop's forge. The module is loaded here, on demand: only a loop
// with a `forge` section ever evaluates it, and only its own provider, so tools that never talk to
// a forge start no slower.
import type { ForgeProvider, ProviderOptions } from "./provider.ts";

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
