#!/usr/bin/env bun
// bench/session-start.ts: what a session's wrapper (`loop __session`, lib/supervisor/session-wrapper.ts)
// costs before its agent starts, on compiled binaries: from the wrapper's spawn until it has written
// started.json (the agent spawned), with and without a gateway (every session that can reach a model
// API has one: docs/threat-model.md#the-gateway). Round-robin over the variants, so that the noise of a
// shared machine hits them alike. The agent is `true`.
//   bun bench/session-start.ts [--runs 31] --bin dist/loop [--bin /tmp/loop-old …]
// A binary whose wrapper knows no private channel (older than the gateway by default) is run without
// one, and its gateway variant is skipped.
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: { runs: { type: "string" }, bin: { type: "string", multiple: true }, old: { type: "string", multiple: true } },
  strict: true,
});
const RUNS = Number(values.runs ?? 31);
const bins = (values.bin ?? [join(import.meta.dir, "..", "dist", "loop")]).map((b) => resolve(b));
const old = new Set((values.old ?? []).map((b) => resolve(b)));
const base = mkdtempSync(join(tmpdir(), "loop-bench-wrapper-"));

type Variant = { bin: string; gateway: boolean };
const variants: Variant[] = bins.flatMap((bin) =>
  old.has(bin)
    ? [{ bin, gateway: false }]
    : [
        { bin, gateway: false },
        { bin, gateway: true },
      ],
);
const times: number[][] = variants.map(() => []);

function once(v: Variant, n: number): number {
  const dir = join(base, String(n));
  mkdirSync(dir);
  const gateway = v.gateway ? { gateway: { standIn: "loop-stand-in-bench", allow: null } } : {};
  const privately = old.has(v.bin) ? {} : { private: "stdin" };
  writeFileSync(
    join(dir, "launch.json"),
    JSON.stringify({ argv: ["true"], cwd: dir, env: { LOOP_SESSION_ID: `bench-${n}` }, tee: false, mark: `bench-${n}`, ...gateway, ...privately }),
  );
  const t0 = performance.now();
  const p = Bun.spawn([v.bin, "__session", dir], {
    stdin: old.has(v.bin) ? "ignore" : "pipe",
    stdout: "ignore",
    stderr: "ignore",
    env: { PATH: process.env.PATH ?? "" },
  });
  if (!old.has(v.bin)) {
    const sink = p.stdin as import("bun").FileSink;
    sink.write(JSON.stringify({ upstream: { ANTHROPIC_API_KEY: "sk-bench" } }));
    void sink.end();
  }
  const started = join(dir, "started.json");
  for (let i = 0; i < 20_000 && !existsSync(started); i++) Bun.sleepSync(1);
  const ms = performance.now() - t0;
  if (!existsSync(started)) throw new Error(`${v.bin}: the wrapper never started its agent`);
  return ms;
}

let n = 0;
try {
  for (let r = 0; r <= RUNS; r++)
    for (let k = 0; k < variants.length; k++) {
      const i = (r + k) % variants.length;
      const ms = once(variants[i]!, n++);
      if (r > 0) times[i]!.push(ms);
    }
} finally {
  rmSync(base, { recursive: true, force: true });
}
const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
process.stdout.write("| wrapper | gateway | median ms | min | p25 | runs |\n|---|---|---:|---:|---:|---:|\n");
variants.forEach((v, i) => {
  const s = sorted(times[i]!);
  process.stdout.write(
    `| ${v.bin} | ${v.gateway ? "yes" : "no"} | ${s[Math.floor(s.length / 2)]!.toFixed(1)} | ${s[0]!.toFixed(1)} | ${s[Math.floor(s.length / 4)]!.toFixed(1)} | ${s.length} |\n`,
  );
});
