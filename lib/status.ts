// `loop status`: the loop and its items from the projection, checked against the log head and
// state.json, with session liveness observed from outside. Reads a snapshot; writes nothing.
import { readFileSync } from "node:fs";
import { headOf, readLoopRow, readProjection, withReadSnapshot } from "./store.ts";
import { sha256Hex } from "./canonical.ts";
import { statePaths } from "./paths.ts";
import { counts, jsonText, lastVerify, stateDocument } from "./materialize.ts";
import { jsonDiff } from "./diff.ts";
import { sessionAlive } from "./liveness.ts";
import { resolveSelectors } from "./selectors.ts";
import { isInFlight } from "./reducer.ts";

export interface Finding {
  code: string;
  seq?: number;
  message: string;
}

export function statusReport(stateRoot: string, workItems: string[] = []) {
  return withReadSnapshot(stateRoot, ({ db }) => {
    const head = headOf(db);
    const p = readProjection(db);
    const selected = workItems.length ? resolveSelectors(p, workItems) : p.order;
    const findings: Finding[] = [];
    if (p.seq < head.seq)
      findings.push({ code: "projection_behind", seq: p.seq + 1, message: `projection is at seq ${p.seq}, the log at seq ${head.seq}` });
    else if (p.seq > head.seq)
      findings.push({ code: "projection_ahead", seq: head.seq, message: `projection is at seq ${p.seq}, beyond the log head ${head.seq}` });
    else if (p.hash !== head.hash)
      findings.push({ code: "projection_hash_mismatch", seq: p.seq, message: `projection hash differs from the log's at seq ${p.seq}` });
    findings.push(...checkStateFile(statePaths(stateRoot).stateJson, readLoopRow(db).state_sha, () => stateDocument(p)));
    const items = selected.map((id) => {
      const it = p.items[id]!;
      const s = it.session;
      return {
        id,
        ref: it.def.ref,
        status: it.status,
        reason: it.reason,
        attempts: it.attempts.length,
        failures: it.failures,
        maxAttempts: it.def.maxAttempts,
        dependsOn: it.def.dependsOn,
        question: it.question,
        branch: it.workspace?.branch ?? null,
        worktree: it.workspace?.present ? it.workspace.worktree : null,
        session: s
          ? {
              attempt: s.attempt,
              runner: s.runner,
              model: s.model,
              pid: s.pid,
              tmux: s.tmux,
              conversationId: s.conversationId,
              log: s.log,
              startedAt: s.startedAt,
              endedAt: s.endedAt,
              closed: s.closed,
              // Only a session that should be running is worth a process probe.
              alive: isInFlight(it.status) && !s.closed ? sessionAlive(s) : false,
            }
          : null,
        lastVerify: lastVerify(p, id),
        landing: it.landing,
      };
    });
    return {
      schema: "loop/status@1",
      healthy: findings.length === 0,
      loop: {
        name: p.loop.name,
        state: p.loop.state,
        reason: p.loop.reason,
        revision: p.loop.revision,
        current: p.loop.current,
        outcome: p.loop.outcome,
        seq: p.seq,
        logSeq: head.seq,
        counts: counts(p),
      },
      items,
      findings,
    };
  });
}

export type StatusReport = ReturnType<typeof statusReport>;

/**
 * Compare state.json with the projection: first by hash (the projection stores the sha256 of the
 * text it materializes to), and only when that differs by rendering the expected document.
 */
export function checkStateFile(path: string, expectedSha: string, expectedDoc: () => unknown): Finding[] {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return [{ code: "state_file_missing", message: `${path} is missing (the next \`loop run\` rewrites it)` }];
  }
  if (sha256Hex(text) === expectedSha) return [];
  const expected = expectedDoc();
  if (text === jsonText(expected)) return [];
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    return [{ code: "unreadable_state_file", message: `${path} is not valid JSON: ${(err as Error).message}` }];
  }
  const diffs = jsonDiff(doc, expected);
  if (diffs.length === 0) return [];
  return diffs.map((d) => ({ code: "state_field_mismatch", message: `state.json ${d} differs from the log` }));
}
