// A repository after `loop init` whose log holds a definition of given items, for the CLI contract
// tests (tests/cmd/cli.test.ts, cli.e2e.test.ts): what status, ctl and logs read, without a run.
import { join } from "node:path";
import { Store } from "../../lib/log/store.ts";
import { materialize } from "../../lib/log/materialize.ts";
import { runInProcess } from "./cli.ts";
import { makeRepo } from "./repo.ts";

/** An item of the imported definition: the demo runner, a verify that passes, two attempts. */
export const seededItem = (id: string, ref: string | null = null) => ({
  id,
  ref,
  prompt: `work on ${id}`,
  dependsOn: [],
  verify: "true",
  runner: "demo",
  model: null,
  maxAttempts: 2,
  timeouts: { launch: 300_000, stall: 3_600_000, verify: 900_000 },
});

/**
 * A fresh repository (tests/helpers/repo.ts makeRepo) after `loop init --json`, with a definition
 * of `items` imported into its log and materialized. Its temp directory is pushed on `temps`, for
 * the caller to remove.
 */
export async function seededRepo(items: ReturnType<typeof seededItem>[], temps: string[]): Promise<string> {
  const { dir, root: repo } = makeRepo("loop-cli-repo-");
  temps.push(dir);
  const r = await runInProcess(["init", "--json"], { cwd: repo });
  if (r.code !== 0) throw new Error(`loop init --json exited ${r.code}: ${r.stderr}`);
  const stateRoot = join(repo, ".loop");
  const store = Store.open(stateRoot, { actor: "test" });
  try {
    store.append([
      {
        type: "definition_imported",
        payload: {
          revision: 1,
          hash: "0".repeat(64),
          name: "cli-test",
          settings: {
            landing: "none",
            base: "main",
            target: "loop/cli-test/landed",
            tmux: false,
            keepCheckoutOnClose: false,
            requireStartCommand: false,
            runners: {},
          },
          items,
        },
      },
    ]);
    materialize(stateRoot, store);
  } finally {
    store.close();
  }
  return repo;
}
