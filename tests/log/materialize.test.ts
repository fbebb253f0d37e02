// RUNLOG.md and state.json repair: what a crash can leave behind is brought back to exactly what a
// clean write produces, reading only the end of RUNLOG.md.
import { afterEach, describe, expect, test } from "bun:test";
import { readFileSync, rmSync, truncateSync, writeFileSync, appendFileSync } from "node:fs";
import { join } from "node:path";
import { materialize, repairRunlog } from "../../lib/log/materialize.ts";
import { makeTempDir, removeDir } from "../helpers/fs.ts";
import { buildStore, realisticDrafts } from "../helpers/store.ts";

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach(removeDir));

function setup() {
  const dir = makeTempDir("loop-mat-");
  dirs.push(dir);
  const stateRoot = join(dir, ".loop");
  const store = buildStore(stateRoot, realisticDrafts(), { keepOpen: true });
  const runlog = join(stateRoot, "RUNLOG.md");
  const clean = readFileSync(runlog, "utf8");
  return { store, stateRoot, runlog, clean };
}

describe("RUNLOG.md repair", () => {
  test("a clean file is left alone; every decided attempt has one block", () => {
    const { store, runlog, clean } = setup();
    expect(clean.match(/<!-- \/loop:seq=\d+ -->/g)!.length).toBe(4); // a passed, b failed, b passed (after its reset), c skipped
    expect(repairRunlog(runlog, store.db)).toBe(false);
    expect(readFileSync(runlog, "utf8")).toBe(clean);
    store.close();
  });

  test.each([
    ["cut inside the last block", (t: string) => t.length - 40],
    ["cut inside the last end marker", (t: string) => t.lastIndexOf("<!-- /loop:seq=") + 8],
    ["cut right after the last end marker's newline", (t: string) => t.lastIndexOf(" -->\n") + 5],
    ["cut to the header only", (t: string) => t.indexOf("<!-- loop:seq=")],
  ])("%s: repaired to the clean text", (_name, cut) => {
    const { store, runlog, clean } = setup();
    truncateSync(runlog, Buffer.byteLength(clean.slice(0, cut(clean))));
    expect(repairRunlog(runlog, store.db)).toBe(true);
    expect(readFileSync(runlog, "utf8")).toBe(clean);
    store.close();
  });

  test("garbage after the last block is dropped; a missing or foreign file is rewritten", () => {
    const { store, runlog, clean } = setup();
    appendFileSync(runlog, "<!-- loop:seq=999 -->\n### torn");
    expect(repairRunlog(runlog, store.db)).toBe(true);
    expect(readFileSync(runlog, "utf8")).toBe(clean);
    rmSync(runlog);
    expect(repairRunlog(runlog, store.db)).toBe(true);
    expect(readFileSync(runlog, "utf8")).toBe(clean);
    writeFileSync(runlog, "my own notes\n");
    expect(repairRunlog(runlog, store.db)).toBe(true);
    expect(readFileSync(runlog, "utf8")).toBe(clean);
    store.close();
  });
});

describe("state.json repair", () => {
  test("a current file is kept (checked by hash); an edited or missing one is rewritten", () => {
    const { store, stateRoot } = setup();
    const path = join(stateRoot, "state.json");
    const clean = readFileSync(path, "utf8");
    expect(materialize(stateRoot, store)).toEqual([]);
    writeFileSync(path, clean.replace('"passed"', '"failed"'));
    expect(materialize(stateRoot, store)).toEqual(["state.json"]);
    expect(readFileSync(path, "utf8")).toBe(clean);
    rmSync(path);
    expect(materialize(stateRoot, store)).toEqual(["state.json"]);
    expect(readFileSync(path, "utf8")).toBe(clean);
    store.close();
  });
});
