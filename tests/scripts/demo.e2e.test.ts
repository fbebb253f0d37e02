// The README's first command: `npm run demo` (scripts/demo.ts), and its forge variants against the
// fake GitHub and GitLab, and its tracker variants (a fake Linear or Jira beside the fake GitHub). Each must drain Succeeded and exit 0; with a forge, every item's pull or
// merge request is merged (loop pushes to forge.gitUrl, the fake's bare repository, never to a
// remote of .git/config).
import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { BUN } from "../helpers/cli.ts";

const DEMO = resolve(import.meta.dir, "..", "..", "scripts", "demo.ts");

describe("npm run demo", () => {
  for (const args of [[], ["--forge"], ["--forge", "gitlab"], ["--tracker", "linear"], ["--tracker", "jira"]]) {
    test(`demo ${args.join(" ") || "(no forge)"}: drains Succeeded, exit 0${args.length ? ", every request merged" : ""}`, () => {
      const r = Bun.spawnSync([BUN, DEMO, ...args], { stdout: "pipe", stderr: "pipe", env: { ...process.env, NO_COLOR: "1" } });
      const out = r.stdout.toString() + r.stderr.toString();
      expect({ code: r.exitCode, tail: r.exitCode === 0 ? "" : out.slice(-3000) }).toEqual({ code: 0, tail: "" });
      expect(out).toMatch(/loop demo · drained \(Succeeded\)/);
      // What it made is gone, and it says so, naming --keep (the fake forge's folder too).
      const deleted = /deleted the demo repository (\S+)(?: and the fake \w+'s folder (\S+))? \(--keep keeps them\)/.exec(r.stderr.toString());
      expect({ said: deleted !== null, forgeFolder: Boolean(deleted?.[2]) }).toEqual({ said: true, forgeFolder: args.length > 0 });
      expect([deleted![1]!, ...(deleted![2] ? [deleted![2]] : [])].filter((d) => existsSync(d))).toEqual([]);
      expect(r.stderr.toString()).toContain("(deleted at the end; --keep keeps it)");
      if (args.length) {
        const requests = out.split("\n").filter((l) => /^(PR #|MR !)\d+ /.test(l));
        expect(requests.length).toBe(4);
        expect(requests.every((l) => l.endsWith("[merged]"))).toBe(true);
      }
      if (args[0] === "--tracker") {
        // The hand-added item's issue on the fake tracker: moved to Done, the outcome said on it.
        expect(r.stderr.toString()).toMatch(new RegExp(`^== ${args[1]}:(ENG|PROJ)-\\d+ on the fake (Linear|Jira): Done; what loop said on it:$`, "m"));
        expect(r.stdout.toString()).toMatch(/^`add-license` passed \(attempt 2\): .*merged into main/m);
      }
    }, 240_000);
  }
});
