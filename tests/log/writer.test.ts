// The one writer path (lib/log/writer.ts): a command plans from a read-only snapshot and may end
// there with nothing written; otherwise it opens the store for its project (another project's is
// refused before any plan), takes the lease (a live holder: the command's busy error, nothing done),
// plans again under it from the store as it is now, appends, materializes and releases the lease,
// whatever happens inside.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Store } from "../../lib/log/store.ts";
import { readLease } from "../../lib/log/snapshot.ts";
import { runWriter, withLease, type WriterCommand } from "../../lib/log/writer.ts";
import { BusyError, StoreError } from "../../lib/shared/errors.ts";
import { buildStore } from "../helpers/store.ts";
import { definition, itemDef, loopStarted } from "../helpers/events.ts";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A state root holding a store with a definition, the loop started, materialized and closed. */
function stateRoot(): string {
  const dir = mkdtempSync(join(tmpdir(), "loop-writer-"));
  dirs.push(dir);
  const root = join(dir, "state");
  buildStore(root, [definition(1, [itemDef("a")]), loopStarted]);
  return root;
}

/** Every file under the state root, with its bytes and mtime: what "nothing changed" compares. */
function files(root: string): Record<string, string> {
  return Object.fromEntries(
    readdirSync(root, { recursive: true, encoding: "utf8" }).map((f) => {
      const p = join(root, f);
      const st = statSync(p);
      return [f, st.isDirectory() ? "dir" : `${st.mtimeMs}:${readFileSync(p).toString("base64")}`];
    }),
  );
}

const terms = { actor: "tester", ttlMs: 60_000, busy: () => new BusyError("busy: nothing was done") };

function command(root: string, o: Partial<WriterCommand<string>>): WriterCommand<string> {
  return { ...terms, stateRoot: root, project: null, before: () => null, under: () => "acted", ...o };
}

describe("runWriter", () => {
  test("a plan that ends before the lease (a dry run) leaves the state root as it was, not even a -wal", async () => {
    const root = stateRoot();
    const before = files(root);
    let seen = -1;
    const r = await runWriter(
      command(root, {
        before: ({ p, lease }) => ((seen = p.seq), expect(lease).toBeNull(), "dry run"),
        under: () => {
          throw new Error("not reached");
        },
      }),
    );
    expect(r).toBe("dry run");
    expect(seen).toBe(3);
    expect(files(root)).toEqual(before);
  });

  test("under the lease the plan is made again from the store as it is now; the append is materialized; the lease is released", async () => {
    const root = stateRoot();
    const r = await runWriter(
      command(root, {
        // While the prompt was open, another writer recorded something.
        before: () => {
          const other = Store.open(root, { actor: "other" });
          other.append([{ type: "loop_paused", payload: { reason: "by someone else" } }]);
          other.close();
          return null;
        },
        under: (w) => {
          expect(readLease(w.store.db)?.owner).toBe(w.lease.owner);
          expect(w.store.projection().loop.state).toBe("paused");
          w.append([{ type: "loop_resumed", payload: {} }], "ctl");
          return "acted";
        },
      }),
    );
    expect(r).toBe("acted");
    const state = JSON.parse(readFileSync(join(root, "state.json"), "utf8"));
    expect({ seq: state.seq, state: state.loop.state }).toEqual({ seq: 5, state: "running" });
    const store = Store.open(root);
    try {
      expect(readLease(store.db)).toBeNull();
      expect((store.db.query("SELECT actor FROM events WHERE seq = 5").get() as { actor: string }).actor).toBe("tester");
    } finally {
      store.close();
    }
  });

  test("a live holder: the command's busy error, nothing done; a throw inside still releases the lease", async () => {
    const root = stateRoot();
    const holder = Store.open(root);
    const got = holder.acquireLease(60_000, () => true);
    expect(got.ok).toBe(true);
    let acted = false;
    await expect(runWriter(command(root, { under: () => ((acted = true), "acted") }))).rejects.toThrow("busy: nothing was done");
    expect(acted).toBe(false);
    if (got.ok) holder.releaseLease(got.lease);
    holder.close();
    await expect(
      runWriter(
        command(root, {
          under: () => {
            throw new Error("a bug");
          },
        }),
      ),
    ).rejects.toThrow("a bug");
    const store = Store.open(root);
    try {
      expect(readLease(store.db)).toBeNull();
    } finally {
      store.close();
    }
  });

  test("a store of another project is refused before any plan", async () => {
    const root = stateRoot();
    const bound = Store.open(root, { project: { repo: "/srv/a", gitDir: "/srv/a/.git", root: ".", name: "a" } });
    bound.append([{ type: "loop_paused", payload: { reason: "r" } }]); // its first write binds it
    bound.close();
    let planned = false;
    const other = { repo: "/srv/b", gitDir: "/srv/b/.git", root: ".", name: "b" };
    const err = await runWriter(command(root, { project: other, before: () => ((planned = true), null) })).catch((e) => e);
    expect(err).toBeInstanceOf(StoreError);
    expect((err as StoreError).code).toBe("foreign_store");
    expect(planned).toBe(false);
  });
});

describe("withLease", () => {
  test("a dead holder's lease is taken over and says so; the writer's appends carry its actor", async () => {
    const root = stateRoot();
    const dead = Store.open(root);
    expect(dead.acquireLease(60_000, () => true).ok).toBe(true);
    dead.close(); // the lease row stays: its pid is this process's, and no handle of it holds the lease now
    const store = Store.open(root);
    try {
      // The holder is taken for dead by the pid test the writer uses: a pid that is not alive.
      store.db.run("UPDATE lease SET pid = 2147483646");
      await withLease(store, terms, (w) => {
        expect(w.takeover?.payload.why).toBe("dead");
        expect(w.stale).toBe(true);
        const [e] = w.append([{ type: "loop_paused", payload: { reason: "r" } }], "ctl");
        expect(e!.actor).toBe("tester");
      });
      expect(readLease(store.db)).toBeNull();
      expect(existsSync(join(root, "state.json"))).toBe(true);
    } finally {
      store.close();
    }
  });
});
