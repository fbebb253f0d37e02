#!/usr/bin/env bun
// `bun scripts/release/check-elf.ts <target> <binary>`: is this binary what the release target
// needs (its architecture, libc loader and shared libraries: targets.ts)? For .ci/run, which checks
// every artifact this way, including those it cannot run (the musl builds).
import { readFileSync } from "node:fs";
import { readElf } from "./elf.ts";
import { elfMismatches, TARGETS } from "./targets.ts";

const [name, file] = process.argv.slice(2);
const target = TARGETS.find((t) => t.name === name);
if (!target || !file) {
  console.error(`usage: bun scripts/release/check-elf.ts <target> <binary> (targets: ${TARGETS.map((t) => t.name).join(", ")})`);
  process.exit(2);
}
let elf;
try {
  elf = readElf(readFileSync(file));
} catch (err) {
  console.error(`${file}: ${(err as Error).message}`);
  process.exit(1);
}
const wrong = elfMismatches(target, elf);
if (wrong.length) {
  console.error(`${file}: not a ${name} binary: ${wrong.join("; ")}`);
  process.exit(1);
}
console.log(`${name}: ${elf.machine}, interpreter ${elf.interpreter}, needs ${elf.needed.join(" ")}`);
