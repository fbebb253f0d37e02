// Review and start (control.review, docs/cli/loop-ctl.md#review-and-start), through the binary on real
// temp repositories: a fresh `loop init` turns it on; with items, `loop run` launches nothing, exits 1
// and prints the review; `loop ctl start` shows it and asks (on a terminal), `--yes` starts it and
// its --json carries it; the next run launches; a budget raised waits for review again, an item
// added does not; the review's most-it-can-spend is the budgets at the prices.
import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BUN, LOOP, runLoopSync } from "../helpers/cli.ts";
import { makeRepo } from "../helpers/repo.ts";
import { onTerminal } from "../helpers/tty.ts";
import { testEnv } from "../helpers/env.ts";

const temps: string[] = [];
afterAll(() => temps.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** No agent CLI on PATH: init falls back to the demo runner, and says so. */
const PATH = "/usr/bin:/bin";

function cli(args: string[], root: string) {
  const r = runLoopSync(args, { cwd: root, env: { PATH } });
  return {
    ...r,
    json: (() => {
      try {
        return JSON.parse(r.stdout);
      } catch {
        return null;
      }
    })(),
  };
}

/** A fresh repository after `loop init`, with two items added, a verify that passes, and what `edit` does to loop.json. */
function freshLoop(edit: (text: string) => string = (t) => t): { root: string; init: ReturnType<typeof cli> } {
  const { dir, root } = makeRepo({ prefix: "loop-review-" });
  temps.push(dir);
  const init = cli(["init", "--json"], root);
  expect(init.code, init.stderr).toBe(0);
  for (const p of ["write hello", "write world"]) expect(cli(["add", p, "--json"], root).code).toBe(0);
  const def = join(root, "loop.json");
  writeFileSync(def, edit(readFileSync(def, "utf8").replace('"verify": "exit 1"', '"verify": "true"')));
  return { root, init };
}

/** Give loop.json a top-level entry, before "runners". */
const withTop = (entry: string) => (t: string) => t.replace('"runners": {},', `${entry},\n  "runners": {},`);
const launched = (r: ReturnType<typeof cli>) => r.json.transitions.filter((t: { type: string }) => t.type === "session_started").length;

describe("review and start, through the binary", () => {
  test("init turns review on and warns of the demo runner; the first run launches nothing, exits 1 and prints the review; ctl start --yes starts it", () => {
    // notify hears of it as of every other condition that needs a person.
    const { root, init } = freshLoop(withTop('"notify": { "command": ["sh", "-c", "cat >> notified.jsonl"] }'));
    expect(readFileSync(join(root, "loop.json"), "utf8")).toContain('"review": true');
    expect(init.json.runner).toBe("demo");
    expect(init.json.warnings.join("\n")).toContain('no agent CLI (claude, codex, gemini, opencode, aider) is on PATH, so loop.json says "runner": "demo"');
    expect(init.json.warnings.join("\n")).toContain("`loop ctl start`");

    const first = cli(["run", "--json"], root);
    expect(first.code).toBe(1);
    expect(first.json.action).toBe("review");
    expect(launched(first)).toBe(0);
    expect(first.json.attention.map((a: { kind: string }) => a.kind)).toEqual(["review"]);
    expect(first.json.review.items.map((it: { id: string; runner: string }) => [it.id, it.runner])).toEqual([
      ["write-hello", "demo"],
      ["write-world", "demo"],
    ]);
    expect(first.json.review.maxSpend).toBeNull();
    // The review on stderr: the scale, the landing said plainly, the spend, the command.
    for (const s of [
      "2 items to run:",
      "write-hello: demo (its default model)",
      "nothing is merged",
      "most it can spend: no budget: unbounded",
      "to start it: loop ctl start",
    ])
      expect(first.stderr).toContain(s);
    const notified = () =>
      readFileSync(join(root, "notified.jsonl"), "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l));
    expect(notified().map((d: { kind: string }) => d.kind)).toEqual(["review"]);
    // Again: still nothing launches (nor is anyone told twice), and status says why, as attention of kind review.
    expect(launched(cli(["run", "--json"], root))).toBe(0);
    expect(notified()).toHaveLength(1);
    const status = cli(["status", "--json"], root);
    expect(status.json.attention.map((a: { kind: string }) => a.kind)).toEqual(["review"]);
    expect(status.json.loop.review.waiting.reasons.map((r: { code: string }) => r.code)).toEqual(["not_started"]);
    expect(status.json.items.map((it: { waiting: { reason: string } }) => it.waiting.reason)).toEqual(["loop_review", "loop_review"]);

    // Off a terminal, without --yes: refused, nothing recorded.
    const refused = cli(["ctl", "start"], root);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("pass --yes");
    const start = cli(["ctl", "start", "--yes", "--json"], root);
    expect(start.code, start.stderr).toBe(0);
    expect(start.json.review).toMatchObject({
      items: [{ id: "write-hello" }, { id: "write-world" }],
      landing: { mode: "none" },
      maxSpend: null,
      start: "loop ctl start",
    });
    expect(start.json.transitions.map((t: { type: string }) => t.type)).toEqual(["loop_reviewed", "loop_started"]);
    const next = cli(["run", "--json"], root);
    expect(next.json.action).toBe("launched");
    expect(launched(next)).toBe(1);
    expect(cli(["replay", "--json"], root).code).toBe(0);
  });

  test("the most it can spend is the budgets at the prices; raising a budget waits for review again, adding an item does not", () => {
    // Two items of 100,000 tokens each at $75 per million (the model's dearest price): $7.50 each; the loop's own budget is $20.
    const { root } = freshLoop((t) =>
      withTop('"budget": { "usd": 20 },\n  "prices": { "m1": { "input": 15, "output": 75 } }')(t).replace(
        '"model": null,',
        '"model": "m1",\n    "budget": { "tokens": 100000 },',
      ),
    );
    const first = cli(["run", "--json"], root);
    expect(first.json.review.maxSpend).toBe(15);
    expect(first.json.review.items.map((it: { maxSpend: number }) => it.maxSpend)).toEqual([7.5, 7.5]);
    expect(first.stderr).toContain("most it can spend: at most $15.00");
    expect(cli(["ctl", "start", "--yes", "--json"], root).code).toBe(0);

    // An item added under the same settings: imported, no review.
    expect(cli(["add", "write more", "--json"], root).code).toBe(0);
    const added = cli(["run", "--json"], root);
    expect(added.json.attention).toEqual([]);
    expect(added.json.transitions.map((t: { type: string }) => t.type)).toContain("definition_imported");
    expect(added.json.transitions.map((t: { type: string }) => t.type)).not.toContain("review_required");

    // The loop's budget raised: imported, named, and nothing more launches until a start.
    const def = join(root, "loop.json");
    writeFileSync(def, readFileSync(def, "utf8").replace('"budget": { "usd": 20 }', '"budget": { "usd": 50 }'));
    // Until the attempt in flight has its verdict the import waits; step until it is imported.
    let raised = cli(["run", "--json"], root);
    for (let i = 0; i < 60 && raised.json.action !== "review"; i++) {
      Bun.sleepSync(200);
      raised = cli(["run", "--json"], root);
    }
    expect(raised.json.action).toBe("review");
    expect(raised.code).toBe(1);
    expect(raised.json.review.reasons).toEqual([{ code: "budget_raised", detail: "the loop's budget $20.00 → $50.00" }]);
    expect(raised.stderr).toContain("budget_raised (the loop's budget $20.00 → $50.00)");
    const start = cli(["ctl", "start", "--yes", "--json"], root);
    expect(start.json.review.reasons.map((r: { code: string }) => r.code)).toEqual(["budget_raised"]);
    expect(start.json.transitions.map((t: { type: string }) => t.type)).toEqual(["loop_reviewed"]);
    expect(cli(["replay", "--json"], root).code).toBe(0);
  });

  test("a loop.json without control.review behaves as before: the first run launches", () => {
    const { root } = freshLoop((t) => t.replace('"review": true', '"review": false'));
    const r = cli(["run", "--json"], root);
    expect(r.json.action).toBe("launched");
    expect(r.json.review).toBeUndefined();
  });

  test("on a terminal, ctl start shows the review and asks; No records nothing, Yes starts the loop", async () => {
    const { root } = freshLoop();
    expect(cli(["run", "--json"], root).code).toBe(1);
    const db = readFileSync(join(root, ".loop", "loop.db"));
    const ask = async (keys: string) => {
      const tty = onTerminal([BUN, LOOP, "ctl", "start", "--text"], { cwd: root, env: testEnv({ TERM: "xterm-256color", NO_COLOR: "1", PATH }) });
      await tty.waitFor("Go ahead?");
      expect(tty.text()).toContain("2 items to run:");
      expect(tty.text()).toContain("nothing is merged");
      tty.write(keys);
      return tty.ended();
    };
    const no = await ask("n\r");
    expect(no.code).toBe(3);
    expect(readFileSync(join(root, ".loop", "loop.db")).equals(db)).toBe(true);
    const yes = await ask("y\r");
    expect(yes.code).toBe(0);
    expect(yes.text).toContain("start the loop after its review (revision 1)");
    expect(cli(["run", "--json"], root).json.action).toBe("launched");
  });
});
