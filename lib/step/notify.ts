// The notify phase (docs/operations.md#hearing-about-trouble): at the end of a step, for each
// condition that needs a person (lib/decisions/attention.ts attention) that notify was not yet run for,
// run loop.json's `notify` command with a JSON document of it on stdin, then record `notified`.
// Its failure is reported (stderr, the step's result) and recorded too, so it is not run again
// every minute; it never stops the loop. A step killed between running it and recording it runs it
// again: at least once.
import { closeSync, constants as fsConstants, openSync, rmSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import type { NotifyDef } from "../definition/normalized.ts";
import { formatDuration } from "../definition/duration.ts";
import type { Projection } from "../log/projection.ts";
import { readTextOrNull, tail } from "../shared/fsutil.ts";
import { killGroup } from "../shared/process.ts";
import { append, itemNow, loopView, type StepContext } from "./context.ts";
import { type Attention, ATTENTION_STATUSES, type AttentionInput, attentionItem, attentionOf, UNLANDED_OUTCOMES } from "../decisions/attention.ts";
import { pullTerms } from "../forge/provider.ts";
import { childEnvironment, type EnvRule, toolRule } from "../definition/child-environment.ts";
import { channelsPhase, type NotifyReport } from "./notify-channels.ts";

/** What attention reads (lib/decisions/attention.ts AttentionInput), as the store has it now: the loop, and only the items it looks at. */
export function stepAttentionInput(ctx: StepContext): AttentionInput {
  const { loop } = loopView(ctx);
  const drainedFailed = loop.state === "drained" && loop.outcome === "Failed";
  const items = ctx.store.itemsWhere(
    drainedFailed ? { status: ATTENTION_STATUSES, landing: UNLANDED_OUTCOMES, budgetStopped: true } : { landing: UNLANDED_OUTCOMES, budgetStopped: true },
  );
  const cur = loop.current ? itemNow(ctx, loop.current) : null;
  const sign = pullTerms(loop.settings?.forge?.provider).sign;
  return { loop, items: [...(cur && !items.some((it) => it.id === cur.id) ? [cur] : []), ...items].map((it) => attentionItem(it, sign)) };
}

/** The document a notify command reads on stdin. */
interface NotifyDocument {
  schema: "loop/notify@1";
  kind: Attention["kind"];
  /** One line, for a mail subject or a chat message. */
  subject: string;
  /** Why the loop needs a person, and for an environment fault how to fix it. */
  reason: string;
  item: string | null;
  /** The condition; the same key is never notified twice. */
  key: string;
  loop: { name: string | null; state: string; reason: string | null; outcome: string | null; current: string | null };
  /** The log position the document was made at. */
  seq: number;
  at: string;
  host: string;
  root: string;
  stateRoot: string;
}

const SUBJECTS: Record<Attention["kind"], string> = {
  review: "waits for review before it launches anything",
  question: "an agent asked a question",
  environment: "paused by an environment fault",
  landing: "a landing failed",
  failed: "drained Failed",
  budget: "a budget was reached",
  gave_up: "an agent gave up",
  // `loop status`'s alone (a step that cannot read loop.json notifies nobody): here for completeness.
  definition: "loop.json is invalid",
};

function notifyDocument(o: { a: Attention; p: Pick<Projection, "seq" | "loop">; root: string; stateRoot: string; now: Date }): NotifyDocument {
  const { a, p } = o;
  return {
    schema: "loop/notify@1",
    kind: a.kind,
    subject: `loop ${p.loop.name ?? "?"}: ${SUBJECTS[a.kind]}${a.item ? ` (${a.item})` : ""}`,
    reason: a.reason,
    item: a.item,
    key: a.key,
    loop: { name: p.loop.name, state: p.loop.state, reason: p.loop.reason, outcome: p.loop.outcome, current: p.loop.current },
    seq: p.seq,
    at: o.now.toISOString(),
    host: hostname(),
    root: o.root,
    stateRoot: o.stateRoot,
  };
}

/** Run the notify command for every condition not notified yet, and send the channels theirs; record each. */
export async function notifyPhase(ctx: StepContext): Promise<NotifyReport[]> {
  const def = ctx.def.notify;
  if (!def) return [];
  const reports = def.command ? await commandPhase(ctx, { ...def, command: def.command }) : [];
  if (def.channels.length) reports.push(...(await channelsPhase(ctx, def.channels, def.pageUrl, attentionOf(stepAttentionInput(ctx)))));
  return reports;
}

async function commandPhase(ctx: StepContext, def: NotifyDef & { command: string[] }): Promise<NotifyReport[]> {
  const reports: NotifyReport[] = [];
  const { seq, loop } = loopView(ctx);
  const p = { seq, loop };
  for (const a of attentionOf(stepAttentionInput(ctx))) {
    if (p.loop.notified[a.slot] === a.key) continue;
    ctx.store.assertLease();
    ctx.store.renewLease(ctx.lease, def.timeout + 10 * 60_000);
    const doc = notifyDocument({ a, p, root: ctx.options.root, stateRoot: ctx.options.stateRoot, now: new Date() });
    // The operator's command: loop's environment, never its keys (docs/loop-json.md#notify).
    const r = await runNotify(def, {
      doc,
      cwd: ctx.options.root,
      logPath: join(ctx.options.stateRoot, "notify.log"),
      env: ctx.options.env,
      rule: toolRule(ctx.def),
    });
    append(
      ctx,
      [{ type: "notified", item: a.item, payload: { slot: a.slot, key: a.key, kind: a.kind, ok: r.ok, exitCode: r.exitCode, reason: r.reason } }],
      "notify",
    );
    if (!r.ok) ctx.options.log.warn(`notify (${a.kind}${a.item ? ` ${a.item}` : ""}) failed: ${r.reason}; the loop goes on, and it is not run again for this`);
    reports.push({ channel: null, kind: a.kind, item: a.item, ok: r.ok, reason: r.reason });
  }
  return reports;
}

interface NotifyRun {
  ok: boolean;
  exitCode: number | null;
  reason: string;
}

/**
 * Run `def.command` (no shell) in its own process group with `doc` on stdin, its output in
 * `logPath` (overwritten each time); past `def.timeout` the group is killed.
 */
async function runNotify(
  def: NotifyDef & { command: string[] },
  o: { doc: NotifyDocument; cwd: string; logPath: string; env: Record<string, string | undefined>; rule: EnvRule },
): Promise<NotifyRun> {
  // Created afresh: never written through a link (or into a FIFO) found under its name.
  rmSync(o.logPath, { force: true });
  const fd = openSync(o.logPath, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW, 0o644);
  let timedOut = false;
  let result: { code: number | null; signal: string | null } | { error: string };
  try {
    let child: Bun.Subprocess<"pipe", number, number>;
    try {
      child = Bun.spawn(def.command, {
        cwd: o.cwd,
        env: { ...childEnvironment(o.env, o.rule, { cwd: o.cwd }), LOOP_NOTIFY_KIND: o.doc.kind, LOOP_NOTIFY_SUBJECT: o.doc.subject, LOOP_FAILPOINT: "" },
        detached: true,
        stdio: ["pipe", fd, fd],
      });
    } catch (err) {
      result = { error: (err as Error).message };
      return finish();
    }
    const timer = setTimeout(() => {
      timedOut = true;
      void killGroup(child.pid, 2000);
    }, def.timeout);
    try {
      child.stdin.write(JSON.stringify(o.doc) + "\n");
      await child.stdin.end();
    } catch {
      // It did not read its stdin (exited first): its exit status says how it went.
    }
    await child.exited;
    clearTimeout(timer);
    void killGroup(child.pid, 0); // whatever it left running in its group
    result = { code: child.exitCode, signal: child.signalCode === null ? null : String(child.signalCode) };
    return finish();
  } finally {
    closeSync(fd);
  }

  function finish(): NotifyRun {
    const r = result;
    if ("error" in r) return { ok: false, exitCode: null, reason: `could not run ${JSON.stringify(def.command[0])}: ${r.error}` };
    if (timedOut) return { ok: false, exitCode: r.code, reason: `timed out after ${formatDuration(def.timeout)}${outputTail(o.logPath)}` };
    if (r.signal) return { ok: false, exitCode: null, reason: `killed by ${r.signal}${outputTail(o.logPath)}` };
    if (r.code !== 0) return { ok: false, exitCode: r.code, reason: `exited ${r.code}${outputTail(o.logPath)}` };
    return { ok: true, exitCode: 0, reason: "exit 0" };
  }
}

function outputTail(path: string): string {
  try {
    const t = tail(readTextOrNull(path, { noLinks: true }) ?? "", 3, 300).trim();
    return t ? `: ${t.split("\n").join(" / ")}` : "";
  } catch {
    return "";
  }
}
