// The page's actions (docs/cli/loop-serve.md#actions) in a real browser: Debian's Chromium, headless,
// driven by playwright-core, against the real `loop serve` process over a real loop driven by the demo
// agent. A reply then a resume, a pause, a retry, a skip and a stop (an item in flight, its session
// ended) from the page, each recorded as `page:loopback`;
// a stale page's action refused, changing nothing; a form posted from another origin refused, and a
// POST without the page's CSRF token; a GET never writes; --read-only shows no action and answers 405.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import { type Browser, CHROMIUM, HAVE_CHROMIUM, launchBrowser } from "../helpers/browser.ts";
import { demoDefinition, Project } from "../helpers/project.ts";

/** `loop serve` over a project, as a real process: the loop page's address it printed first, and the server's. */
async function serve(
  p: Project,
  extra: string[] = [],
  env: Record<string, string> = {},
): Promise<{ url: string; base: string; doc: any; stop: () => Promise<number> }> {
  const proc = p.spawn(["serve", "--root", p.root, "--listen", "127.0.0.1:0", "--json", ...extra], env);
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
    base: doc.url,
    doc,
    stop: async () => {
      proc.kill("SIGTERM");
      return proc.exited;
    },
  };
}

/** Submit the action form of `verb` on the page (typing `fill` into its fields), and wait for its answer. */
async function act(page: Page, verb: string, fill: Record<string, string> = {}): Promise<{ ok: string | null; text: string }> {
  const form = page.locator(`form.act[data-verb="${verb}"]`);
  for (const [name, value] of Object.entries(fill)) await form.locator(`input[name="${name}"]`).fill(value);
  const before = await page.locator("#act-result").textContent();
  await form.locator("button").click();
  await page.waitForFunction((b) => {
    const el = (globalThis as any).document.getElementById("act-result");
    return el.hasAttribute("data-ok") && el.textContent !== b;
  }, before);
  const r = page.locator("#act-result");
  return { ok: await r.getAttribute("data-ok"), text: (await r.textContent()) ?? "" };
}

describe.skipIf(!HAVE_CHROMIUM)(HAVE_CHROMIUM ? "actions in Chromium" : `actions in Chromium (SKIPPED: ${CHROMIUM} is missing)`, () => {
  let browser: Browser;
  let p: Project;
  let served: Awaited<ReturnType<typeof serve>>;
  const byPage = () => p.events().filter((e) => e.actor === "page:loopback");

  beforeAll(async () => {
    // bad fails for good; q asks a question on its first attempt (the loop pauses), and passes on the next.
    p = new Project(
      demoDefinition([
        { id: "bad", prompt: "Fail.\n@demo write bad.txt x", verify: "false", maxAttempts: 1 },
        { id: "q", prompt: "Ask.\n@demo attempt 1 ask Which API version?\n@demo attempt 2 write q.txt v2", verify: "test -f q.txt" },
        { id: "later", prompt: "Later.\n@demo write later.txt x", verify: "test -f later.txt" },
      ]),
    );
    await p.runUntil(() => p.projection().items.q?.status === "needs_input", { codes: [0, 1], what: "q asks its question" });
    served = await serve(p);
    browser = await launchBrowser();
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    expect(await served?.stop()).toBe(130);
    p?.dispose();
  });

  test("reply to the question, then resume, from the page: loop ctl's effects, recorded as page:loopback", async () => {
    expect(served.doc.actions).toBe(true);
    const page = await browser.context.newPage();
    await page.goto(new URL("items/q", served.url.endsWith("/") ? served.url : served.url + "/").href);
    const reply = await act(page, "reply", { text: "use the v2 API" });
    expect(reply).toEqual({ ok: "1", text: "reply: record a reply for q (it asked a question; `loop ctl resume` continues)" });
    const replied = p.events().filter((e) => e.type === "reply_recorded");
    expect(replied.map((e) => [e.item, e.actor, (e.payload as any).text])).toEqual([["q", "page:loopback", "use the v2 API"]]);

    await page.goto(served.url);
    // The loop is paused by the question: Resume is offered, Pause is not.
    expect(await page.locator("form.act").evaluateAll((fs) => fs.map((f) => f.getAttribute("data-verb")))).toEqual(["resume"]);
    const resumed = await act(page, "resume");
    expect(resumed).toEqual({ ok: "1", text: "resume: resume the paused loop" });
    expect(p.projection().loop.state).toBe("running");
    // The page follows through its live stream: no reload, and the forms follow the state.
    await page.locator("header.loop[data-state=running]").waitFor();
    await page.locator('form.act[data-verb="pause"]').waitFor();
    expect(byPage().map((e) => e.type)).toEqual(["control_recorded", "reply_recorded", "loop_resumed"]);
    await page.close();
  });

  test("pause from the page; the state and the forms follow, and the pause names who", async () => {
    const page = await browser.context.newPage();
    await page.goto(served.url);
    const paused = await act(page, "pause");
    expect(paused).toEqual({ ok: "1", text: "pause: pause the loop" });
    await page.locator("header.loop[data-state=paused]").waitFor();
    await page.locator('form.act[data-verb="resume"]').waitFor();
    const e = p.events().at(-1)!;
    expect([e.type, e.actor, (e.payload as any).reason]).toEqual(["loop_paused", "page:loopback", "paused by page:loopback"]);
    expect((await act(page, "resume")).ok).toBe("1");
    await page.close();
  });

  test("retry a failed item from its page; a stale page's action is refused and changes nothing", async () => {
    const page = await browser.context.newPage();
    const itemUrl = (id: string) => new URL(`items/${id}`, served.url.endsWith("/") ? served.url : served.url + "/").href;
    await page.goto(itemUrl("bad"));
    expect(await page.locator("form.act").evaluateAll((fs) => fs.map((f) => f.getAttribute("data-verb")))).toEqual(["retry"]);
    const retried = await act(page, "retry");
    expect(retried).toEqual({ ok: "1", text: "retry: requeue bad with a fresh attempt budget" });
    expect(p.projection().items.bad!.status).toBe("pending");
    const requeue = p.events().at(-1)!;
    expect([requeue.type, requeue.item, requeue.actor]).toEqual(["item_requeued", "bad", "page:loopback"]);

    // A page drawn while `later` was open; `loop ctl` skips it meanwhile: the page's reply is refused, with loop ctl's reason.
    // The page stays as drawn: its redraws (the fragments the live stream asks for) never arrive.
    await page.route("**/*fragment=1", (r) => r.abort());
    await page.goto(itemUrl("later"));
    await page.locator('form.act[data-verb="reply"]').waitFor();
    expect((await p.ctl(["skip", "--work-item", "later", "--yes"])).code).toBe(0);
    const head = p.head();
    const stale = await act(page, "reply", { text: "too late" });
    expect(stale).toEqual({ ok: "0", text: "reply refused: later is skipped; a reply can no longer reach it" });
    expect(p.head()).toBe(head);
    await page.close();
  });

  test("stop and skip on the page ask for the item's id; a wrong one is declined and changes nothing", async () => {
    const page = await browser.context.newPage();
    await page.goto(new URL("items/bad", served.url.endsWith("/") ? served.url : served.url + "/").href);
    const head = p.head();
    const declined = await act(page, "skip", { confirm: "not-bad" });
    expect(declined).toEqual({ ok: "0", text: 'skip refused: declined: "not-bad" is not the item\'s id ("bad"); nothing was changed' });
    expect(p.head()).toBe(head);
    const skipped = await act(page, "skip", { confirm: "bad" });
    expect(skipped).toEqual({ ok: "1", text: "skip: settle bad skipped" });
    expect(p.projection().items.bad!.status).toBe("skipped");
    await page.close();
  });

  test("a form posted from a page of another origin is refused, and changes nothing", async () => {
    // Another site the operator visits: its page posts a form to the loop's actions, as a CSRF attack does (text/plain, no CSRF token).
    const evil = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: () =>
        new Response(
          `<!doctype html><form id="f" method="POST" enctype="text/plain" action="${served.base}api/loops/t/actions"><input name='{"verb":"pause","x":"' value='"}'></form><script>document.getElementById("f").submit()</script>`,
          { headers: { "Content-Type": "text/html" } },
        ),
    });
    try {
      const head = p.head();
      const page = await browser.context.newPage();
      const answer = page.waitForResponse((r) => r.url().endsWith("/actions"));
      await page.goto(`http://127.0.0.1:${evil.port}/`);
      const r = await answer;
      expect(r.status()).toBe(403);
      expect(JSON.parse(await r.text()).error.message).toContain("actions are taken from this server's own pages only");
      expect(p.head()).toBe(head);
      // And a fetch from that origin, JSON and all, is refused too (its answer is opaque to that page, and it changed nothing).
      await page.evaluate(
        (u) => fetch(u, { method: "POST", mode: "no-cors", credentials: "include", body: JSON.stringify({ verb: "pause" }) }).catch(() => null),
        `${served.base}api/loops/t/actions`,
      );
      expect(p.head()).toBe(head);
      await page.close();
    } finally {
      await evil.stop(true);
    }
  });

  test("a POST without the page's CSRF token is refused, from this origin too; a GET never writes", async () => {
    const head = p.head();
    const url = `${served.base}api/loops/t/actions`;
    const origin = served.base.replace(/\/$/, "");
    const post = (headers: Record<string, string>, body: unknown) =>
      fetch(url, { method: "POST", headers: { "Content-Type": "application/json", ...headers }, body: JSON.stringify(body) });
    const noToken = await post({ Origin: origin }, { verb: "pause" });
    expect(noToken.status).toBe(403);
    expect(((await noToken.json()) as any).error.message).toContain("CSRF token");
    const wrong = await post({ Origin: origin }, { verb: "pause", csrf: "0".repeat(64) });
    expect(wrong.status).toBe(403);
    const site = await post({ "Sec-Fetch-Site": "cross-site" }, { verb: "pause" });
    expect(site.status).toBe(403);
    // No Origin and no Sec-Fetch-Site, and no Bearer token: not a page of this server.
    expect((await post({}, { verb: "pause" })).status).toBe(403);
    // Every read, including the actions' address with the verb in its query.
    for (const path of ["api/loops/t/actions?verb=pause", `loops/t?verb=pause`, "api/loops/t/status", "loops/t/items/q"]) {
      const r = await fetch(served.base + path);
      expect([200, 404]).toContain(r.status);
      await r.arrayBuffer();
    }
    expect(p.head()).toBe(head);
  });

  test("the API answers with loop ctl's own errors, and a malformed request changes nothing", async () => {
    const page = await (await fetch(served.url)).text();
    const csrf = /<meta name="loop-csrf" content="([0-9a-f]{64})">/.exec(page)![1]!;
    const origin = served.base.replace(/\/$/, "");
    const post = (body: unknown, headers: Record<string, string> = {}) =>
      fetch(`${served.base}api/loops/t/actions`, {
        method: "POST",
        headers: { "Content-Type": "application/json", Origin: origin, ...headers },
        body: typeof body === "string" ? body : JSON.stringify(body),
      });
    const head = p.head();
    const answer = async (r: Response) => [r.status, ((await r.json()) as any).error];
    // The same words as the command line's, for the same mistake.
    const cli = await p.ctl(["reply", "--work-item", "q"]);
    expect(cli.code).toBe(2);
    expect(await answer(await post({ verb: "reply", item: "q", csrf }))).toEqual([
      400,
      { code: "usage", message: JSON.parse(cli.stderr.trim().split("\n").at(-1)!).error.message },
    ]);
    expect(await answer(await post({ verb: "frobnicate", csrf }))).toEqual([
      400,
      { code: "usage", message: 'unknown verb "frobnicate" (verbs: start, pause, resume, stop, skip, retry, cancel, reply)' },
    ]);
    expect(await answer(await post({ verb: "retry", item: "nope", csrf }))).toMatchObject([400, { code: "unknown_item" }]);
    // What cannot be undone needs its word; the answer names it.
    expect(await answer(await post({ verb: "stop", item: "q", csrf }))).toMatchObject([
      400,
      { code: "usage", message: expect.stringContaining('confirm with the item\'s id, "q"') },
    ]);
    expect(await answer(await post({ verb: "pause", csrf, extra: "x" }))).toMatchObject([
      400,
      { code: "usage", message: expect.stringContaining('unknown field "extra"') },
    ]);
    // A body that is not JSON carries no CSRF token that can be read: a browser's request is refused as such.
    expect(await answer(await post(`{"verb":"pause","csrf":"${csrf}"`))).toMatchObject([403, { code: "forbidden" }]);
    expect(await answer(await post({ verb: "pause", csrf }, { "Content-Type": "text/plain" }))).toMatchObject([415, { code: "unsupported_media_type" }]);
    // Too large: the server's own limit (maxRequestBodySize) answers before loop's code reads a byte.
    expect((await post({ verb: "reply", item: "q", text: "x".repeat(20_000), csrf })).status).toBe(413);
    expect(p.head()).toBe(head);
  });

  test("--read-only: the page shows no action, and a POST is answered 405", async () => {
    const ro = await serve(p, ["--read-only"]);
    try {
      expect(ro.doc.actions).toBe(false);
      const page = await browser.context.newPage();
      await page.goto(ro.url);
      expect(await page.locator("form.act").count()).toBe(0);
      expect(await page.locator('meta[name="loop-csrf"]').count()).toBe(0);
      await page.goto(new URL("items/q", ro.url.endsWith("/") ? ro.url : ro.url + "/").href);
      expect(await page.locator("form.act").count()).toBe(0);
      await page.close();
      const head = p.head();
      const r = await fetch(`${ro.base}api/loops/t/actions`, {
        method: "POST",
        headers: { "Content-Type": "application/json", Origin: ro.base.replace(/\/$/, "") },
        body: JSON.stringify({ verb: "pause" }),
      });
      expect(r.status).toBe(405);
      expect(r.headers.get("allow")).toBe("GET, HEAD");
      expect(p.head()).toBe(head);
    } finally {
      expect(await ro.stop()).toBe(130);
    }
  });

  test("with a token: the page's action is page:token-<id>, a script's Bearer one api:token-<id>; the token is never recorded", async () => {
    const token = "a-token-for-the-actions-test-0123";
    const id = new Bun.CryptoHasher("sha256").update(token).digest("hex").slice(0, 8);
    const ts = await serve(p, [], { LOOP_SERVE_TOKEN: token });
    try {
      const page = await browser.context.newPage();
      // Once with ?token=: the cookie, and the page without it in its address.
      await page.goto(`${ts.url}?token=${token}`);
      expect(page.url()).toBe(ts.url);
      const verb = (await page.locator("form.act").evaluateAll((fs) => fs.map((f) => f.getAttribute("data-verb")))).includes("pause") ? "pause" : "resume";
      expect((await act(page, verb)).ok).toBe("1");
      expect(p.events().at(-1)!.actor).toBe(`page:token-${id}`);
      await page.close();
      // A script: the Bearer token is its proof, no Origin, no CSRF token.
      const r = await fetch(`${ts.base}api/loops/t/actions`, {
        method: "POST",
        headers: { "Content-Type": "application/json", Authorization: `Bearer ${token}` },
        body: JSON.stringify({ verb: verb === "pause" ? "resume" : "pause" }),
      });
      const doc = (await r.json()) as any;
      expect([r.status, doc.schema, doc.actions.length]).toEqual([200, "loop/ctl@1", 1]);
      expect(p.events().at(-1)!.actor).toBe(`api:token-${id}`);
      // Without the token: 401, nothing done.
      const head = p.head();
      const none = await fetch(`${ts.base}api/loops/t/actions`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ verb: "pause" }),
      });
      expect(none.status).toBe(401);
      expect(p.head()).toBe(head);
      expect(JSON.stringify(p.events())).not.toContain(token);
    } finally {
      expect(await ts.stop()).toBe(130);
    }
  });
});

describe.skipIf(!HAVE_CHROMIUM)(HAVE_CHROMIUM ? "start after review, in Chromium" : `start after review (SKIPPED: ${CHROMIUM} is missing)`, () => {
  test("a loop waiting for review shows why and a Start button; pressing it records the review's start", async () => {
    const p = new Project(demoDefinition([{ id: "one", prompt: "@demo write one.txt x", verify: "test -f one.txt" }], { control: { review: true } }));
    const browser = await launchBrowser();
    let served: Awaited<ReturnType<typeof serve>> | undefined;
    try {
      await p.run([1]);
      served = await serve(p);
      const page = await browser.context.newPage();
      await page.goto(served.url);
      expect(await page.locator(".attention[data-kind=review]").count()).toBe(1);
      expect(await page.locator("form.act").evaluateAll((fs) => fs.map((f) => f.getAttribute("data-verb")))).toEqual(["start", "pause"]);
      const started = await act(page, "start");
      expect(started.ok).toBe("1");
      expect(started.text).toMatch(/^start: start the loop after its review \(revision \d+\)/);
      const e = p.events().filter((x) => x.type === "loop_reviewed");
      expect(e.map((x) => x.actor)).toEqual(["page:loopback"]);
      await page.locator(".attention[data-kind=review]").waitFor({ state: "detached" });
    } finally {
      if (served) expect(await served.stop()).toBe(130);
      await browser.close();
      p.dispose();
    }
  }, 120_000);
});

describe.skipIf(!HAVE_CHROMIUM)(HAVE_CHROMIUM ? "stop in Chromium" : `stop in Chromium (SKIPPED: ${CHROMIUM} is missing)`, () => {
  test("stop an item in flight from its page: the typed id asked, its live session ended, the item held, recorded as page:loopback", async () => {
    const p = new Project(demoDefinition([{ id: "long", prompt: "Work long.\n@demo sleep 60\n@demo write long.txt x", verify: "test -f long.txt" }]));
    let served: Awaited<ReturnType<typeof serve>> | null = null;
    let browser: Browser | null = null;
    try {
      await p.runUntil(() => p.projection().items.long?.status === "running", { what: "long runs" });
      const pid = p.projection().items.long!.session!.pid;
      served = await serve(p);
      browser = await launchBrowser();
      const page = await browser.context.newPage();
      await page.goto(new URL("items/long", served.url.endsWith("/") ? served.url : served.url + "/").href);
      const head = p.head();
      expect(await act(page, "stop", { confirm: "lon" })).toMatchObject({ ok: "0" });
      expect(p.head()).toBe(head);
      const stopped = await act(page, "stop", { confirm: "long" });
      expect(stopped.ok).toBe("1");
      // loop ctl stop's own events: the control recorded and the attempt given back uncounted, both by the page.
      const recorded = p
        .events()
        .filter((e) => (e.type === "control_recorded" && (e.payload as { verb: string }).verb === "stop") || e.type === "item_requeued");
      expect(recorded.map((e) => [e.type, e.actor])).toEqual([
        ["control_recorded", "page:loopback"],
        ["item_requeued", "page:loopback"],
      ]);
      const it = p.projection().items.long!;
      expect({ status: it.status, held: it.held }).toEqual({ status: "pending", held: true });
      // Its live session was ended: the agent's process is gone (waited for, not timed).
      for (let i = 0; i < 100 && alive(pid!); i++) await Bun.sleep(100);
      expect(alive(pid!)).toBe(false);
      // Held: the next step launches nothing.
      await p.run();
      expect(p.projection().items.long!.status).toBe("pending");
      await page.close();
    } finally {
      await browser?.close();
      await served?.stop();
      p.dispose();
    }
  }, 180_000);
});

/** Whether a process of that pid is still there. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
