// Loop's own git traffic with the forge (push, fetch), with credentials the agent cannot read. The
// token is never in a URL, `.git/config` or a file: each push or fetch gets, on its command line, a
// credential helper that answers only for the forge's host and scheme, reading the token from that
// one git process's environment. Every other credential helper is dropped (the list is emptied by
// lib/step/git.ts SAFE_GIT_CONFIG), and the remote's upload/receive programs are git's own, so
// nothing the repository's config names runs with the token in reach (docs/forge.md#threat-model).
import type { NormForge } from "../../definition/loop-json.ts";
import { type GitResult, gitTry } from "../git.ts";

/** The shell function git runs as the credential helper: `get` for the forge's host answers with the token; anything else, nothing. */
export const CREDENTIAL_HELPER =
  '!f() { test "$1" = get || exit 0; p=; h=; while IFS= read -r l; do case "$l" in protocol=*) p=${l#protocol=};; host=*) h=${l#host=};; esac; done; ' +
  '[ "$p" = "$LOOP_FORGE_GIT_PROTOCOL" ] && [ "$h" = "$LOOP_FORGE_GIT_HOST" ] || exit 0; printf "username=x-access-token\\npassword=%s\\n" "$LOOP_FORGE_GIT_TOKEN"; }; f';

/** Where the forge's git lives, from its API URL: api.github.com serves github.com; GitHub Enterprise Server is one host. */
export function forgeGitHost(apiUrl: string): { protocol: string; host: string } {
  const u = new URL(apiUrl);
  return { protocol: u.protocol.replace(/:$/, ""), host: u.host === "api.github.com" ? "github.com" : u.host };
}

/** The `-c` pairs and the environment of one of loop's own git calls to the forge's remote. */
export function forgeGitAuth(forge: Pick<NormForge, "apiUrl" | "remote" | "tokenEnv">, env: Record<string, string | undefined>): { config: string[]; env: Record<string, string> } {
  const config = [`remote.${forge.remote}.receivepack=git-receive-pack`, `remote.${forge.remote}.uploadpack=git-upload-pack`, "http.sslVerify=true"];
  const token = env[forge.tokenEnv];
  if (!token) return { config, env: {} };
  const { protocol, host } = forgeGitHost(forge.apiUrl);
  return {
    config: [...config, `credential.helper=${CREDENTIAL_HELPER}`, "credential.useHttpPath=false"],
    env: { LOOP_FORGE_GIT_TOKEN: token, LOOP_FORGE_GIT_HOST: host, LOOP_FORGE_GIT_PROTOCOL: protocol },
  };
}

/** `git <args>` (push or fetch) in `repo`, authenticated as loop to the forge. */
export function forgeGit(o: { repo: string; forge: Pick<NormForge, "apiUrl" | "remote" | "tokenEnv">; env: Record<string, string | undefined>; args: string[] }): GitResult {
  const auth = forgeGitAuth(o.forge, o.env);
  return gitTry(o.repo, [...auth.config.flatMap((c) => ["-c", c]), ...o.args], auth.env);
}
