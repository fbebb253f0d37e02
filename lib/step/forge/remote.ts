// Loop's own git traffic with the forge (push, fetch), with credentials the agent cannot read and
// no configuration the agent can write. The URL is loop.json's (`forge.gitUrl`, else the forge's own
// https URL of `repo`), never a remote's URL from `.git/config`; git runs with loop's config alone
// (lib/repo/isolated-git.ts). The token is never in a URL, `.git/config` or a file: each push or
// fetch gets a credential helper that answers only for the forge's host and scheme, reading the
// token from that one git process's environment (docs/forge.md#what-the-agent-can-reach-and-what-it-cannot).
import { forgeGitIdentity } from "../../definition/forge-kinds.ts";
import type { NormForge } from "../../definition/normalized.ts";
import type { GitResult } from "../../repo/git.ts";
import { isolatedFetch, isolatedPush } from "../../repo/isolated-git.ts";

/** The shell function git runs as the credential helper: `get` for the forge's host answers with the token; anything else, nothing. */
const CREDENTIAL_HELPER =
  '!f() { test "$1" = get || exit 0; p=; h=; while IFS= read -r l; do case "$l" in protocol=*) p=${l#protocol=};; host=*) h=${l#host=};; esac; done; ' +
  '[ "$p" = "$LOOP_FORGE_GIT_PROTOCOL" ] && [ "$h" = "$LOOP_FORGE_GIT_HOST" ] || exit 0; printf "username=%s\\npassword=%s\\n" "$LOOP_FORGE_GIT_USER" "$LOOP_FORGE_GIT_TOKEN"; }; f';

type ForgeRemote = Pick<NormForge, "provider" | "apiUrl" | "repo" | "tokenEnv" | "gitUrl">;

/** Where loop pushes and fetches: loop.json's `forge.gitUrl`, else `<scheme>://<the forge's git host>/<repo>.git`. */
export function forgeGitUrl(forge: Pick<NormForge, "provider" | "apiUrl" | "repo" | "gitUrl">): string {
  if (forge.gitUrl) return forge.gitUrl;
  const { protocol, host } = forgeGitIdentity(forge.provider, forge.apiUrl);
  return `${protocol}://${host}/${forge.repo}.git`;
}

/** The config pairs and the environment of one of loop's own git calls to the forge. */
function forgeGitAuth(
  forge: Pick<NormForge, "provider" | "apiUrl" | "tokenEnv">,
  env: Record<string, string | undefined>,
): { config: [string, string][]; env: Record<string, string> } {
  // A transfer that stalls (under 1 KB/s for 60 s) is a failure, never a step that holds its lease for ever.
  const config: [string, string][] = [
    ["http.sslVerify", "true"],
    ["http.lowSpeedLimit", "1000"],
    ["http.lowSpeedTime", "60"],
  ];
  const token = env[forge.tokenEnv];
  if (!token) return { config, env: {} };
  const { protocol, host, username } = forgeGitIdentity(forge.provider, forge.apiUrl);
  return {
    config: [...config, ["credential.helper", CREDENTIAL_HELPER], ["credential.useHttpPath", "false"]],
    env: { LOOP_FORGE_GIT_TOKEN: token, LOOP_FORGE_GIT_USER: username, LOOP_FORGE_GIT_HOST: host, LOOP_FORGE_GIT_PROTOCOL: protocol },
  };
}

/** The deadline of one push or fetch (docs/forge.md#deadlines): a transfer, so longer than a request's. */
const FORGE_GIT_DEADLINE_MS = 5 * 60_000;

interface ForgeCall {
  repo: string;
  forge: ForgeRemote;
  env: Record<string, string | undefined>;
}

/** Push `head` (a commit) to `refs/heads/<branch>` of the forge's repository, fast-forward only, as loop. */
export function forgePush(o: ForgeCall & { head: string; branch: string }): GitResult {
  const auth = forgeGitAuth(o.forge, o.env);
  return isolatedPush({
    repo: o.repo,
    url: forgeGitUrl(o.forge),
    refspecs: [`${o.head}:refs/heads/${o.branch}`],
    config: auth.config,
    env: auth.env,
    timeoutMs: FORGE_GIT_DEADLINE_MS,
  });
}

/** Fetch the forge's `refs/heads/<branch>` into `dest` of the repository (fast-forward only), as loop. */
export function forgeFetch(o: ForgeCall & { branch: string; dest: string }): GitResult {
  const auth = forgeGitAuth(o.forge, o.env);
  return isolatedFetch({
    repo: o.repo,
    url: forgeGitUrl(o.forge),
    branch: o.branch,
    dest: o.dest,
    config: auth.config,
    env: auth.env,
    timeoutMs: FORGE_GIT_DEADLINE_MS,
  });
}
