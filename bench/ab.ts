#!/usr/bin/env bun
// bench/ab.ts — compare commands on a noisy machine: every round runs each command once, in turn,
// so whatever disturbs the machine disturbs all of them alike (each round starting with the next
// command). Prints median, minimum and first quartile of the wall time per command (one untimed
// round first), the median CPU time (user + system of the child: on a machine shared with other
// load, the steadier figure) and how many runs exited non-zero; exits 1 if any did.
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
const cpu: number[][] = cmds.map(() => []);
const failures: number[] = cmds.map(() => 0);
for (let r = 0; r <= rounds; r++)
  // Each round starts with the next command, so none always runs first (or right after another).
  for (let k = 0; k < cmds.length; k++) {
    const i = (r + k) % cmds.length;
    const t = performance.now();
    const p = Bun.spawnSync(cmds[i]!, { stdout: "pipe", stderr: "pipe" });
    const ms = performance.now() - t;
    if (p.exitCode !== 0) failures[i]!++;
    if (r > 0) {
      times[i]!.push(ms);
      cpu[i]!.push(Number(p.resourceUsage?.cpuTime.total ?? 0n) / 1000);
    }
  }
process.stdout.write(`| command | median ms | min ms | p25 ms | CPU median ms | failed runs |\n| --- | ---: | ---: | ---: | ---: | ---: |\n`);
cmds.forEach((cmd, i) => {
  const s = times[i]!.sort((a, b) => a - b);
  const c = cpu[i]!.sort((a, b) => a - b);
  process.stdout.write(
    `| \`${cmd.join(" ")}\` | ${s[s.length >> 1]!.toFixed(1)} | ${s[0]!.toFixed(1)} | ${s[s.length >> 2]!.toFixed(1)} | ${c[c.length >> 1]!.toFixed(1)} | ${failures[i]} |\n`,
  );
});
// A command that failed is not timed doing its job: say so, and fail.
if (failures.some((n) => n > 0)) {
  process.stderr.write('ab: some runs exited non-zero (column "failed runs"): their times are not comparable\n');
  process.exit(1);
}
