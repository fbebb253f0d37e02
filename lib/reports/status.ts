// `loop status`: the loop and its items from the projection, checked against the log head and
// state.json, with session liveness observed from outside. Reads a snapshot; writes nothing.
//
// Status is a function of the state document (documents.ts `stateDocument`). When state.json
// hashes to the projection's own record of that document (`proj_loop.state_sha`, written in the
// same transaction as the projection), the file *is* the projection's document and status reads it:
// one sequential file instead of every projection row, which in a large log are spread over the
// whole database file. Otherwise it renders the document from the projection tables and reports
// how the file differs.
import { ownerOf, readRegularFile } from "../shared/fsutil.ts";
import { headOf, loopRecordOf, readControlFlags, readLease, readLoopRow, readProjection, withReadSnapshot } from "../log/snapshot.ts";
import { statePaths, worktreesRoot } from "../shared/paths.ts";
import { trashOf, trashReport } from "../shared/trash.ts";
import { fullUsage, jsonText, loopUsage, stateDocument, usd } from "../log/documents.ts";
import { loopSpend } from "../decisions/budget.ts";
import { jsonDiff } from "./diff.ts";
import { sessionAlive } from "../supervisor/liveness.ts";
import { resolveSelectorsIn } from "../definition/selectors.ts";
import type { LoopRecord, LoopState, Projection } from "../log/projection.ts";
import { isInFlight, type ItemStatus } from "../log/vocabulary.ts";
import type { Finding as AnyFinding, StatusFindingCode } from "../log/integrity.ts";
import { type Waiting, waitingReasons } from "../decisions/wait-reasons.ts";
import { type AttentionInput, type AttentionKind, attentionOf } from "../decisions/attention.ts";
import { type DefinitionJudge, definitionOnDisk } from "./definition-on-disk.ts";
import { leaseFreed } from "../log/lease.ts";
import { pidAlive } from "../shared/process.ts";
import { tmuxAttachCommand } from "../supervisor/tmux.ts";
import type { Database } from "bun:sqlite";
import { dirname, join } from "node:path";
import { ownershipFinding, type ProjectIdentity } from "../log/ownership.ts";
import { autoMergeAllowed } from "../forge/auto-merge.ts";
import { pullTerms } from "../forge/provider.ts";
import { fullDisk } from "../shared/disk.ts";
import { describeLockHolders, storeLockHolders } from "../log/locks.ts";
import { describeRefChange, lastLanded, type OwnedRefInput, ownedRefs, readRefs, refChanges, restoreCommand } from "../repo/owned-refs.ts";
import { hostname } from "node:os";
import { readRefusals } from "../supervisor/gateway-files.ts";
import { timesOf } from "./status-times.ts";

/** A finding of status: its code is one of STATUS_FINDING_CODES (lib/log/integrity.ts). */
type Finding = AnyFinding<StatusFindingCode>;

type StateDocument = ReturnType<typeof stateDocument>;

/**
 * `project`: the project status runs for (lib/log/ownership.ts); a store bound to another one is
 * reported as a `foreign_store` finding. Undefined or null (run outside any repository): not compared.
 * `env` locates the tmux socket for the attach command.
 */
export function statusReport(
  stateRoot: string,
  workItems: string[] = [],
  {
    project = null,
    env = process.env,
    root = null,
    judge = null,
    times = false,
    now = Date.now(),
  }: {
    project?: ProjectIdentity | null;
    env?: Record<string, string | undefined>;
    /** The project's root: loop.json there is checked against the imported revision (definition-on-disk.ts). */
    root?: string | null;
    /** What judges a loop.json whose bytes changed (./definition-judge.ts); without it such a file is `unread`. */
    judge?: DefinitionJudge | null;
    /** Every selected item's times (`--times`); else the item in flight's and the last few settled (./status-times.ts). */
    times?: boolean;
    /** The time that ends what is still going in `items[].times`. */
    now?: number;
  } = {},
) {
  return withReadSnapshot(stateRoot, ({ db }) => {
    const head = headOf(db);
    const lr = readLoopRow(db);
    const findings: Finding[] = [];
    if (lr.seq < head.seq) findings.push({ code: "projection_behind", seq: lr.seq + 1, message: `projection is at seq ${lr.seq}, the log at seq ${head.seq}` });
    else if (lr.seq > head.seq)
      findings.push({ code: "projection_ahead", seq: head.seq, message: `projection is at seq ${lr.seq}, beyond the log head ${head.seq}` });
    else if (lr.hash !== head.hash)
      findings.push({ code: "projection_hash_mismatch", seq: lr.seq, message: `projection hash differs from the log's at seq ${lr.seq}` });
    const view = stateView(statePaths(stateRoot).stateJson, lr.state_sha, () => readProjection(db), ownerOf(stateRoot));
    // A step writes state.json after its last event: while one runs, the file may be a step behind
    // the log, which is not a divergence. It is judged once no step holds the lease.
    const step = stepRunning(db);
    findings.push(...(step ? view.findings.filter((f) => !STATE_FILE_FINDINGS.includes(f.code)) : view.findings));
    const doc = view.doc;
    // The loop record of the projection row (its settings; state.json does not carry them).
    const loop = loopRecordOf(lr);
    // Before anything ran, a name changed in loop.json is a rename the next write records, not another project.
    const renameFree = doc.items.every((it) => it.epoch === 0 && it.attempts === 0 && (it.status === "pending" || it.status === "withdrawn"));
    const foreign = ownershipFinding(doc.loop.owner, project, stateRoot, { renameFree });
    if (foreign) findings.push(foreign);
    // A full disk stops every step before it can record why: status says it, so it never reads healthy then.
    const disk = fullDisk(stateRoot);
    if (disk)
      findings.push({
        code: "disk_full",
        message: `the disk is full: ${disk.free} bytes free on the filesystem holding ${stateRoot} (mounted at ${disk.mount}); \`loop run\` cannot record anything until space is freed there`,
      });
    findings.push(...lockFindings(db, stateRoot));
    // Only for the project status runs for: a copy elsewhere (a backup being checked) names refs of a repository it is not.
    if (project && !foreign) findings.push(...refFindings(db, doc, loop, project.repo));
    const byId = new Map(doc.items.map((it) => [it.id, it]));
    const selected = workItems.length ? resolveSelectorsIn(doc.items, workItems).map((id) => byId.get(id)!) : doc.items;
    const facts = attemptFacts(db, selected);
    // What the item in flight is doing (verifying, landing), as its row says: one word for one state.
    const cur = doc.loop.current ? byId.get(doc.loop.current) : undefined;
    const curFacts = cur && cur.status === "ended" ? (facts.get(cur.id) ?? attemptFacts(db, [cur]).get(cur.id)) : undefined;
    const waiting = waitingOf(db, doc, loop, curFacts?.phase ?? null);
    // "#12" for a GitHub pull request, "!12" for a GitLab merge request.
    const pullSign = pullTerms(loop.settings?.forge?.provider).sign;
    const timed = timesOf(
      db,
      selected.map((it) => it.id),
      { current: doc.loop.current, all: times, now },
    );
    const items = selected.map((it) => {
      const s = it.session;
      const live = s !== null && isInFlight(it.status as ItemStatus) && !s.closed;
      return {
        id: it.id,
        ref: it.ref,
        status: it.status,
        // What an `ended` attempt is doing (docs/cli/loop-status.md): its verify runs, or it passed and lands; else null.
        phase: it.status === "ended" ? (facts.get(it.id)?.phase ?? null) : null,
        reason: it.reason,
        // Why a settled item settled (item_settled's code: docs/events.md#item_settled); null otherwise.
        code: it.code,
        epoch: it.epoch,
        // Who reset the item last, and when.
        reset: it.reset,
        attempts: it.attempts,
        // Attempts the agent ran: `attempts` less the launches cut short before their session started.
        ran: facts.get(it.id)?.ran ?? 0,
        // Attempts of this epoch that died with a stopped watcher (a pod's end), given back uncounted.
        drained: facts.get(it.id)?.drained ?? [],
        failures: it.failures,
        maxAttempts: it.maxAttempts,
        dependsOn: it.dependsOn,
        question: it.question,
        branch: it.branch,
        worktree: it.worktree,
        // What the item's branch was created from: a ref and its commit (docs/cli/loop-status.md).
        builtOn: it.builtOn ?? null,
        // How what setup made came into its checkout: run there, or copied from what another item's setup made.
        setup: it.setup ?? null,
        session: s
          ? {
              ...s,
              // Only a session that should be running is worth a process probe.
              alive: live ? sessionAlive(s, env) : false,
              attach: live && typeof s.tmux === "string" ? tmuxAttachCommand(s.tmux, tmuxSocketOf(typeof s.log === "string" ? s.log : null, env)) : null,
            }
          : null,
        lastVerify: it.lastVerify,
        landing: it.landing,
        // With a forge (docs/forge.md#status): the PR, the landing wait and its reason, the last comment acted on.
        pr: it.forge?.pr ? { ...it.forge.pr, label: `${pullSign}${it.forge.pr.number}` } : null,
        forge: it.forge
          ? {
              landing: it.forge.landing,
              lastComment: it.forge.lastComment,
              baselined: it.forge.baselined,
              // docs/forge.md#reactions: the checks on loop's head as the landing last saw them, the last reaction, the reworks left.
              checks: it.forge.pr ? checksOf(it.landing?.outcome ?? null, it.forge.landing?.code ?? null) : null,
              lastReaction: it.forge.lastReaction ?? null,
              reworksLeft: it.forge.pr ? reworksLeft(it) : null,
            }
          : null,
        waiting: waiting.get(it.id) ?? null,
        // What its attempts used and its budget (docs/spend.md); null before any attempt ran, and without one.
        usage: fullUsage(it.usage),
        budget: it.budget ?? null,
        // What its latest session's gateway refused (docs/threat-model.md#the-gateway); null without one that refused anything.
        network: networkOf(s),
        // Where its time went, phase by phase, and loop's own time (docs/cli/loop-status.md#where-the-time-went); null where not reported.
        times: timed.get(it.id) ?? null,
      };
    });
    // loop.json as it is now, against the revision the log imported (null: run for a copy, no root).
    // Only for the project the store belongs to: a copy checked elsewhere (a backup) has no loop.json of its own there.
    const definition = root === null || project === null || foreign ? null : definitionOnDisk(db, { root, loop, itemIds: doc.items.map((it) => it.id) }, judge);
    const attention = attentionOf(attentionInputOf(doc, loop.drainedSeq, pullSign)).map(({ kind, item, reason, fix }) => ({
      kind: kind as AttentionKind,
      item,
      reason,
      fix,
    }));
    if (definition?.state === "invalid")
      attention.unshift({
        kind: "definition",
        item: null,
        reason: `loop.json is invalid, and every \`loop run\` refuses it (exit 2) until it is fixed: ${definition.problems.join("; ")}`,
        fix: ["fix loop.json", "loop run"],
      });
    return {
      schema: "loop/status@1",
      healthy: findings.length === 0,
      // Where this loop's worktrees and landing checkout live (docs/state.md#where-worktrees-live).
      loop: {
        ...doc.loop,
        seq: lr.seq,
        logSeq: head.seq,
        counts: doc.counts,
        usage: usageOf(doc, loop),
        budget: budgetOf(loop),
        worktrees: worktreesRoot(stateRoot, env),
        trash: trashReport(trashOf(worktreesRoot(stateRoot, env))),
        baseVerify: baseVerifyOf(loop),
        channels: channelsOf(loop),
        step,
        definition,
      },
      // What needs a person (the conditions `loop run` exits 1 for, and a loop.json every step refuses), each with the commands that put it right.
      attention,
      autoMerge: autoMergeOf(loop, env),
      items,
      findings,
    };
  });
}

export type StatusReport = ReturnType<typeof statusReport>;

/** The refusals of a session's gateway, counted (hosts, model requests past a budget, the others), with the last host refused: for widening the list. */
function networkOf(
  s: Record<string, unknown> | null,
): { refused: number; budgetRefused: number; modelRefused: number; lastHost: { host: string; port: number; at: string } | null } | null {
  if (!s || typeof s.log !== "string") return null;
  const { refused } = readRefusals(dirname(s.log));
  if (refused.length === 0) return null;
  const hosts = refused.filter((r) => r.kind === "network");
  const last = hosts.at(-1);
  const budget = refused.filter((r) => r.kind === "budget").length;
  return {
    refused: hosts.length,
    budgetRefused: budget,
    modelRefused: refused.length - hosts.length - budget,
    lastHost: last && last.kind === "network" ? { host: last.host, port: last.port, at: last.at } : null,
  };
}

/** What attention reads (lib/decisions/attention.ts), from the state document: every item of it. */
export function attentionInputOf(doc: StateDocument, drainedSeq: number | null, pullSign: string): AttentionInput {
  const l = doc.loop;
  return {
    loop: { state: l.state, reason: l.reason, cause: l.cause, outcome: l.outcome, drainedSeq, current: l.current, ...(l.review ? { review: l.review } : {}) },
    items: doc.items
      .filter((it) => it.status !== "withdrawn")
      .map((it) => ({
        id: it.id,
        status: it.status,
        reason: it.reason,
        code: it.code,
        epoch: it.epoch,
        attempts: it.attempts,
        question: it.question,
        budgetStop: it.budget?.stopped ? { attempt: it.budget.stopped.attempt, reason: it.budget.stopped.reason } : null,
        landing: it.landing ? { outcome: it.landing.outcome, reason: it.landing.reason } : null,
        pr: it.forge?.pr ? { label: `${pullSign}${it.forge.pr.number}`, url: it.forge.pr.url } : null,
      })),
  };
}

/**
 * The checks on the head loop pushed, as the landing's last recorded code says (status asks the
 * forge nothing): the merge gate names a pending or missing check before the forge's own waits, so
 * those waits, a merge and a refusal of the merge all come after every check was green.
 */
const CHECKS_BY_CODE: Record<string, "passing" | "pending" | "failing" | "none"> = {
  checks_pending: "pending",
  checks_missing: "none",
  checks_failed: "failing",
  mergeable_unknown: "passing",
  not_mergeable_yet: "passing",
  auto_merge_unset: "passing",
  merge_refused: "passing",
  merged: "passing",
};
function checksOf(outcome: string | null, code: string | null): "passing" | "pending" | "failing" | "none" | "unknown" {
  if (outcome === "merged") return "passing";
  return (code !== null && Object.hasOwn(CHECKS_BY_CODE, code) ? CHECKS_BY_CODE[code] : undefined) ?? "unknown";
}

/**
 * How many more reworks the item's attempts allow after the current one (its failed attempts count,
 * as lib/decisions/attempt.ts afterFailure counts them; budgets, once they exist, will count there too).
 */
function reworksLeft(it: { maxAttempts: number; failures: number }): number {
  return Math.max(0, it.maxAttempts - it.failures - 1);
}

/** The default verify's last run on the base tree (docs/cli/loop-status.md), or null before the first. */
function baseVerifyOf(loop: LoopRecord) {
  const b = loop.baseVerify;
  return b
    ? {
        status: b.status,
        verify: b.verify,
        setup: b.setup,
        commit: b.commit,
        startedAt: b.startedAt,
        finishedAt: b.finishedAt,
        code: b.code,
        exitCode: b.exitCode,
        quote: b.quote,
        log: b.log,
        acceptedBy: b.acceptedBy,
      }
    : null;
}

/** The notification channels as the log has them (docs/operations.md#notification-channels), by id; [] before one was used. */
function channelsOf(loop: LoopRecord) {
  return Object.entries(loop.channels ?? {})
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([id, c]) => ({ id, cursor: c.cursor, failures: c.failures, retryAt: c.retryAt, lastError: c.lastError }));
}

/**
 * The loop's usage (docs/spend.md): state.json's figures over every attempt, and the rolling day's
 * (whole hours up to now, from the loop record of the projection row: it depends on the clock, so
 * state.json does not hold it).
 */
function usageOf(doc: StateDocument, loop: LoopRecord) {
  const day = loopSpend(loop.usage, Date.now()).daily;
  return { ...(doc.loop.usage ?? loopUsage(loop)), daily: { tokens: day.tokens, usd: usd(day.microUsd) } };
}

/** The loop's budget from the imported definition, in dollars and tokens; null without one. */
function budgetOf(loop: LoopRecord) {
  const b = loop.settings?.budget;
  if (!b) return null;
  return {
    tokens: b.tokens ?? null,
    usd: usd(b.microUsd ?? null),
    daily: b.daily ? { tokens: b.daily.tokens ?? null, usd: usd(b.daily.microUsd ?? null) } : null,
    stopped:
      loop.state === "paused" && loop.budgetStop
        ? { window: loop.budgetStop.window, unit: loop.budgetStop.unit, reason: loop.budgetStop.reason, at: loop.budgetStop.at }
        : null,
  };
}

/**
 * A process that is not the step holding the lease, holding a lock every writer waits on
 * (lib/log/locks.ts): `store_locked`. Looked at twice, a moment apart, so a `loop ctl` committing
 * just then is not taken for one.
 */
/** The findings of state.json against the log, which a running step may leave a step behind. */
const STATE_FILE_FINDINGS: readonly string[] = ["state_field_mismatch", "unreadable_state_file", "state_file_missing"];

/** The step holding the lease now (a live process, its lease not expired), or null. */
function stepRunning(db: Database): { pid: number; host: string; since: string } | null {
  const lease = readLease(db);
  if (!lease || leaseFreed(lease, new Date(), pidAlive) !== null) return null;
  return { pid: lease.pid, host: lease.host, since: lease.started };
}

function lockFindings(db: Database, stateRoot: string): Finding[] {
  const lease = readLease(db);
  const except = [process.pid, ...(lease && lease.host === hostname() ? [lease.pid] : [])];
  const path = statePaths(stateRoot).db;
  const first = storeLockHolders(path, except);
  if (first.length === 0) return [];
  Bun.sleepSync(100);
  const still = storeLockHolders(path, except).filter((h) => first.some((f) => f.pid === h.pid));
  return still.length ? [{ code: "store_locked", message: `${path} is locked: ${describeLockHolders(still)}` }] : [];
}

/**
 * The refs loop owns (lib/repo/owned-refs.ts) that are not where it left them: `owned_ref_changed`,
 * one finding each. Asked of git only when there is one to check.
 */
function refFindings(db: Database, doc: StateDocument, loop: LoopRecord, repo: string): Finding[] {
  const settings = loop.settings;
  const landed = settings?.landing === "merge" && !settings.forge ? lastLanded(db, settings.target) : null;
  const owned = ownedRefs({ items: doc.items as OwnedRefInput["items"], landed });
  if (owned.length === 0) return [];
  let now: Map<string, string>;
  try {
    now = readRefs(
      repo,
      owned.map((r) => r.ref),
    );
  } catch (err) {
    return [{ code: "owned_ref_changed", message: (err as Error).message }];
  }
  return refChanges(owned, now).map((c) => ({ code: "owned_ref_changed", message: `${describeRefChange(c)}; put it back with \`${restoreCommand(c)}\`` }));
}

/**
 * What landing "merge" through a forge will do (docs/forge.md#the-two-locks), from the imported
 * definition's settings; null for any other loop. `set`: the second lock in the environment status
 * sees (the one `loop run` reads at merge time may differ, which is why the text says "at merge time").
 */
function autoMergeOf(loop: LoopRecord, env: Record<string, string | undefined>): { repo: string; base: string; set: boolean; provider: string } | null {
  const s = loop.settings;
  if (s?.landing !== "merge" || !s.forge) return null;
  return { repo: s.forge.repo, base: s.base, set: autoMergeAllowed(env), provider: s.forge.provider };
}

/** An attempt that died with a stopped watcher and was given back, uncounted (docs/cli/loop-run.md#stopping-a-watcher). */
interface DrainedAttempt {
  attempt: number;
  signal: string;
  signalledAt: string;
  running: "session" | "verify";
}

/**
 * What status reads of each item's attempts beyond state.json: how many the agent ran
 * (lib/decisions/attempt.ts attemptsRan: a session recorded started; state.json counts attempts, not
 * this) and those given back because they died with a stopped watcher. From the ledger rows of the
 * same snapshot, and only for items that have made an attempt.
 */
/** Where an `ended` attempt stands: its verify running (reserved, not finished), or passed and not landed yet. */
type AttemptPhase = "verifying" | "landing";

function attemptFacts(
  db: Database,
  items: readonly { id: string; attempts: number }[],
): Map<string, { ran: number; drained: DrainedAttempt[]; phase: AttemptPhase | null }> {
  const ids = items.filter((it) => it.attempts > 0).map((it) => it.id);
  if (ids.length === 0) return new Map();
  const rows = db
    .query(
      `SELECT item,
         (SELECT count(*) FROM json_each(body, '$.attempts') WHERE json_extract(value, '$.startedAt') IS NOT NULL) AS ran,
         (SELECT json_group_array(json_object('attempt', json_extract(value, '$.n'), 'signal', json_extract(value, '$.drain.signal'), 'signalledAt', json_extract(value, '$.drain.signalledAt'), 'running', json_extract(value, '$.drain.running')))
            FROM json_each(body, '$.attempts') WHERE json_extract(value, '$.drained') = 1) AS drained,
         json_extract(body, '$.attempts[#-1].verifyRun') IS NOT NULL AS verifyReserved,
         json_extract(body, '$.attempts[#-1].verify.passed') AS verifyPassed
       FROM proj_ledgers WHERE item IN (SELECT value FROM json_each(?))`,
    )
    .all(JSON.stringify(ids)) as { item: string; ran: number; drained: string; verifyReserved: number; verifyPassed: number | null }[];
  const phase = (r: { verifyReserved: number; verifyPassed: number | null }): AttemptPhase | null =>
    r.verifyPassed === 1 ? "landing" : r.verifyReserved && r.verifyPassed === null ? "verifying" : null;
  return new Map(rows.map((r) => [r.item, { ran: r.ran, drained: JSON.parse(r.drained) as DrainedAttempt[], phase: phase(r) }]));
}

/**
 * Why each waiting item waits (lib/decisions/wait-reasons.ts waitingReasons, the step's own rules). The state
 * document has each item's status and dependencies; what it lacks, the hold and start flags and
 * control.requireStartCommand, is read from the projection rows of the same snapshot (the control
 * rows only when some item is pending).
 */
function waitingOf(db: Database, doc: StateDocument, loop: LoopRecord, currentPhase: string | null): Map<string, Waiting> {
  const pending = doc.items.some((it) => it.status === "pending");
  const flags = pending ? readControlFlags(db) : new Map<string, { held: boolean; started: boolean }>();
  const requireStartCommand = loop.settings?.requireStartCommand ?? false;
  return waitingReasons({
    loop: {
      state: doc.loop.state as LoopState,
      reason: doc.loop.reason,
      current: doc.loop.current,
      requireStartCommand,
      currentPhase,
      review: !!doc.loop.review?.waiting,
    },
    items: doc.items.map((it) => ({
      id: it.id,
      status: it.status as ItemStatus,
      held: flags.get(it.id)?.held ?? false,
      started: flags.get(it.id)?.started ?? false,
      dependsOn: Array.isArray(it.dependsOn) ? it.dependsOn : [],
    })),
  });
}

/**
 * The tmux server a session runs on: the socket its wrapper found in $TMUX (started.json, beside
 * the output log), else $LOOP_TMUX_SOCKET as status sees it, else the default server.
 */
function tmuxSocketOf(log: string | null, env: Record<string, string | undefined>): { path: string } | { name: string } | null {
  const started = log ? readRegularFile(join(dirname(log), "started.json"), { maxBytes: 64 * 1024 }) : null;
  if (started?.kind === "ok") {
    try {
      const sock = JSON.parse(started.bytes.toString("utf8")).tmuxSocket;
      if (typeof sock === "string" && sock) return { path: sock };
    } catch {
      // A torn or foreign file: fall back to what the environment says.
    }
  }
  return env.LOOP_TMUX_SOCKET ? { name: env.LOOP_TMUX_SOCKET } : null;
}

/**
 * The state document status reports from, and what is wrong with state.json. A file whose sha256
 * is the projection's `state_sha` is that document; anything else is compared with the document
 * rendered from the projection tables, which status then uses.
 */
export function stateView(path: string, expectedSha: string, projection: () => Projection, owner?: number): { doc: StateDocument; findings: Finding[] } {
  // Read, not mapped: Bun.mmap opens the file for writing, and a read verb must not. Never followed:
  // a link in its place would show the target's words in a finding. It belongs to whoever runs the
  // loop (`owner`), who may not be who reads the report.
  const file = readRegularFile(path, { noLinks: true, owner });
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

/** The status a person is shown: an `ended` attempt's phase (`verifying`, `landing`) when it has one. */
export function shownStatus(it: { status: string; phase?: AttemptPhase | null }): string {
  return it.status === "ended" && it.phase ? it.phase : it.status;
}

/** Items per status as people read them: an `ended` item whose verify runs or which lands counts under its phase (shownStatus), as its row says. */
export function shownCounts(counts: Record<string, number>, items: readonly { status: string; phase?: AttemptPhase | null }[]): Record<string, number> {
  const out = { ...counts };
  for (const it of items) {
    const shown = shownStatus(it);
    if (shown === it.status || !out[it.status]) continue;
    out[it.status]!--;
    if (out[it.status] === 0) delete out[it.status];
    out[shown] = (out[shown] ?? 0) + 1;
  }
  return out;
}
