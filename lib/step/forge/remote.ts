// Loop's own git traffic with the forge (push, fetch), with credentials the agent cannot read. The
// token is never in a URL, `.git/config` or a file: each push or fetch gets, on its command line, a
// credential helper that answers only for the forge's host and scheme, reading the token from that
// one git process's environment. Every other credential helper is dropped (the list is emptied by
// lib/repo/git.ts SAFE_GIT_CONFIG), and the remote's upload/receive programs are git's own, so
// nothing the repository's config names runs with the token in reach (docs/forge.md#threat-model).
import { forgeGitIdentity } from "../../definition/forge-kinds.ts";
import type { NormForge } from "../../definition/normalized.ts";
import { type GitResult, gitTry } from "../../repo/git.ts";

/** The shell function git runs as the credential helper: `get` for the forge's host answers with the token; anything else, nothing. */
export const CREDENTIAL_HELPER =
  '!f() { test "$1" = get || exit 0; p=; h=; while IFS= read -r l; do case "$l" in protocol=*) p=${l#protocol=};; host=*) h=${l#host=};; esac; done; ' +
  '[ "$p" = "$LOOP_FORGE_GIT_PROTOCOL" ] && [ "$h" = "$LOOP_FORGE_GIT_HOST" ] || exit 0; printf "username=%s\\npassword=%s\\n" "$LOOP_FORGE_GIT_USER" "$LOOP_FORGE_GIT_TOKEN"; }; f';

/** The `-c` pairs and the environment of one of loop's own git calls to the forge's remote. */
export function forgeGitAuth(forge: Pick<NormForge, "provider" | "apiUrl" | "remote" | "tokenEnv">, env: Record<string, string | undefined>): { config: string[]; env: Record<string, string> } {
  const config = [`remote.${forge.remote}.receivepack=git-receive-pack`, `remote.${forge.remote}.uploadpack=git-upload-pack`, "http.sslVerify=true"];
  const token = env[forge.tokenEnv];
  if (!token) return { config, env: {} };
  const { protocol, host, username } = forgeGitIdentity(forge.provider, forge.apiUrl);
  return {
    config: [...config, `credential.helper=${CREDENTIAL_HELPER}`, "credential.useHttpPath=false"],
    env: { LOOP_FORGE_GIT_TOKEN: token, LOOP_FORGE_GIT_USER: username, LOOP_FORGE_GIT_HOST: host, LOOP_FORGE_GIT_PROTOCOL: protocol },
  };
}

/** The deadline of one push or fetch (docs/forge.md#deadlines): a transfer, so longer than a request's. */
export const FORGE_GIT_DEADLINE_MS = 5 * 60_000;

/**
 * `git <args>` (push or fetch) in `repo`, authenticated as loop to the forge, with a deadline: a
 * transfer that stalls (under 1 KB/s for 60 s) or runs past FORGE_GIT_DEADLINE_MS is a failure,
 * never a step that holds its lease for ever.
 */
export function forgeGit(o: { repo: string; forge: Pick<NormForge, "provider" | "apiUrl" | "remote" | "tokenEnv">; env: Record<string, string | undefined>; args: string[] }): GitResult {
  const auth = forgeGitAuth(o.forge, o.env);
  const stall = ["http.lowSpeedLimit=1000", "http.lowSpeedTime=60"];
  return gitTry(o.repo, [...[...auth.config, ...stall].flatMap((c) => ["-c", c]), ...o.args], auth.env, undefined, FORGE_GIT_DEADLINE_MS);
}
