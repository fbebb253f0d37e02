// Sessions and verify commands in a systemd scope, for real on this machine through `loop run`
// (lib/supervisor/scope.ts): without systemd, the fallback to process groups recorded in
// session_started and verify_started, and a demanded scope refused before anything is reserved.
// The decision, the argv and the close path: scope.test.ts.
import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { demoDefinition, Project, scenario } from "../helpers/project.ts";

describe("on this machine, for real", () => {
  const noSystemd = !existsSync("/run/systemd/system");
  if (!noSystemd) console.warn("systemd runs here: the fallback test below is skipped (the scope path is taken instead)");

  test.skipIf(!noSystemd)(
    "without systemd a session and its verify run in process groups, and session_started and verify_started say so and why",
    () =>
      scenario(demoDefinition([{ id: "a", prompt: "hello" }]), {}, async (p) => {
        await p.runToDrain();
        const started = p.eventsOf("session_started", "a");
        expect(started).toHaveLength(1);
        const why =
          process.getuid?.() === 0
            ? "no systemd manager runs here (/run/systemd/system is missing)"
            : expect.stringContaining("no systemd user manager for uid");
        const mechanism = (e: { payload: object }) => ("mechanism" in e.payload ? e.payload.mechanism : undefined);
        expect(mechanism(started[0]!)).toEqual(
          Bun.which("systemd-run") ? { kind: "process_group", why } : { kind: "process_group", why: "systemd-run is not on PATH" },
        );
        expect(existsSync(join(p.sessionDir("a", 1), "scope.json"))).toBe(false);
        // Its verify command too, by the same decision, recorded in verify_started.
        const verify = p.eventsOf("verify_started", "a");
        expect(verify).toHaveLength(1);
        expect(mechanism(verify[0]!)).toEqual(mechanism(started[0]!));
        expect(existsSync(join(p.sessionDir("a", 1), "verify-scope.json"))).toBe(false);
        expect(p.eventsOf("verify_finished", "a")[0]!.payload.passed).toBe(true);
      }),
    60_000,
  );

  test.skipIf(!noSystemd)(
    "LOOP_SESSION_SCOPE=systemd without systemd: an environment fault, saying why; no attempt spent, nothing runs",
    async () => {
      const p = new Project(demoDefinition([{ id: "a", prompt: "hello" }], { defaults: { maxAttempts: 1 } }), { env: { LOOP_SESSION_SCOPE: "systemd" } });
      try {
        const r = await p.run([1]);
        expect(r.loop.state).toBe("paused");
        const faults = p.eventsOf("environment_fault");
        expect(faults).toHaveLength(1);
        // Found before anything is reserved (lib/decisions/faults.ts scopeFault).
        expect(String(faults[0]!.payload.reason)).toContain("sessions must run in a systemd scope of their own, but ");
        expect(faults[0]!.payload.attempt).toBeNull();
        expect(p.eventsOf("launch_reserved")).toEqual([]);
        expect(p.eventsOf("launch_failed")).toEqual([]);
        expect(p.eventsOf("session_started")).toEqual([]);
        expect(existsSync(join(p.sessionDir("a", 1), "started.json"))).toBe(false);
      } finally {
        p.dispose();
      }
    },
    60_000,
  );
});
