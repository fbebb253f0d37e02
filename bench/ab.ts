#!/usr/bin/env bun
// bench/ab.ts — compare commands on a noisy machine: every round runs each command once, in turn,
// so whatever disturbs the machine disturbs all of them alike. Prints median, minimum and first
// quartile of the wall time per command (one untimed round first).
//
//   bun bench/ab.ts [--rounds 31] 'CMD ARGS…' 'CMD ARGS…' …
//
// Commands are split on spaces (no quoting). Example, two builds of status on the 1M root:
//   bun bench/ab.ts --rounds 41 '/tmp/loop-old status --json --root R' 'dist/loop status --json --root R'
import { parseArgs } from "node:util";

const { values, positionals } = parseArgs({ args: process.argv.slice(2), options: { rounds: { type: "string" } }, allowPositionals: true, strict: true });
const rounds = Number(values.rounds ?? 31);
if (positionals.length === 0 || !Number.isInteger(rounds) || rounds < 1) {
  process.stderr.write("usage: bun bench/ab.ts [--rounds N] 'CMD ARGS…' …\n");
  process.exit(2);
}
const cmds = positionals.map((c) => c.split(" ").filter(Boolean));
const times: number[][] = cmds.map(() => []);
for (let r = 0; r <= rounds; r++)
  cmds.forEach((cmd, i) => {
    const t = performance.now();
    const p = Bun.spawnSync(cmd, { stdout: "pipe", stderr: "pipe" });
    const ms = performance.now() - t;
    if (p.exitCode !== 0 && r === 0) process.stderr.write(`note: exit ${p.exitCode} from ${cmd.join(" ")}\n`);
    if (r > 0) times[i]!.push(ms);
  });
process.stdout.write(`| command | median ms | min ms | p25 ms |\n| --- | ---: | ---: | ---: |\n`);
cmds.forEach((cmd, i) => {
  const s = times[i]!.sort((a, b) => a - b);
  process.stdout.write(`| \`${cmd.join(" ")}\` | ${s[s.length >> 1]!.toFixed(1)} | ${s[0]!.toFixed(1)} | ${s[s.length >> 2]!.toFixed(1)} |\n`);
});
