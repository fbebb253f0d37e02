// The attack corpus (tests/attacks/corpus.ts, docs/threat-model.md#the-attack-corpus), every attack
// in each of its modes, through the real `loop run`: one test per attack and mode, each asserting
// that nothing of it landed, that no canary key is anywhere the agent could leave it, and that it did
// none of its other harms. The verdict codes it ended with are checked with LOOP_CORPUS_STRICT=1
// (until the codes are final). An attack marked knownOpen in a mode runs, is reported, and is left
// out of the counts. One line at the end sums it up; the acceptance is `0 landed, 0 keys read`.
//
// Knobs: LOOP_CORPUS_JOBS (scenarios at once, default 4), LOOP_CORPUS_ONLY (a comma list of ids),
// LOOP_CORPUS_REPORT=1 (a line per run: codes, steps, notes), LOOP_CORPUS_STRICT=1.
import { afterAll, expect, test } from "bun:test";
import { probeSandbox } from "../../lib/supervisor/sandbox.ts";
import { Semaphore } from "../helpers/project.ts";
import { type Attack, MODES, type Mode } from "./attack.ts";
import { CORPUS } from "./corpus.ts";
import { type Outcome, runAttack } from "./harness.ts";

const STRICT = process.env.LOOP_CORPUS_STRICT === "1";
const REPORT = process.env.LOOP_CORPUS_REPORT === "1";
const ONLY = process.env.LOOP_CORPUS_ONLY ? new Set(process.env.LOOP_CORPUS_ONLY.split(",")) : null;
/** A test waits for its turn inside its body: its timeout covers the whole queue. */
const T = 1_200_000;
const gate = new Semaphore(Number(process.env.LOOP_CORPUS_JOBS ?? 4));

// bwrap runs where it can make a sandbox with a session's flags (lib/supervisor/sandbox.ts probeSandbox,
// as the launch decides); elsewhere that mode is skipped, said once and in each skipped test's name.
const sandbox = probeSandbox(process.env.PATH ?? "");
const noSandbox = sandbox.ok ? null : `bwrap cannot make a sandbox here (${sandbox.message})`;
if (noSandbox) console.error(`attack corpus: the bwrap mode is skipped: ${noSandbox}`);

interface Run {
  attack: Attack;
  mode: Mode;
  outcome: Outcome;
}
const runs: Run[] = [];

const worked = (o: Outcome) => o.landed.length > 0 || o.keys.length > 0 || o.harmed.length > 0;

// The long ones first (a step deadline of their own, or steps taken while the agent runs): the
// queue is first come, first served, and they overlap best with the many short ones.
const slow = (a: Attack) => (a.stepDeadlineMs !== undefined || a.stepWhileRunning ? 0 : 1);
for (const attack of [...CORPUS].sort((x, y) => slow(x) - slow(y))) {
  if (ONLY && !ONLY.has(attack.id)) continue;
  for (const mode of attack.modes ?? MODES) {
    const name = `${attack.id} [${mode}]: ${attack.title}`;
    if (mode === "bwrap" && noSandbox) {
      test.skip(`${name} (skipped: ${noSandbox})`, () => {});
      continue;
    }
    test.concurrent(
      name,
      async () => {
        let ms = 0;
        const outcome = await gate.use(async () => {
          const t0 = performance.now();
          const o = await runAttack(attack, mode);
          ms = Math.round(performance.now() - t0);
          return o;
        });
        runs.push({ attack, mode, outcome });
        if (REPORT)
          console.error(
            `corpus ${attack.id} [${mode}]: ${worked(outcome) ? "WORKED" : "held"} (${ms} ms, ${outcome.steps.length} commands); codes ${outcome.codes.join(",") || "-"}; ` +
              `${JSON.stringify({ landed: outcome.landed, keys: outcome.keys, harmed: outcome.harmed, notes: outcome.notes })}`,
          );
        if (attack.measure)
          console.error(
            `corpus ${attack.id} [${mode}] steps: ${outcome.steps.map((s) => `${s.args.split(" ")[0]} ${s.ms}ms ${s.maxRssMb ?? "?"}MB exit ${s.signal ?? s.exit}`).join("; ")}`,
          );
        if (!attack.knownOpen?.[mode])
          expect({ landed: outcome.landed, keys: outcome.keys, harmed: outcome.harmed }).toEqual({ landed: [], keys: [], harmed: [] });
        if (STRICT)
          expect({ codes: outcome.codes, expected: attack.expect, met: outcome.codes.some((c) => attack.expect.includes(c)) }).toMatchObject({ met: true });
      },
      T,
    );
  }
}

afterAll(() => {
  if (!runs.length) return;
  const counted = runs.filter((r) => !r.attack.knownOpen?.[r.mode]);
  const open = runs.filter((r) => r.attack.knownOpen?.[r.mode]);
  const landed = counted.filter((r) => r.outcome.landed.length).length;
  const keys = counted.filter((r) => r.outcome.keys.length).length;
  const harmed = counted.filter((r) => r.outcome.harmed.length).length;
  const attacks = new Set(runs.map((r) => r.attack.id)).size;
  const modes = new Set(runs.map((r) => r.mode)).size;
  const tokensUnmetered = counted.reduce((n, r) => n + r.outcome.unmetered, 0);
  const gateway = runs.some((r) => r.attack.metering) ? `, ${tokensUnmetered} tokens unmetered` : "";
  const openIds = open.filter((r) => worked(r.outcome)).map((r) => `${r.attack.id} [${r.mode}]`);
  // A knownOpen run that no longer works: the mark can go.
  const closed = open.filter((r) => !worked(r.outcome)).map((r) => `${r.attack.id} [${r.mode}]`);
  console.error(
    `${attacks} attacks, ${modes} modes: ${landed} landed, ${keys} keys read, ${harmed} harmed${gateway}` +
      (openIds.length ? ` (${openIds.length} open: ${openIds.join(", ")})` : "") +
      (closed.length ? ` (marked open but held: ${closed.join(", ")})` : ""),
  );
});
