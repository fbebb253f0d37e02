#!/usr/bin/env bun
// `npm run screenshot`: the README's picture of the demo loop's page, made again from scratch. Runs
// the demo (scripts/demo.ts) to its end in a temporary folder, serves it with `loop serve`, opens the
// loop's page in Debian's headless Chromium (tests/helpers/browser.ts) and writes a PNG of it to
// docs/img/demo-loop.png (and of one item's page to docs/img/demo-item.png). Nothing is drawn by hand.
// Usage: npm run screenshot [-- --out DIR]
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { HAVE_CHROMIUM, CHROMIUM, launchBrowser } from "../tests/helpers/browser.ts";

const repo = resolve(import.meta.dir, "..");
const args = process.argv.slice(2);
const outArg = args.indexOf("--out");
const out = outArg >= 0 ? resolve(args[outArg + 1]!) : join(repo, "docs", "img");
if (!HAVE_CHROMIUM) {
  process.stderr.write(`screenshot: ${CHROMIUM} is missing (apt-get install chromium)\n`);
  process.exit(1);
}

const dir = mkdtempSync(join(tmpdir(), "loop-screenshot-"));
const root = join(dir, "demo");
let server: Bun.Subprocess<"ignore", "pipe", "inherit"> | null = null;
try {
  process.stderr.write(`== the demo loop, run to its end in ${root}\n`);
  const demo = Bun.spawnSync([process.execPath, join(repo, "scripts", "demo.ts"), "--dir", root], { stdout: "ignore", stderr: "pipe" });
  if (demo.exitCode !== 0) throw new Error(`the demo failed (exit ${demo.exitCode}):\n${demo.stderr.toString()}`);

  server = Bun.spawn([process.execPath, join(repo, "cmd", "loop.ts"), "serve", "--root", root, "--listen", "127.0.0.1:0", "--json"], {
    stdin: "ignore",
    stdout: "pipe",
    stderr: "inherit",
  });
  const reader = server.stdout.getReader();
  let first = "";
  while (!first.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error("loop serve ended before printing its address");
    first += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  const page = JSON.parse(first.split("\n")[0]!).loops[0].url as string;

  const browser = await launchBrowser({ width: 1280, height: 720 });
  try {
    mkdirSync(out, { recursive: true });
    const tab = await browser.context.newPage();
    await tab.goto(page);
    await tab.waitForSelector("svg.timeline g.row");
    await tab.screenshot({ path: join(out, "demo-loop.png"), fullPage: true });
    await tab.goto(new URL("items/add-license", page).href);
    await tab.waitForSelector("section.attempt");
    await tab.screenshot({ path: join(out, "demo-item.png"), fullPage: true });
  } finally {
    await browser.close();
  }
  process.stderr.write(`== wrote ${join(out, "demo-loop.png")} and ${join(out, "demo-item.png")}\n`);
} finally {
  if (server) {
    server.kill("SIGTERM");
    await server.exited;
  }
  rmSync(dir, { recursive: true, force: true });
}
