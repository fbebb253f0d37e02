// The forges loop speaks to (docs/forge.md) and what differs between them in loop.json: default API
// and token variable, the git host and user a token goes with, repository depth, a login's alphabet,
// the host refs name. Pure.

/** The forges loop speaks to (docs/forge.md), and what each one's settings default to. */
export const FORGE_KINDS = ["github", "gitlab"] as const;
export type ForgeKind = (typeof FORGE_KINDS)[number];
export const FORGE_DEFAULTS = { remote: "origin", pollInterval: "60s" } as const;
/**
 * What differs between forges in loop.json: the default API and token variable, the host of the
 * public service (refs leave it out), how deep a repository path goes, and a login's alphabet
 * (GitHub: letters, digits, inner hyphens; GitLab: also '.' and '_'). ASCII only, always.
 */
export const KIND: Record<
  ForgeKind,
  { apiUrl: string; apiHost: string; gitHost: string; gitUser: string; tokenEnv: string; depth: number; repoShape: string; login: RegExp; loginRule: string }
> = {
  // gitHost: where the public service's git answers (its API host otherwise); gitUser: the user name
  // a token is presented under over https (GitHub ignores it; GitLab wants it non-blank).
  github: {
    apiUrl: "https://api.github.com",
    apiHost: "api.github.com",
    gitHost: "github.com",
    gitUser: "x-access-token",
    tokenEnv: "GITHUB_TOKEN",
    depth: 1,
    repoShape: "<owner>/<repo>",
    login: /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$/,
    loginRule: "a GitHub login (ASCII letters, digits and inner '-', at most 39)",
  },
  gitlab: {
    apiUrl: "https://gitlab.com/api/v4",
    apiHost: "gitlab.com",
    gitHost: "gitlab.com",
    gitUser: "oauth2",
    tokenEnv: "GITLAB_TOKEN",
    depth: 20,
    repoShape: "<group>/<project> or <group>/<subgroup>/.../<project>",
    login: /^[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,253}[A-Za-z0-9_-])?$/,
    loginRule: "a GitLab username (ASCII letters, digits, '_', '-' and '.', not ending in '.')",
  },
};

/**
 * Where loop's own push and fetch present the forge's token (lib/step/forge/remote.ts): the scheme
 * and host of the forge's git (api.github.com serves github.com; Enterprise Server and a self-managed
 * GitLab are one host) and the https user name the token goes with.
 */
export function forgeGitIdentity(provider: ForgeKind, apiUrl: string): { protocol: string; host: string; username: string } {
  const u = new URL(apiUrl);
  const kind = KIND[provider];
  return { protocol: u.protocol.replace(/:$/, ""), host: u.host === kind.apiHost ? kind.gitHost : u.host, username: kind.gitUser };
}

/** Whether `login` is one the forge allows (fails closed: anything else is nobody). */
export function isForgeLogin(provider: ForgeKind, login: string): boolean {
  return KIND[provider].login.test(login) && !/\.(git|atom)$/i.test(login);
}

/** Why an apiUrl is refused: https, or http to this machine only (a test's fake forge); no credentials, query or fragment in it. */
export function apiUrlProblem(s: string): string | undefined {
  let u: URL;
  try {
    u = new URL(s);
  } catch {
    return "must be a URL such as https://api.github.com, https://HOST/api/v3 (GitHub Enterprise Server) or https://HOST/api/v4 (GitLab)";
  }
  if (u.username || u.password) return "must not hold credentials (name the token's variable in tokenEnv)";
  if (u.search || u.hash) return "must not have a query or fragment";
  return httpsProblem(u);
}

/** An address loop sends a secret to: https, or plain http to this machine only (a test's fake, a local relay). */
export function httpsProblem(u: URL): string | undefined {
  if (u.protocol === "https:") return undefined;
  if (u.protocol === "http:" && ["127.0.0.1", "localhost", "[::1]"].includes(u.hostname)) return undefined;
  return "must be https (http only to 127.0.0.1 or localhost)";
}

/**
 * Why a `gitUrl` is refused. Loop's push and fetch go there with the token (over https, to the
 * forge's host only) or ssh's keys, so it is a plain transport: https, ssh (`ssh://` or
 * `user@host:path`), http only to this machine, or a local path (a mirror, a test's bare
 * repository); never credentials, a `<transport>::` helper, an option-like or blank-holding string.
 */
export function gitUrlProblem(s: string): string | undefined {
  const shape =
    "must be an https or ssh URL of the repository (https://HOST/OWNER/REPO.git, git@HOST:OWNER/REPO.git), http only to 127.0.0.1 or localhost, or an absolute path";
  if (s === "" || s.startsWith("-") || /[\s\x00-\x1f\x7f]/.test(s) || s.includes("::")) return shape;
  if (s.startsWith("/")) return undefined;
  const scp = /^([A-Za-z0-9._-]+@)?[A-Za-z0-9][A-Za-z0-9.-]*:(?!\/\/)(.+)$/.exec(s);
  if (scp) return undefined;
  let u: URL;
  try {
    u = new URL(s);
  } catch {
    return shape;
  }
  if (u.password) return "must not hold credentials (name the token's variable in tokenEnv)";
  if (u.search || u.hash) return "must not have a query or fragment";
  if (u.protocol === "https:" || u.protocol === "ssh:" || u.protocol === "file:")
    return u.protocol === "https:" && u.username ? "must not hold credentials (name the token's variable in tokenEnv)" : undefined;
  if (u.protocol === "http:" && ["127.0.0.1", "localhost", "[::1]"].includes(u.hostname)) return undefined;
  return shape;
}

/**
 * The host refs of a forge name: null for the public service (github.com, gitlab.com: refs omit
 * it), else the apiUrl's host (GitHub Enterprise Server, a self-managed GitLab). An apiUrl on this
 * machine (a test double, a local proxy) stands for the public service.
 */
export function forgeHost(provider: ForgeKind, apiUrl: string): string | null {
  try {
    const u = new URL(apiUrl);
    if (u.host === KIND[provider].apiHost || ["127.0.0.1", "localhost", "[::1]"].includes(u.hostname)) return null;
    return u.host.toLowerCase();
  } catch {
    return null;
  }
}
