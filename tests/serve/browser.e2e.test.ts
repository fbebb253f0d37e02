// `loop serve` in a real browser: Debian's Chromium, headless, driven by playwright-core (tests/helpers/browser.ts),
// against the real `loop serve` process over real loops driven by the demo agent. The timeline shows
// every item with its outcome; markup from a prompt and an agent's output stays text and no script
// runs; the page and the live output update while steps run, without a reload; a screenshot shows
// the page's regions; without JavaScript the page is whole.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { type Browser, CHROMIUM, HAVE_CHROMIUM, launchBrowser, pngRegions } from "../helpers/browser.ts";
import { demoDefinition, Project } from "../helpers/project.ts";
import { EXPECTED, HOSTILE, servedDefinition } from "./fixture.ts";

// Names of the page's world, used only inside functions that run in the browser (no DOM types here).
declare const window: any, document: any;

/** `loop serve` over a project, as a real process; the page address it printed first. */
async function serve(p: Project): Promise<{ url: string; stop: () => Promise<number> }> {
  const proc = p.spawn(["serve", "--root", p.root, "--listen", "127.0.0.1:0", "--json"]);
  const reader = proc.stdout.getReader();
  let out = "";
  while (!out.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`loop serve exited ${await proc.exited}: ${await new Response(proc.stderr).text()}`);
    out += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  const doc = JSON.parse(out.split("\n")[0]!);
  return {
    url: doc.loops[0].url,
    stop: async () => {
      proc.kill("SIGTERM");
      return proc.exited;
    },
  };
}

/** Record CSP violations from the first script a page runs (playwright's init script is not subject to the page's CSP). */
async function watchViolations(page: Page): Promise<void> {
  await page.addInitScript(() => {
    (window as any).__violations = [];
    document.addEventListener("securitypolicyviolation", (e: any) => (window as any).__violations.push(`${e.violatedDirective} ${e.blockedURI}`));
  });
}

describe.skipIf(!HAVE_CHROMIUM)(HAVE_CHROMIUM ? "in Chromium" : `in Chromium (SKIPPED: ${CHROMIUM} is missing; apt-get install chromium)`, () => {
  let browser: Browser;
  let done: Project;
  let served: Awaited<ReturnType<typeof serve>>;

  beforeAll(async () => {
    done = new Project(servedDefinition());
    await done.runToDrain();
    served = await serve(done);
    browser = await launchBrowser();
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    expect(await served?.stop()).toBe(130);
    done?.dispose();
  });

  test("the timeline shows every item, in backlog order, with the outcome `loop status` reports", async () => {
    const page = await browser.context.newPage();
    await page.goto(served.url);
    const rows = await page.$$eval("svg.timeline g.row", (gs) =>
      gs.map((g) => ({
        id: g.getAttribute("data-item"),
        status: g.getAttribute("data-status"),
        shown: g.querySelector(".outcome .st")!.textContent,
        attempts: [...g.querySelectorAll(".attempt .end")].map((e) => e.getAttribute("class")),
      })),
    );
    const status = (await (await fetch(new URL("/api/loops/t/status", served.url))).json()) as any;
    expect(rows.map((r) => [r.id, r.status, r.shown])).toEqual(status.items.map((it: any) => [it.id, it.status, it.status]));
    expect(Object.fromEntries(rows.map((r) => [r.id, r.status]))).toEqual(EXPECTED);
    // The retry: two bars, the first failed, the second passed; the blocked item never ran.
    expect(rows.find((r) => r.id === "retry")!.attempts).toEqual(["end end-failed", "end end-passed"]);
    expect(rows.find((r) => r.id === "after-bad")!.attempts).toEqual([]);
    // The Failed drain's banner, with the command that fixes it.
    // One step, a command, with no stray backticks or a dangling "then or".
    expect(await page.locator(".attention[data-kind=failed] .fix code").allTextContents()).toEqual(["loop ctl retry --all-failed"]);
    expect(await page.locator(".attention[data-kind=failed]").textContent()).not.toMatch(/`|then or/);
    await page.close();
  });

  test("markup in a prompt, the agent's output and the verify output is shown as text, and no script runs", async () => {
    const page = await browser.context.newPage();
    await watchViolations(page);
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(new URL("items/xss", served.url).href);
    await page.$$eval("details", (ds) => ds.forEach((d) => ((d as any).open = true)));
    const seen = await page.evaluate(() => ({
      pwned: (window as any).__pwned ?? null,
      imgs: document.querySelectorAll("img").length,
      scripts: [...document.querySelectorAll("script")].map((s) => s.getAttribute("src")),
      logs: [...document.querySelectorAll("pre.log")].map((p) => p.textContent ?? ""),
      violations: (window as any).__violations,
    }));
    expect(seen.pwned).toBeNull();
    expect(seen.imgs).toBe(0);
    expect(seen.scripts).toEqual(["/assets/serve.js"]);
    // The prompt, the agent's output (it printed the markup) and the handoff show it, character for character.
    expect(seen.logs.filter((t) => t.includes(HOSTILE)).length).toBeGreaterThanOrEqual(3);
    expect(seen.violations).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  });

  test("a screenshot of the loop's page: not blank, and the header, timeline and items are drawn", async () => {
    const page = await browser.context.newPage();
    await page.goto(served.url);
    const boxes = await Promise.all(["header.loop", "svg.timeline", "table.items"].map(async (sel) => (await page.locator(sel).first().boundingBox())!));
    const png = await page.screenshot({ fullPage: true });
    await page.close();
    // The phase colours of the stylesheet: agent, verify, passed, failed.
    const colors = ["#3b82f6", "#a855f7", "#16a34a", "#dc2626"];
    const whole = { x: 0, y: 0, w: 1400, h: 900 };
    const stats = await pngRegions(browser.context, png, [whole, ...boxes.map((b) => ({ x: b.x, y: b.y, w: b.width, h: b.height }))], colors);
    expect(stats.width).toBe(1400);
    const [all, header, timeline, items] = stats.regions;
    expect(all!.colors).toBeGreaterThan(50);
    for (const [name, r] of [
      ["header", header],
      ["timeline", timeline],
      ["items", items],
    ] as const) {
      expect([name, r!.inked > 0.02]).toEqual([name, true]);
      expect([name, r!.colors > 10]).toEqual([name, true]);
    }
    // The bars are in the timeline: every phase colour asked for is there.
    for (const c of colors) expect([c, timeline!.found[c]! > 20]).toEqual([c, true]);
  });

  test("without JavaScript the page is whole as served, and refreshes itself", async () => {
    const plain = await launchBrowser({ javaScript: false });
    try {
      const page = await plain.context.newPage();
      await page.goto(served.url);
      expect(await page.locator("svg.timeline g.row").count()).toBe(Object.keys(EXPECTED).length);
      expect(await page.locator("table.items tbody tr").count()).toBe(Object.keys(EXPECTED).length);
      expect(await page.locator("noscript").first().innerHTML()).toContain(`http-equiv="refresh"`);
    } finally {
      await plain.close();
    }
  });

  test("eight tabs of one browser all load and all follow the loop: the streams are shared, and past four a tab polls (docs/cli/loop-serve.md#live-updates)", async () => {
    const many = new Project((q) =>
      demoDefinition(
        [
          { id: "gated", prompt: "wait for the gate", runner: "gated" },
          ...[1, 2, 3, 4, 5].map((n) => ({ id: `n${n}`, prompt: `n${n}\n@demo write n${n}.txt a` })),
        ],
        {
          name: "many",
          runners: { gated: { command: ["sh", "-c", `while [ ! -e '${join(q.aux, "gate")}' ]; do sleep 0.1; done`] } },
        },
      ),
    );
    let s: Awaited<ReturnType<typeof serve>> | null = null;
    const pages: Page[] = [];
    try {
      expect((await many.run()).action).toBe("launched");
      s = await serve(many);
      // Two loop pages (one stream) and six item pages (a stream each): more streams than one browser may hold.
      const addresses = [s.url, s.url, ...["gated", "n1", "n2", "n3", "n4", "n5"].map((id) => new URL(`items/${id}`, s!.url).href)];
      for (const address of addresses) {
        const page = await browser.context.newPage();
        pages.push(page);
        const res = await page.goto(address, { timeout: 20_000 });
        expect(res!.status()).toBe(200);
        await page.evaluate(() => ((window as any).__marker = "not reloaded"));
      }
      const modes = await Promise.all(
        pages.map((p) => p.waitForFunction(() => document.body.getAttribute("data-live"), undefined, { timeout: 15_000 }).then((h) => h.jsonValue())),
      );
      // Seven distinct streams asked for: the first four held (the two loop pages share one), the rest poll.
      expect(modes.slice(0, 5)).toEqual(["stream", "stream", "stream", "stream", "stream"]);
      expect(modes.slice(5)).toEqual(["polling", "polling", "polling"]);
      writeFileSync(join(many.aux, "gate"), "");
      await many.runToDrain();
      for (const page of pages) {
        await page.waitForSelector(`header[data-state="drained"], header.item[data-status="passed"]`, { timeout: 20_000 });
        expect(await page.evaluate(() => (window as any).__marker)).toBe("not reloaded");
      }
    } finally {
      for (const page of pages) await page.close();
      if (s) expect(await s.stop()).toBe(130);
      many.dispose();
    }
  }, 180_000);

  test("the page and an item's live output update while steps run, without a reload", async () => {
    // One item behind a gate the test opens (a command runner that prints, waits, prints), then one
    // the demo agent does.
    const live = new Project((q) =>
      demoDefinition(
        [
          { id: "gated", prompt: "print, wait for the gate, print", runner: "gated" },
          { id: "after", prompt: "after\n@demo write after.txt a" },
        ],
        {
          name: "live",
          runners: {
            gated: {
              command: ["sh", "-c", `echo first-line; while [ ! -e '${join(q.aux, "gate")}' ]; do sleep 0.1; done; printf '%s\\n' 'second-line <b>bold</b>'`],
            },
          },
        },
      ),
    );
    let s: Awaited<ReturnType<typeof serve>> | null = null;
    try {
      const first = await live.run();
      expect(first.action).toBe("launched");
      s = await serve(live);
      const page = await browser.context.newPage();
      await watchViolations(page);
      await page.goto(s.url);
      await page.waitForSelector(`svg.timeline g.row[data-item="gated"][data-status="running"]`, { timeout: 15_000 });
      await page.evaluate(() => ((window as any).__marker = "not reloaded"));

      const item = await browser.context.newPage();
      await item.goto(new URL("items/gated", s.url).href);
      await item.evaluate(() => ((window as any).__marker = "not reloaded"));
      await item.waitForFunction(() => document.getElementById("live-tail")?.textContent?.includes("first-line"), undefined, { timeout: 15_000 });
      writeFileSync(join(live.aux, "gate"), "");
      // The agent's new output reaches the open page as it is written, as text.
      await item.waitForFunction(() => document.getElementById("live-tail")?.textContent?.includes("second-line <b>bold</b>"), undefined, { timeout: 15_000 });
      expect(await item.locator("#live-tail b").count()).toBe(0);

      // Steps run: verify, settle, the next item, the drain; the open page follows them.
      await live.runToDrain();
      await page.waitForSelector(`svg.timeline g.row[data-item="after"][data-status="passed"]`, { timeout: 15_000 });
      await page.waitForSelector(`header.loop[data-state="drained"]`, { timeout: 15_000 });
      expect(await page.locator(`svg.timeline g.row[data-item="gated"]`).getAttribute("data-status")).toBe("passed");
      expect(await page.evaluate(() => (window as any).__marker)).toBe("not reloaded");
      await item.waitForSelector(`header.item[data-status="passed"]`, { timeout: 15_000 });
      expect(await item.evaluate(() => (window as any).__marker)).toBe("not reloaded");
      expect(await page.evaluate(() => (window as any).__violations)).toEqual([]);
      await page.close();
      await item.close();
    } finally {
      if (s) expect(await s.stop()).toBe(130);
      live.dispose();
    }
  }, 120_000);
});
