// Worker thread of `loop replay`: checks the seqs and hash chain of the snapshot the main thread
// folds, through its own read-only connection to the same file (lib/reports/replay.ts starts it).
import { Database } from "bun:sqlite";
import { checkIntegrity } from "./integrity.ts";

declare const self: Worker;

export interface IntegrityRequest {
  /** What the main thread opened: the store itself (immutable) or its private copy. */
  path: string;
  flags: number;
}

self.onmessage = (e: MessageEvent<IntegrityRequest>) => {
  let db: Database | null = null;
  try {
    db = new Database(e.data.path, e.data.flags);
    postMessage({ ok: true, result: checkIntegrity(db) });
  } catch (err) {
    postMessage({ ok: false, message: (err as Error).message, code: (err as { code?: string }).code });
  } finally {
    db?.close();
  }
};
