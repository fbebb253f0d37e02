// `npm run demo -- --serve`: the demo loop runs with its page served on the address the demo prints
// first; the page follows the loop to its end, stays up, and Ctrl-C ends both.
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO } from "../helpers/cli.ts";
import { testEnv } from "../helpers/env.ts";
import { killProcessesUnder, waitNoProcesses } from "../helpers/project.ts";

const base = mkdtempSync(join(tmpdir(), "loop-demo-serve-"));
afterAll(() => {
  killProcessesUnder(base);
  rmSync(base, { recursive: true, force: true });
});

test("npm run demo -- --serve: the page's address first, the loop drains on it, Ctrl-C ends the demo and its server", async () => {
  const root = join(base, "demo");
  const demo = Bun.spawn([process.execPath, join(REPO, "scripts", "demo.ts"), "--serve", "--dir", root], {
    cwd: base,
    env: testEnv(),
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const reader = demo.stdout.getReader();
  let out = "";
  while (!out.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) break;
    out += new TextDecoder().decode(value);
  }
  const page = out.split("\n")[0]!;
  expect(page).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/loops\/demo\/$/);
  // The page is served while the loop runs; poll it (a bounded number of looks) until the loop drained.
  let state = "";
  for (let i = 0; i < 240 && state !== "drained"; i++) {
    const status = (await (await fetch(new URL("/api/loops/demo/status", page))).json()) as any;
    state = status.loop.state;
    if (state !== "drained") await Bun.sleep(250);
  }
  expect(state).toBe("drained");
  const html = await (await fetch(page)).text();
  for (const id of ["write-readme-md-says-project", "add-changelog-md-mentions-readme", "add-license"])
    expect(html).toContain(`data-item="${id}" data-status="passed"`);
  // It stays up until Ctrl-C (stderr says so), then the demo ends its server and exits.
  const err = demo.stderr.getReader();
  let said = "";
  while (!said.includes("Ctrl-C ends the demo")) {
    const { value, done } = await err.read();
    if (done) break;
    said += new TextDecoder().decode(value);
  }
  expect(said).toContain("the page stays up");
  expect((await fetch(page)).status).toBe(200);
  demo.kill("SIGINT");
  reader.releaseLock();
  err.releaseLock();
  expect(await demo.exited).toBe(0);
  expect(await waitNoProcesses(base)).toEqual([]);
}, 180_000);
