// When an agent last made progress, as the stall deadline counts it: the last time its output grew
// with something other than waiting (waiting.ts outputShowsProgress). A small record in the
// session folder carries what was already read from one observing step to the next, so each step
// reads only the new output (at most its last 64 KiB).
import { closeSync, fstatSync } from "node:fs";
import { join } from "node:path";
import { openOwnFile, readAt, readJsonOrNull, writeFileAtomic } from "../shared/fsutil.ts";
import { outputShowsProgress } from "./waiting.ts";

export const PROGRESS_FILE = "progress.json";
const READ_CAP = 64 * 1024;

interface ProgressRecord {
  /** Size and mtime of the output log when it was last read. */
  size: number;
  mtimeMs: number;
  /** When the output last showed progress (epoch ms), or null: not since the session started. */
  at: number | null;
  lastLine: string | null;
}

/**
 * The last time the output log of the session in `dir` showed progress (epoch ms), or null for
 * none yet (the stall deadline then counts from the start). `output` is the log's file name.
 */
export function lastProgressAt(dir: string, output: string): number | null {
  const log = join(dir, output);
  // Never through a link, never a FIFO (which would hang the step): only the wrapper's own file.
  const opened = openOwnFile(log);
  if (opened.kind === "absent") return null; // no output yet
  if (opened.kind === "error") return null; // not the wrapper's log: no progress seen in it
  try {
    return progressIn(dir, opened.fd);
  } finally {
    closeSync(opened.fd);
  }
}

function progressIn(dir: string, fd: number): number | null {
  const st = fstatSync(fd);
  const rec = readJsonOrNull<ProgressRecord>(join(dir, PROGRESS_FILE));
  if (rec && rec.size === st.size && rec.mtimeMs === st.mtimeMs) return rec.at;
  // New output since the last look (or a log cut short and rewritten: read its tail again).
  const from = rec && st.size > rec.size ? Math.max(rec.size, st.size - READ_CAP) : Math.max(0, st.size - READ_CAP);
  let text = "";
  try {
    text = readAt(fd, from, st.size - from).toString("utf8");
  } catch {
    return rec?.at ?? st.mtimeMs; // unreadable now: fall back to the growth itself
  }
  const seen = outputShowsProgress(text, rec?.lastLine ?? null);
  const next: ProgressRecord = { size: st.size, mtimeMs: st.mtimeMs, at: seen.progress ? st.mtimeMs : (rec?.at ?? null), lastLine: seen.lastLine };
  try {
    writeFileAtomic(join(dir, PROGRESS_FILE), JSON.stringify(next) + "\n");
  } catch {
    // Not recorded: the next step reads the same output again and comes to the same answer.
  }
  return next.at;
}
