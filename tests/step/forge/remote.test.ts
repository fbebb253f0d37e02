// Loop's own pushes and fetches (lib/step/forge/remote.ts) against a real git smart-HTTP server on
// 127.0.0.1 (git http-backend behind Bun.serve, asking for Basic credentials): the forge token
// authenticates loop's push only to the forge's host, is never in a URL or .git/config, and a
// credential helper (or receive-pack program) the agent set in the repository's config never runs.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { forgeGit } from "../../../lib/step/forge/remote.ts";
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

async function setup() {
  const dir = temp.make("loop-remote-");
  const bare = join(dir, "srv", "acme", "api.git");
  mkdirSync(join(dir, "srv", "acme"), { recursive: true });
  git(dir, "init", "-q", "--bare", "-b", "main", bare);
  git(bare, "config", "http.receivepack", "true");
  const srv = await gitHttpServer(join(dir, "srv"));
  const root = join(dir, "repo");
  initRepo(root, { files: { "a.txt": "a\n" } });
  return { dir, root, bare, srv };
}

describe("loop's own push to the forge", () => {
  test("authenticates with the token through its own credential helper; the token is in no URL and no .git/config", async () => {
    const { root, bare, srv } = await setup();
    git(root, "remote", "add", "origin", `${srv.url}/acme/api.git`);
    const forge = { provider: "github" as const, apiUrl: srv.url, remote: "origin", tokenEnv: "FORGE_PAT" };
    const r = forgeGit({ repo: root, forge, env: { FORGE_PAT: TOKEN }, args: ["push", "--quiet", "origin", "refs/heads/main:refs/heads/main"] });
    expect({ code: r.code, err: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, err: "" });
    expect(git(bare, "rev-parse", "main")).toBe(git(root, "rev-parse", "main"));
    expect(srv.seen()).toContain(`Basic ${btoa(`x-access-token:${TOKEN}`)}`);
    expect(readFileSync(join(root, ".git", "config"), "utf8")).not.toContain(TOKEN);
    // A fetch the same way.
    const f = forgeGit({ repo: root, forge, env: { FORGE_PAT: TOKEN }, args: ["fetch", "--quiet", "origin", "refs/heads/main:refs/remotes/origin/main"] });
    expect(f.code).toBe(0);
  });

  test("a remote pointed at another host (by the agent's config) never gets the token: the push fails, unauthenticated", async () => {
    const { root, srv } = await setup();
    // The same server under another name: the helper answers only for the forge's host.
    git(root, "remote", "add", "origin", `http://localhost:${srv.port}/acme/api.git`);
    const r = forgeGit({ repo: root, forge: { provider: "github" as const, apiUrl: srv.url, remote: "origin", tokenEnv: "FORGE_PAT" }, env: { FORGE_PAT: TOKEN }, args: ["push", "--quiet", "origin", "refs/heads/main:refs/heads/main"] });
    expect(r.code).not.toBe(0);
    expect(srv.seen().filter((a) => a.includes(btoa(`x-access-token:${TOKEN}`)))).toEqual([]);
  });

  test("a credential helper and a receive-pack program the agent set in the repository's config never run", async () => {
    const { dir, root, bare, srv } = await setup();
    const marker = join(dir, "ran");
    writeFileSync(join(dir, "evil.sh"), `#!/bin/sh\necho "$@" >> ${marker}\n`, { mode: 0o755 });
    git(root, "remote", "add", "origin", `${srv.url}/acme/api.git`);
    git(root, "config", "credential.helper", join(dir, "evil.sh"));
    git(root, "config", "remote.origin.receivepack", join(dir, "evil.sh"));
    git(root, "config", "core.hooksPath", dir);
    writeFileSync(join(dir, "pre-push"), `#!/bin/sh\necho pre-push >> ${marker}\n`, { mode: 0o755 });
    const r = forgeGit({ repo: root, forge: { provider: "github" as const, apiUrl: srv.url, remote: "origin", tokenEnv: "FORGE_PAT" }, env: { FORGE_PAT: TOKEN }, args: ["push", "--quiet", "origin", "refs/heads/main:refs/heads/main"] });
    expect({ code: r.code, err: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, err: "" });
    expect(git(bare, "rev-parse", "main")).toBe(git(root, "rev-parse", "main"));
    expect(existsSync(marker)).toBe(false);
  });

  test("a GitLab remote gets the token under GitLab's user name (oauth2), for its host only", async () => {
    const { root, bare, srv } = await setup();
    git(root, "remote", "add", "origin", `${srv.url}/acme/api.git`);
    const forge = { provider: "gitlab" as const, apiUrl: `${srv.url}/api/v4`, remote: "origin", tokenEnv: "FORGE_PAT" };
    const r = forgeGit({ repo: root, forge, env: { FORGE_PAT: TOKEN }, args: ["push", "--quiet", "origin", "refs/heads/main:refs/heads/main"] });
    expect({ code: r.code, err: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, err: "" });
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
