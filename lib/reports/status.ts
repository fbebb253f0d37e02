// `loop status`: the loop and its items from the projection, checked against the log head and
// state.json, with session liveness observed from outside. Reads a snapshot; writes nothing.
//
// Status is a function of the state document (documents.ts `stateDocument`). When state.json
// hashes to the projection's own record of that document (`proj_loop.state_sha`, written in the
// same transaction as the projection), the file *is* the projection's document and status reads it:
// one sequential file instead of every projection row, which in a large log are spread over the
// whole database file. Otherwise it renders the document from the projection tables and reports
// how the file differs.
import { readRegularFile } from "../shared/fsutil.ts";
import { headOf, readLoopRow, readProjection, withReadSnapshot } from "../log/snapshot.ts";
import { statePaths } from "../shared/paths.ts";
import { jsonText, stateDocument } from "../log/documents.ts";
import { jsonDiff } from "./diff.ts";
import { sessionAlive } from "../step/liveness.ts";
import { resolveSelectorsIn } from "../definition/selectors.ts";
import { isInFlight, type ItemStatus, type Projection } from "../log/reducer.ts";
import type { Finding } from "../log/integrity.ts";

export type { Finding };


export type StateDocument = ReturnType<typeof stateDocument>;

export function statusReport(stateRoot: string, workItems: string[] = []) {
  return withReadSnapshot(stateRoot, ({ db }) => {
    const head = headOf(db);
    const lr = readLoopRow(db);
    const findings: Finding[] = [];
    if (lr.seq < head.seq)
      findings.push({ code: "projection_behind", seq: lr.seq + 1, message: `projection is at seq ${lr.seq}, the log at seq ${head.seq}` });
    else if (lr.seq > head.seq)
      findings.push({ code: "projection_ahead", seq: head.seq, message: `projection is at seq ${lr.seq}, beyond the log head ${head.seq}` });
    else if (lr.hash !== head.hash)
      findings.push({ code: "projection_hash_mismatch", seq: lr.seq, message: `projection hash differs from the log's at seq ${lr.seq}` });
    const view = stateView(statePaths(stateRoot).stateJson, lr.state_sha, () => readProjection(db));
    findings.push(...view.findings);
    const doc = view.doc;
    const byId = new Map(doc.items.map((it) => [it.id, it]));
    const selected = workItems.length ? resolveSelectorsIn(doc.items, workItems).map((id) => byId.get(id)!) : doc.items;
    const items = selected.map((it) => {
      const s = it.session;
      return {
        id: it.id,
        ref: it.ref,
        status: it.status,
        reason: it.reason,
        epoch: it.epoch,
        // Who reset the item last, and when (a state.json written before resets existed has no such key).
        reset: (it as { reset?: { actor: string; at: string } }).reset ?? null,
        attempts: it.attempts,
        failures: it.failures,
        maxAttempts: it.maxAttempts,
        dependsOn: it.dependsOn,
        question: it.question,
        branch: it.branch,
        worktree: it.worktree,
        session: s
          ? {
              ...s,
              // Only a session that should be running is worth a process probe.
              alive: isInFlight(it.status as ItemStatus) && !s.closed ? sessionAlive(s) : false,
            }
          : null,
        lastVerify: it.lastVerify,
        landing: it.landing,
      };
    });
    return {
      schema: "loop/status@1",
      healthy: findings.length === 0,
      loop: { ...doc.loop, seq: lr.seq, logSeq: head.seq, counts: doc.counts },
      items,
      findings,
    };
  });
}

export type StatusReport = ReturnType<typeof statusReport>;

/**
 * The state document status reports from, and what is wrong with state.json. A file whose sha256
 * is the projection's `state_sha` is that document; anything else is compared with the document
 * rendered from the projection tables, which status then uses.
 */
export function stateView(
  path: string,
  expectedSha: string,
  projection: () => Projection,
): { doc: StateDocument; findings: Finding[] } {
  // Read, not mapped: Bun.mmap opens the file for writing, and a read verb must not.
  const file = readRegularFile(path);
  if (file.kind !== "ok")
    return {
      doc: stateDocument(projection()),
      findings: [
        file.kind === "absent"
          ? { code: "state_file_missing", message: `${path} is missing (the next \`loop run\` rewrites it)` }
          : { code: "unreadable_state_file", message: `${path} cannot be read: ${file.message}` },
      ],
    };
  const bytes = file.bytes;
  const text = bytes.toString("utf8");
  if (Bun.SHA256.hash(bytes, "hex") === expectedSha) return { doc: JSON.parse(text) as StateDocument, findings: [] };
  const expected = stateDocument(projection());
  if (text === jsonText(expected)) return { doc: expected, findings: [] };
  let onFile: unknown;
  try {
    onFile = JSON.parse(text);
  } catch (err) {
    return {
      doc: expected,
      findings: [{ code: "unreadable_state_file", message: `${path} is not valid JSON: ${(err as Error).message}` }],
    };
  }
  const diffs = jsonDiff(onFile, expected);
  return { doc: expected, findings: diffs.map((d) => ({ code: "state_field_mismatch", message: `state.json ${d} differs from the log` })) };
}
