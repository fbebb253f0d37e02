// Where each item's time went, in `loop status` (docs/cli/loop-status.md#where-the-time-went), against
// a real loop: real `loop run` steps over a temp repository (setup, the demo agent, verify, landing
// merge). The phases are the page's, in order; each lasts ≥ 0; with what no phase covers they add up
// to the attempt's wall-clock; loop's own time is the wall-clock less the agent, setup and verify.
// By default the item in flight and the last 3 settled; `--times` every one, attempt by attempt.
// Nothing here measures how long anything took.
import { describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { demoDefinition, type Project, scenario } from "../helpers/project.ts";
import { PHASE_KINDS } from "../../lib/reports/history.ts";

const T = 120_000;

interface Phase {
  phase: string;
  from: string;
  to: string | null;
  ms: number;
}
interface Attempt {
  attempt: number;
  fate: string | null;
  from: string;
  to: string | null;
  wallMs: number;
  phases: Phase[];
  agentMs: number;
  setupMs: number;
  verifyMs: number;
  ownMs: number;
  unaccountedMs: number;
}
interface Times {
  attempts: Attempt[];
  wallMs: number;
  agentMs: number;
  setupMs: number;
  verifyMs: number;
  ownMs: number;
}

const pass = (id: string) => ({ id, prompt: `@demo write ${id}.txt ${id}\n@demo commit ${id}`, verify: `test -s ${id}.txt` });

async function status(p: Project, ...flags: string[]): Promise<{ items: { id: string; status: string; times: Times | null }[] }> {
  const r = await p.loop(["status", "--json", "--root", p.root, ...flags]);
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout);
}

const DOC = readFileSync(join(import.meta.dir, "../../docs/cli/loop-status.md"), "utf8");

/** The fields of `items[].times` are the documented ones: each named in its row of the JSON table, and the example's are the ones status prints. */
function checkDocumented(t: Times): void {
  const row = DOC.split("\n").find((l) => l.startsWith("| `items[].times`"))!;
  const a = t.attempts[0]!;
  for (const k of [...Object.keys(t), ...Object.keys(a), ...Object.keys(a.phases[0]!)])
    expect({ k, documented: row.includes(`\`${k}\``) }).toEqual({ k, documented: true });
  const json = DOC.slice(DOC.indexOf("```json", DOC.indexOf("### JSON")) + 7);
  const example = JSON.parse(json.slice(0, json.indexOf("```"))).items[0].times as Times;
  expect(Object.keys(example).sort()).toEqual(Object.keys(t).sort());
  expect(Object.keys(example.attempts[0]!).sort()).toEqual(Object.keys(a).sort());
  expect(Object.keys(example.attempts[0]!.phases[0]!).sort()).toEqual(Object.keys(a.phases[0]!).sort());
}

/** Every file under the state root with its bytes' hash and mtime, but the sessions' (the running agent writes there): status must leave them as they were. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    const path = join(e.parentPath, e.name);
    if (!e.isFile() || path.startsWith(join(dir, "sessions"))) continue;
    out[path] = `${createHash("sha256").update(readFileSync(path)).digest("hex")} ${statSync(path).mtimeMs}`;
  }
  return out;
}

/** The structure every attempt's times keep, whatever the timing. */
function checkAttempt(a: Attempt, open: boolean): void {
  expect(a.phases.length).toBeGreaterThan(0);
  expect(a.phases[0]!.phase).toBe("launching");
  expect(a.phases[0]!.from).toBe(a.from);
  for (const ph of a.phases) {
    expect(PHASE_KINDS as readonly string[]).toContain(ph.phase);
    expect(ph.ms).toBeGreaterThanOrEqual(0);
    if (ph.to !== null) expect(Date.parse(ph.to) - Date.parse(ph.from)).toBe(ph.ms);
  }
  // In order: each phase starts where the one before it ended (none overlaps, none goes back).
  for (let i = 1; i < a.phases.length; i++)
    expect(Date.parse(a.phases[i]!.from)).toBeGreaterThanOrEqual(Date.parse(a.phases[i - 1]!.to ?? a.phases[i - 1]!.from));
  // Everything but the last phase has ended; the last is open exactly while the attempt is.
  expect(a.phases.slice(0, -1).every((ph) => ph.to !== null)).toBe(true);
  expect(a.phases.at(-1)!.to === null).toBe(open);
  expect(a.to === null).toBe(open);
  if (!open) expect(Date.parse(a.to!) - Date.parse(a.from)).toBe(a.wallMs);
  // The sums: the phases and what none covers make the wall-clock; loop's own is the rest of the work.
  expect(a.unaccountedMs).toBeGreaterThanOrEqual(0);
  expect(a.phases.reduce((s, ph) => s + ph.ms, 0) + a.unaccountedMs).toBe(a.wallMs);
  const of = (k: string) => a.phases.filter((ph) => ph.phase === k).reduce((s, ph) => s + ph.ms, 0);
  expect([a.agentMs, a.setupMs, a.verifyMs]).toEqual([of("agent"), of("setup"), of("verify")]);
  expect(a.ownMs).toBe(a.wallMs - a.agentMs - a.setupMs - a.verifyMs);
}

function checkItem(t: Times): void {
  const sum = (f: (a: Attempt) => number) => t.attempts.reduce((s, a) => s + f(a), 0);
  expect([t.wallMs, t.agentMs, t.setupMs, t.verifyMs, t.ownMs]).toEqual([
    sum((a) => a.wallMs),
    sum((a) => a.agentMs),
    sum((a) => a.setupMs),
    sum((a) => a.verifyMs),
    sum((a) => a.ownMs),
  ]);
}

describe("loop status: where the time went", () => {
  test.concurrent(
    "the item in flight (its running phase open) and the last 3 settled by default, each attempt's phases in order adding up to its wall-clock; --times: every item, every attempt; read-only",
    () =>
      scenario(
        demoDefinition(
          [
            pass("a"),
            // Fails its verify twice: two attempts, then settled failed.
            { id: "b", prompt: "@demo write b.txt b\n@demo commit b", verify: "false" },
            pass("c"),
            pass("e"),
            { id: "d", prompt: "@demo sleep 60\n@demo write d.txt d", verify: "test -s d.txt" },
          ],
          { defaults: { landing: "merge", maxAttempts: 2 }, workspace: { setup: "mkdir -p deps && echo x > deps/f.js" } },
        ),
        {},
        async (p) => {
          await p.runUntil(() => p.eventsOf("session_started", "d").length > 0, { what: "d's agent runs", codes: [0, 1] });
          const before = snapshot(p.stateRoot);
          const shown = await status(p);
          const byId = new Map(shown.items.map((it) => [it.id, it]));
          // The default: the last 3 settled (b, c, e) and the item in flight (d); not a, settled first.
          expect(shown.items.filter((it) => it.times !== null).map((it) => it.id)).toEqual(["b", "c", "e", "d"]);
          expect(byId.get("a")!.times).toBeNull();
          checkDocumented(byId.get("c")!.times!);
          for (const id of ["b", "c", "e"]) {
            const t = byId.get(id)!.times!;
            checkItem(t);
            for (const a of t.attempts) checkAttempt(a, false);
          }
          // A passing attempt: launching (setup apart within it), the agent, the airlock, verify, landing, closing (the worktree's removal).
          for (const id of ["c", "e"]) {
            const [a] = byId.get(id)!.times!.attempts;
            expect(a!.fate).toBe("passed");
            const kinds = a!.phases.map((ph) => ph.phase);
            // Setup splits the launch in two where it ran; the waits for a step come after the agent's and the verify's own end.
            expect(kinds.join(" ")).toMatch(/^launching( setup launching)? agent( step)? airlock verify( step)? landing closing$/);
          }
          const b = byId.get("b")!.times!;
          expect(b.attempts.map((a) => [a.attempt, a.fate])).toEqual([
            [1, "failed"],
            [2, "failed"],
          ]);
          // Its first attempt's verify ran and failed; the second's agent changed nothing, so its verdict came without a verify.
          expect(b.attempts[0]!.phases.map((ph) => ph.phase)).toContain("verify");
          // In flight: its phases so far, the last one open (the agent sleeps).
          const d = byId.get("d")!.times!;
          expect(d.attempts).toHaveLength(1);
          expect(d.attempts[0]!.fate).toBeNull();
          checkAttempt(d.attempts[0]!, true);
          checkItem(d);
          expect(d.attempts[0]!.phases.at(-1)!.phase).toBe("agent");
          // Setup ran in some launch and is its own phase (setup once: later items may get a copy, shorter).
          const all = await status(p, "--times");
          expect(all.items.every((it) => it.times !== null)).toBe(true);
          expect(all.items.flatMap((it) => it.times!.attempts.flatMap((a) => a.phases.map((ph) => ph.phase)))).toContain("setup");
          for (const it of all.items) {
            checkItem(it.times!);
            for (const a of it.times!.attempts) checkAttempt(a, it.id === "d");
          }
          // The text: a row per attempt shown, the phases named in order, the running one marked.
          const text = (await p.loop(["status", "--text", "--root", p.root])).stdout;
          const section = text.slice(text.indexOf("where the time went"));
          expect(section).toContain("ITEM");
          const rows = section
            .split("\n")
            .slice(2)
            .filter((l) => /^ {2}[a-z]\s/.test(l));
          expect(rows.map((l) => l.trim().split(/\s+/)[0])).toEqual(["b", "c", "e", "d"]);
          // Loop's own time per item, its attempts together (b's two), the one in flight so far.
          expect(section).toMatch(/\nown per item, its attempts together: b [^·]+ s · c [^·]+ s · e [^·]+ s · d [^·]+ s so far\n/);
          expect(rows.at(-1)).toMatch(/^ {2}d\s+1\s+in flight\s.*launching .* · agent [0-9.]+ s…$/);
          const full = (await p.loop(["status", "--text", "--times", "--root", p.root])).stdout;
          const fullRows = full
            .slice(full.indexOf("where the time went"))
            .split("\n")
            .filter((l) => /^ {2}[a-z]\s/.test(l));
          expect(fullRows.map((l) => l.trim().split(/\s+/).slice(0, 2).join(" "))).toEqual(["a 1", "b 1", "b 2", "c 1", "e 1", "d 1"]);
          // Status wrote nothing.
          expect(snapshot(p.stateRoot)).toEqual(before);
          expect((await p.ctl(["cancel", "--work-item", "d", "--yes"])).code).toBe(0);
          // Cancelled: settled, its phases ended, and now one of the last 3 settled.
          const after = await status(p);
          const dt = after.items.find((it) => it.id === "d")!.times!;
          expect(dt.attempts[0]!.fate).toBe(after.items.find((it) => it.id === "d")!.status);
          checkAttempt(dt.attempts[0]!, false);
          expect(after.items.filter((it) => it.times !== null).map((it) => it.id)).toEqual(["c", "e", "d"]);
        },
      ),
    T,
  );
});
