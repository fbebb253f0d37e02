// run.pid, the one `loop run --watch` of a state root (lib/writer/run-pid.ts), on real files and real
// processes: a live watcher's file is never taken or removed by another; a dead one's is replaced,
// including when its pid now belongs to an unrelated process.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BusyError } from "../../lib/shared/errors.ts";
import { processStartTime } from "../../lib/shared/process.ts";
import { claimRunPid, readRunPid, releaseRunPid, type RunPid, selfRunPid, watcherAlive } from "../../lib/writer/run-pid.ts";
import { TempDirs } from "../helpers/fs.ts";

const temp = new TempDirs();
afterAll(() => temp.cleanup());

/** A pid that was just used and is gone (its process exited and was reaped). */
const deadPid = () => Bun.spawnSync(["true"]).pid;
/** A live process that is not this one (a child that sleeps until the test file ends). */
const other = Bun.spawn(["sleep", "600"]);
afterAll(() => other.kill());

describe("run.pid", () => {
  const me = selfRunPid();
  const live: RunPid = { pid: other.pid, started: processStartTime(other.pid) };

  test("records this process with its start time", () => {
    expect(me.pid).toBe(process.pid);
    expect(me.started).toMatch(/^\d+$/);
    expect(watcherAlive(me)).toBe(true);
    expect(watcherAlive(live)).toBe(true);
    expect(watcherAlive({ pid: deadPid(), started: null })).toBe(false);
    // The pid of a live process with another start time is a reused pid, not the watcher.
    expect(watcherAlive({ pid: other.pid, started: "1" })).toBe(false);
  });

  const cases: { name: string; before: string | null; claims: boolean }[] = [
    { name: "no file: claimed", before: null, claims: true },
    { name: "a live watcher's file: busy, left alone", before: `${live.pid} ${live.started}\n`, claims: false },
    { name: "a live watcher's file without start time (no /proc when written): busy", before: `${live.pid}\n`, claims: false },
    { name: "a dead watcher's file: replaced", before: `${deadPid()} 12345\n`, claims: true },
    { name: "a pid now reused by another process (start time differs): replaced", before: `${live.pid} 1\n`, claims: true },
    { name: "an empty or unreadable file: replaced", before: "", claims: true },
    { name: "garbage: replaced", before: "not a pid\n", claims: true },
    { name: "pid 0 (which kill(0) would call alive): replaced", before: "0\n", claims: true },
    { name: "this process's pid with another start time (a restart reusing it): replaced", before: `${process.pid} 1\n`, claims: true },
  ];
  for (const c of cases)
    test(c.name, () => {
      const dir = temp.make();
      const path = join(dir, "run.pid");
      if (c.before !== null) writeFileSync(path, c.before);
      if (c.claims) {
        claimRunPid(path, me);
        expect(readRunPid(path)).toEqual(me);
        releaseRunPid(path, me);
        expect(existsSync(path)).toBe(false);
      } else {
        expect(() => claimRunPid(path, me)).toThrow(BusyError);
        expect(() => claimRunPid(path, me)).toThrow(`pid ${live.pid}`);
        expect(readFileSync(path, "utf8")).toBe(c.before!);
        releaseRunPid(path, me); // not ours: stays
        expect(readFileSync(path, "utf8")).toBe(c.before!);
      }
      expect(readdirSync(dir).filter((f) => f !== "run.pid")).toEqual([]); // no temp file left
    });

  test("a watcher's file replaced by another is not removed by the first when it stops", () => {
    const path = join(temp.make(), "run.pid");
    claimRunPid(path, me);
    writeFileSync(path, `${live.pid} ${live.started}\n`); // another watcher took over the file
    releaseRunPid(path, me);
    expect(readRunPid(path)).toEqual(live);
  });
});
