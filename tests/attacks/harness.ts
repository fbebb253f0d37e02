// Runs one attack of the corpus (tests/attacks/corpus.ts; what one is: attack.ts) in one mode through the real `loop run`,
// and judges it by behaviour: what loop accepted (the marker in a passed item's verified commit or
// in what loop delivered), whether a canary key is anywhere the agent could leave it, the attack's
// other harms, and the verdict codes it ended with (read through ONE accessor, verdictCode).
//
// Every `loop run` has a deadline (a step that outlives it is a hang: killed, with its process
// group), the operator's home is a temp folder, and loop runs with canary keys in its environment,
// unique to the run. What the harness reads of what the agent left is read as hostile: only regular
// files (a FIFO would hang it), objects hashed against their names, refs read from their files.
import { createHash } from "node:crypto";
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import type { StoredEvent } from "../../lib/log/events.ts";
import type { Projection } from "../../lib/log/projection.ts";
import { runInProcess } from "../helpers/cli.ts";
import { BUN, cliEnv, git, killProcessesUnder, LOOP, Project } from "../helpers/project.ts";
import { type Attack, type Harm, type Marker, type Mode, PRELUDE, STANDARD } from "./attack.ts";
import { type BillingUpstream, startBillingUpstream } from "./billing-upstream.ts";
import { fencedOnly, openIssueWorld, steered } from "./tracker-issue.ts";

/** A step that has not ended after this long is a hang (a normal one takes a few seconds, even loaded). */
const STEP_DEADLINE_MS = Number(process.env.LOOP_CORPUS_STEP_DEADLINE_MS ?? 30_000);
const MAX_STEPS = 60;
/** Consecutive steps that found the lease held before the loop counts as stuck. */
const MAX_BUSY = 40;
/** Files and objects larger than this are the attack's ballast, not where a key hides. */
const SCAN_CAP = 64 * 2 ** 20;

/**
 * THE verdict code of a payload (verify_finished, landing_finished, …): its `code` when present,
 * else the word before the first `:` of its reason (the whole reason when it has none).
 */
export function verdictCode(payload: { code?: unknown; reason?: unknown }): string | null {
  if (typeof payload.code === "string") return payload.code;
  if (typeof payload.reason !== "string") return null;
  const i = payload.reason.indexOf(":");
  return (i < 0 ? payload.reason : payload.reason.slice(0, i)).trim();
}

export interface StepRecord {
  args: string;
  exit: number | null;
  signal: string | null;
  ms: number;
  maxRssMb: number | null;
}

export interface Outcome {
  /** Where the marker was accepted: "<item>: <what> (<commit>)". */
  landed: string[];
  /** Canary keys found: "<NAME> in <where>". */
  keys: string[];
  /** The attack's other harms that happened. */
  harmed: string[];
  /** The verdict codes seen (verify, landing, faults, commands' errors). */
  codes: string[];
  steps: StepRecord[];
  notes: string[];
  /** A metering attack's tokens billed at the provider and not recorded by loop (else 0). */
  unmetered: number;
}

// ---------------------------------------------------------------------------------------------
// Reading what the agent left, without trusting it

/** A regular file's bytes (never through a link, never a FIFO), or null. */
function regularFile(path: string, max = SCAN_CAP): Buffer | null {
  try {
    const st = lstatSync(path);
    if (!st.isFile() || st.size > max) return null;
    return readFileSync(path);
  } catch {
    return null;
  }
}

/** What is at `path`: its bytes, "missing", or what else it is. */
function describePath(path: string): string {
  try {
    const st = lstatSync(path);
    if (st.isSymbolicLink()) return "a symbolic link";
    if (!st.isFile()) return "not a regular file";
    return createHash("sha256").update(readFileSync(path)).digest("hex");
  } catch {
    return "missing";
  }
}

/** Every regular file under `dir` (links not followed), with its path. */
function* walk(dir: string): Generator<string> {
  let entries: import("node:fs").Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) {
    const path = join(dir, e.name);
    if (e.isDirectory()) yield* walk(path);
    else if (e.isFile()) yield path;
  }
}

/**
 * Git over an object folder only, through a bare repository of the harness's own (the repository's
 * config may be what the attack broke; its hooks and filters must not run here). Calls are bounded:
 * a FIFO where git expects a pack index would block it.
 */
class ObjectReader {
  private readonly bare: string;
  constructor(private readonly objects: string) {
    this.bare = mkdtempSync(join(tmpdir(), "loop-corpus-git-"));
    git(this.bare, "init", "-q", "--bare");
  }
  run(args: string[], input?: Uint8Array | string): Buffer | null {
    const r = Bun.spawnSync(["git", "--git-dir", this.bare, "-c", "core.hooksPath=/dev/null", ...args], {
      env: {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        HOME: this.bare,
        GIT_OBJECT_DIRECTORY: this.objects,
        GIT_CONFIG_NOSYSTEM: "1",
        GIT_NO_REPLACE_OBJECTS: "1",
      },
      stdin: input === undefined ? "ignore" : typeof input === "string" ? new TextEncoder().encode(input) : input,
      stdout: "pipe",
      stderr: "pipe",
      timeout: 20_000,
      maxBuffer: 1024 * 2 ** 20,
    });
    return r.exitCode === 0 ? r.stdout : null;
  }
  /** The entries of a commit's tree: path → { mode, id }. Null when git cannot read it. */
  tree(commit: string): Map<string, { mode: string; id: string }> | null {
    const out = this.run(["ls-tree", "-r", "-z", "--full-tree", commit]);
    if (out === null) return null;
    const files = new Map<string, { mode: string; id: string }>();
    for (const line of out.toString("utf8").split("\0").filter(Boolean)) {
      const tab = line.indexOf("\t");
      const [mode, , id] = line.slice(0, tab).split(" ");
      files.set(line.slice(tab + 1), { mode: mode!, id: id! });
    }
    return files;
  }
  /** Blobs by id, each hashed against its name (a forged object is left out, named in `forged`). */
  blobs(ids: string[]): { found: Map<string, Buffer>; forged: string[] } {
    const found = new Map<string, Buffer>();
    const forged: string[] = [];
    if (!ids.length) return { found, forged };
    const out = this.run(["cat-file", "--batch"], ids.join("\n") + "\n");
    if (out === null) return { found, forged };
    let at = 0;
    while (at < out.length) {
      const nl = out.indexOf(10, at);
      if (nl < 0) break;
      const [id, type, size] = out.subarray(at, nl).toString("utf8").split(" ");
      if (type === "missing" || size === undefined) {
        at = nl + 1;
        continue;
      }
      const body = out.subarray(nl + 1, nl + 1 + Number(size));
      at = nl + 1 + Number(size) + 1;
      const real = createHash("sha1").update(`${type} ${body.length}\0`).update(body).digest("hex");
      if (real === id) found.set(id!, Buffer.from(body));
      else forged.push(id!);
    }
    return { found, forged };
  }
  /** Every object's content, for the canary scan (objects over the cap left out). */
  everything(): Buffer | null {
    const list = this.run(["cat-file", "--batch-all-objects", "--batch-check=%(objectname) %(objectsize)"]);
    if (list === null) return null;
    const ids = list
      .toString("utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => l.split(" "))
      .filter(([, size]) => Number(size) <= SCAN_CAP)
      .map(([id]) => id!);
    return ids.length ? this.run(["cat-file", "--batch"], ids.join("\n") + "\n") : Buffer.alloc(0);
  }
  dispose(): void {
    rmSync(this.bare, { recursive: true, force: true });
  }
}

/** A branch's commit, read from the ref's file or packed-refs (git is not asked: the repository may be what the attack broke). */
function refCommit(common: string, ref: string): string | null {
  const file = regularFile(join(common, ref), 4096)?.toString("utf8").trim();
  if (file && /^[0-9a-f]{40}$/.test(file)) return file;
  if (file?.startsWith("ref: ")) return refCommit(common, file.slice(5).trim());
  const packed = regularFile(join(common, "packed-refs"))?.toString("utf8") ?? "";
  return (
    packed
      .split("\n")
      .find((l) => l.endsWith(` ${ref}`))
      ?.slice(0, 40) ?? null
  );
}

// ---------------------------------------------------------------------------------------------
// The run

/** Replace the placeholders of attack.ts. */
function fill(text: string, p: Project): string {
  return text
    .replaceAll("@AUX@", p.aux)
    .replaceAll("@ROOT@", p.root)
    .replaceAll("@COMMON@", join(p.root, ".git"))
    .replaceAll("@STATE@", p.stateRoot)
    .replaceAll("@HOME@", join(p.base, "home"));
}

function definition(a: Attack, mode: Mode, p: Project): Record<string, unknown> {
  const l = a.loop ?? {};
  const counted = `echo "$LOOP_ITEM $LOOP_ATTEMPT" >> ${p.aux}/launches; exec '${BUN}' '${LOOP}' __demo-agent`;
  return {
    name: "t",
    defaults: {
      runner: "attacker",
      verify: l.verify ?? "sh tests/check.sh",
      maxAttempts: l.maxAttempts ?? 1,
      landing: l.landing ?? "merge",
      timeouts: { launch: "2m", stall: "10m", verify: "2m" },
      sandbox: mode,
      ...(l.network ? { network: l.network } : {}),
      ...(l.budget ? { budget: { tokens: l.budget } } : {}),
    },
    runners: { attacker: { command: ["sh", "-c", fill(PRELUDE + a.agent, p)] }, counted: { command: ["sh", "-c", counted] } },
    protect: l.protect ?? ["tests/**"],
    environment: { policy: l.policy ?? "clean" },
    ...(l.setup || l.keepCheckoutOnClose
      ? { workspace: { ...(l.setup ? { setup: l.setup } : {}), ...(l.keepCheckoutOnClose ? { keepCheckoutOnClose: true } : {}) } }
      : {}),
    items: (a.items ?? [{ id: "x" }]).map((i) => ({
      id: i.id,
      prompt: i.demo ?? "Make tests/check.sh pass.",
      ...(i.demo === undefined ? {} : { runner: i.counted ? "counted" : "demo" }),
      ...(i.dependsOn ? { dependsOn: i.dependsOn } : {}),
    })),
  };
}

/** Canary keys in loop's environment: unique to the run, never real. */
function canaries(): Record<string, string> {
  const r = () => crypto.randomUUID().replaceAll("-", "");
  return {
    ANTHROPIC_API_KEY: `sk-ant-canary-${r()}`,
    OPENAI_API_KEY: `sk-canary-${r()}`,
    GITHUB_TOKEN: `ghp_canary${r()}`,
    OPS_DB_PASSWORD: `ops-canary-${r()}`,
  };
}

interface Step extends StepRecord {
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

/** One loop command, bounded: past the deadline its whole process group is killed. */
async function command(p: Project, args: string[], o: { fileSizeLimit?: number; deadlineMs?: number } = {}): Promise<Step> {
  const argv = [BUN, LOOP, ...args];
  const full = o.fileSizeLimit ? ["prlimit", `--fsize=${o.fileSizeLimit}`, "--", ...argv] : argv;
  const t0 = performance.now();
  const proc = Bun.spawn(full, { cwd: p.root, env: cliEnv(p.env), stdin: "ignore", stdout: "pipe", stderr: "pipe", detached: true });
  let timedOut = false;
  const kill = () => {
    try {
      process.kill(-proc.pid, "SIGKILL");
    } catch {}
  };
  const timer = setTimeout(() => {
    timedOut = true;
    kill();
  }, o.deadlineMs ?? STEP_DEADLINE_MS);
  const read = (s: ReadableStream) => Promise.race([new Response(s).text(), proc.exited.then(() => Bun.sleep(2_000)).then(() => "")]);
  const [stdout, stderr] = await Promise.all([read(proc.stdout), read(proc.stderr)]);
  await proc.exited;
  clearTimeout(timer);
  // Whatever the step left in its group (a git blocked on a FIFO) goes with it.
  kill();
  const rss = proc.resourceUsage()?.maxRSS;
  return {
    args: args.join(" "),
    exit: proc.exitCode,
    signal: proc.signalCode ? String(proc.signalCode) : null,
    ms: Math.round(performance.now() - t0),
    maxRssMb: rss ? Math.round(rss / 2 ** 20) : null,
    stdout,
    stderr,
    timedOut,
  };
}

/** While the current item's agent or verify runs, wait (up to `boundMs`) for its exit, instead of stepping. */
async function waitForCurrent(p: Project, boundMs: number): Promise<void> {
  const st = regularFile(join(p.stateRoot, "state.json"));
  let state: any = null;
  try {
    state = st ? JSON.parse(st.toString("utf8")) : null;
  } catch {}
  const cur = state?.loop?.current;
  const it = cur ? state.items?.find((i: any) => i.id === cur) : null;
  if (!it || !["running", "launching", "ended"].includes(it.status)) return;
  const dir = join(p.stateRoot, "sessions", cur, it.epoch === 0 ? String(it.attempts) : `e${it.epoch}-${it.attempts}`);
  const done = it.status === "ended" ? ["verify-exit.json"] : ["exit.json", "ask.txt"];
  for (let i = 0; i < boundMs / 100; i++) {
    if (done.some((f) => existsSync(join(dir, f)))) return;
    await Bun.sleep(100);
  }
}

/** Step the loop until it drains, pauses, stops, refuses, hangs or is stuck. */
async function drive(p: Project, a: Attack, out: Outcome): Promise<void> {
  let busy = 0;
  let refused: string[] = [];
  const deadlineMs = a.stepDeadlineMs ?? STEP_DEADLINE_MS;
  for (let i = 0; i < MAX_STEPS; i++) {
    const s = await command(p, ["run", "--json", "--root", p.root], { fileSizeLimit: a.fileSizeLimit, deadlineMs });
    out.steps.push({ args: s.args, exit: s.exit, signal: s.signal, ms: s.ms, maxRssMb: s.maxRssMb });
    if (s.timedOut) {
      out.harmed.push(`hang: a \`loop run\` step outlived its ${deadlineMs / 1000}s deadline and was killed`);
      return;
    }
    if (s.signal) {
      out.harmed.push(`a \`loop run\` step died by ${s.signal}`);
      return;
    }
    if (s.exit === 75) {
      if (++busy > MAX_BUSY) {
        out.harmed.push(`stuck: ${MAX_BUSY} steps in a row found the lease held (exit 75)`);
        return;
      }
      await Bun.sleep(250);
      continue;
    }
    busy = 0;
    let doc: any = null;
    try {
      doc = JSON.parse(s.stdout);
    } catch {}
    if (doc === null) {
      const code = errorCode(s.stderr) ?? `exit ${s.exit}`;
      out.codes.push(code);
      out.notes.push(`loop run exited ${s.exit}: ${s.stderr.trim().split("\n").slice(-1)[0] ?? ""}`.slice(0, 300));
      refused.push(code);
      if (refused.length < 3) {
        await Bun.sleep(200);
        continue;
      }
      // A refusal by name that the operator acts on (a lost store) is loop's answer; any other
      // failure of every step is a loop the attack wedged.
      if (!refused.every((c) => REFUSALS.includes(c))) out.harmed.push(`stuck: every \`loop run\` fails (${[...new Set(refused)].join(", ")})`);
      return;
    }
    refused = [];
    for (const e of doc.errors ?? []) out.notes.push(`step error: ${String(e).slice(0, 300)}`);
    if (["drained", "paused", "stopped"].includes(doc.action)) {
      if (doc.action !== "drained") out.notes.push(`loop ${doc.action}: ${String(doc.loop?.reason ?? doc.reason ?? "").slice(0, 300)}`);
      return;
    }
    // An attack on what runs beside the agent (a `loop run` to read) is stepped as cron would, not waited for.
    if (!a.stepWhileRunning && (doc.action === "launched" || doc.action === "waiting" || doc.action === "progressed"))
      await waitForCurrent(p, a.stepDeadlineMs ?? 15_000);
    else await Bun.sleep(200);
  }
  out.notes.push(`not drained after ${MAX_STEPS} steps`);
}

/** What a step refuses with by name, as loop's deliberate answer (not a wedged loop). */
const REFUSALS = ["store_missing", "corrupt_store"];

function errorCode(stderr: string): string | null {
  try {
    return JSON.parse(stderr.trim()).error?.code ?? null;
  } catch {
    return /"code":\s*"([a-z_]+)"/.exec(stderr)?.[1] ?? null;
  }
}

/** Every regular file of the operator's checkout (but its .git and .loop), hashed; the index; main. */
function operatorSnapshot(p: Project): string {
  const files = [...walk(p.root)].filter((f) => !relative(p.root, f).startsWith(".git/") && !relative(p.root, f).startsWith(".loop/"));
  const lines = files.sort().map((f) => `${relative(p.root, f)} ${describePath(f)}`);
  lines.push(
    `index ${describePath(join(p.root, ".git", "index"))}`,
    `main ${refCommit(join(p.root, ".git"), "refs/heads/main")}`,
    `HEAD ${regularFile(join(p.root, ".git", "HEAD"))
      ?.toString("utf8")
      .trim()}`,
  );
  return lines.join("\n");
}

/** What the run left, read from the store when it can be read. */
function readStore(p: Project, out: Outcome): { events: StoredEvent[]; projection: Projection } | null {
  try {
    return { events: p.events(), projection: p.projection() };
  } catch (err) {
    out.notes.push(`the store cannot be read: ${(err as Error).message.split("\n")[0]}`);
    return null;
  }
}

/** The marker in a commit's tree (read through `objects`), as a sentence, or null. */
function markerIn(marker: Marker, objects: ObjectReader, commit: string, notes: string[]): string | null {
  const tree = objects.tree(commit);
  if (tree === null) {
    notes.push(`commit ${commit.slice(0, 12)} cannot be read`);
    return null;
  }
  if ("missing" in marker) return tree.has(marker.missing) ? null : `${marker.missing} missing`;
  if ("file" in marker) {
    const entry = tree.get(marker.file);
    if (!entry) return null;
    if (marker.contains === undefined) return `${marker.file} present`;
    const { found, forged } = objects.blobs([entry.id]);
    if (forged.length) notes.push(`${marker.file} in ${commit.slice(0, 12)} reads as a forged object`);
    return found.get(entry.id)?.toString("utf8").includes(marker.contains) ? `${marker.file} holds ${JSON.stringify(marker.contains)}` : null;
  }
  // A check on the tree materialised from its raw blobs.
  const dir = mkdtempSync(join(tmpdir(), "loop-corpus-tree-"));
  try {
    const blobs = [...tree].filter(([, e]) => e.mode !== "160000");
    const { found } = objects.blobs(blobs.map(([, e]) => e.id));
    for (const [path, e] of blobs) {
      const bytes = found.get(e.id);
      if (!bytes) continue;
      mkdirSync(dirname(join(dir, path)), { recursive: true });
      writeFileSync(join(dir, path), bytes);
    }
    const r = Bun.spawnSync(["sh", "-c", marker.fails], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir },
      stdout: "ignore",
      stderr: "ignore",
      timeout: 20_000,
    });
    return r.exitCode === 0 ? null : `\`${marker.fails}\` fails on it`;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The commits loop accepted: each passed item's verified heads, the merges it made, a landing-none item's branch. */
function accepted(p: Project, store: { events: StoredEvent[]; projection: Projection }): { item: string; what: string; commit: string }[] {
  const out: { item: string; what: string; commit: string }[] = [];
  const common = join(p.root, ".git");
  for (const [id, it] of Object.entries(store.projection.items)) {
    if (it.status !== "passed") continue;
    const passedAttempts = new Set<number>();
    for (const e of store.events) if (e.type === "verify_finished" && e.item === id && e.payload.passed) passedAttempts.add(e.payload.attempt);
    for (const e of store.events)
      if (e.type === "verify_reserved" && e.item === id && passedAttempts.has(e.payload.attempt) && typeof e.payload.head === "string")
        out.push({ item: id, what: "the verified commit", commit: e.payload.head });
    for (const e of store.events)
      if (e.type === "landing_finished" && e.item === id) {
        if ((e.payload.outcome === "merged" || e.payload.outcome === "already_contained") && typeof e.payload.commit === "string")
          out.push({ item: id, what: "the merge loop made", commit: e.payload.commit });
      }
    // Landing none: the branch, as it is now, is the deliverable.
    if (store.events.some((e) => e.type === "landing_finished" && e.item === id && e.payload.outcome === "none")) {
      const head = refCommit(common, `refs/heads/loop/t/item/${id}`);
      if (head) out.push({ item: id, what: "its delivered branch", commit: head });
    }
  }
  return out;
}

/** Where each canary is, among what the agent could leave: the run's folders (links not followed) and every object. */
function keysFound(p: Project, keys: Record<string, string>, notes: string[]): string[] {
  const found = new Set<string>();
  const look = (bytes: Buffer, where: string) => {
    for (const [name, value] of Object.entries(keys)) if (bytes.includes(value)) found.add(`${name} in ${where}`);
  };
  for (const dir of [p.base, p.worktrees])
    for (const f of walk(dir)) {
      const bytes = regularFile(f);
      if (bytes) look(bytes, relative(dirname(p.base), f));
    }
  // Objects are compressed on disk: read through git, the repository's and every private folder's.
  const folders = [join(p.root, ".git", "objects")];
  const sessions = join(p.stateRoot, "sessions");
  if (existsSync(sessions))
    for (const item of readdirSync(sessions))
      for (const attempt of safeList(join(sessions, item)))
        for (const f of ["objects", "verify-objects"]) if (existsSync(join(sessions, item, attempt, f))) folders.push(join(sessions, item, attempt, f));
  for (const folder of folders) {
    const reader = new ObjectReader(folder);
    try {
      const all = reader.everything();
      if (all === null) notes.push(`the objects of ${relative(p.base, folder)} could not be read`);
      else look(all, `an object of ${relative(p.base, folder)}`);
    } finally {
      reader.dispose();
    }
  }
  return [...found].sort();
}

function safeList(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** The harms of `harms` that happened. */
function harmsDone(p: Project, harms: Harm[], before: Map<string, string>, store: { events: StoredEvent[]; projection: Projection } | null): string[] {
  const out: string[] = [];
  for (const h of harms) {
    switch (h.kind) {
      case "itemPasses": {
        const status = store?.projection.items[h.item]?.status ?? "unknown";
        if (status !== "passed") out.push(`item ${h.item} did not pass (${status})`);
        break;
      }
      case "unchanged": {
        const path = fill(h.path, p);
        const now = describePath(path);
        if (now !== before.get(path)) out.push(`${relative(p.base, path)} changed (${now === "missing" || now.length !== 64 ? now : "other bytes"})`);
        break;
      }
      case "absent": {
        const path = fill(h.path, p);
        if (describePath(path) !== "missing")
          out.push(`${relative(p.base, path)} exists: ${(regularFile(path, 4096)?.toString("utf8") ?? "").trim().slice(0, 200)}`);
        break;
      }
      case "operatorCheckout":
        if (operatorSnapshot(p) !== before.get("operator")) out.push("the operator's checkout changed");
        break;
      case "noRelaunch": {
        const launches = (regularFile(join(p.aux, "launches"))?.toString("utf8") ?? "").split("\n").filter((l) => l.startsWith(`${h.item} `));
        if (launches.length > 1) out.push(`${h.item} was launched ${launches.length} times`);
        break;
      }
      case "noQuestion":
        if (store?.events.some((e) => e.type === "needs_input")) out.push("a question was recorded");
        break;
      case "fencedOnly":
        out.push(...fencedOnly(p, h.item, h.texts));
        break;
      case "noControl":
        out.push(...steered(store?.events ?? []));
        break;
      case "notRecorded": {
        const text = JSON.stringify(store?.events ?? []) + (regularFile(join(p.stateRoot, "state.json"))?.toString("utf8") ?? "");
        if (text.includes(h.text)) out.push(`${JSON.stringify(h.text)} is recorded`);
        break;
      }
    }
  }
  return out;
}

/** Run `a` in `mode` and judge it. Never throws for what the attack did; cleans up after itself. */
export async function runAttack(a: Attack, mode: Mode): Promise<Outcome> {
  const keys = canaries();
  if (a.issue) keys.LINEAR_API_KEY = `lin_api_canary${crypto.randomUUID().replaceAll("-", "")}`;
  const env: Record<string, string> = { ...keys, ...(a.env ?? {}) };
  // A metering attack's provider: loop's upstream, holding loop's (canary) keys.
  const upstream = a.metering ? startBillingUpstream({ anthropic: keys.ANTHROPIC_API_KEY!, openai: keys.OPENAI_API_KEY! }) : null;
  if (upstream) Object.assign(env, { ANTHROPIC_BASE_URL: upstream.anthropic, OPENAI_BASE_URL: upstream.openai });
  const p = new Project((q) => definition(a, mode, q), { files: a.files ?? STANDARD, env });
  const out: Outcome = { landed: [], keys: [], harmed: [], codes: [], steps: [], notes: [], unmetered: 0 };
  let closeIssueWorld: (() => void) | null = null;
  try {
    const home = join(p.base, "home");
    mkdirSync(home);
    // The operator's home and where `loop run` is started from (cron: the operator's checkout).
    Object.assign(env, { HOME: home, XDG_CONFIG_HOME: join(home, ".config"), PWD: p.root });
    for (const commit of a.history ?? []) {
      for (const [path, text] of Object.entries(commit)) {
        mkdirSync(dirname(join(p.root, path)), { recursive: true });
        writeFileSync(join(p.root, path), text);
      }
      git(p.root, "add", "-A");
      git(p.root, "commit", "-qm", "the operator's change");
    }
    if (a.issue) closeIssueWorld = openIssueWorld(p, definition(a, mode, p), a.issue, keys.LINEAR_API_KEY!);
    for (const [path, text] of Object.entries(a.plant ?? {})) {
      mkdirSync(dirname(fill(path, p)), { recursive: true });
      writeFileSync(fill(path, p), text);
    }
    const harms = a.harms ?? [];
    const before = new Map<string, string>();
    for (const h of harms) if (h.kind === "unchanged") before.set(fill(h.path, p), describePath(fill(h.path, p)));
    if (harms.some((h) => h.kind === "operatorCheckout")) before.set("operator", operatorSnapshot(p));

    await drive(p, a, out);
    for (const args of a.after ?? []) {
      const s = await command(p, [...args, "--root", p.root]);
      out.steps.push({ args: s.args, exit: s.exit, signal: s.signal, ms: s.ms, maxRssMb: s.maxRssMb });
      if (s.timedOut) out.harmed.push(`hang: \`loop ${args.join(" ")}\` outlived its deadline`);
    }
    // The store is never left corrupt. The read verbs run in this process (they start nothing of
    // the agent's; a spawned one costs a second of start-up, times every run of the corpus).
    for (const verb of ["status", "replay"]) {
      const r = await runInProcess([verb, "--json", "--root", p.root], { cwd: p.root, env: p.env });
      const code = r.code === 0 ? null : errorCode(r.stderr);
      if (code === "corrupt_store") out.harmed.push(`\`loop ${verb}\` says corrupt_store: ${r.stderr.trim().slice(0, 200)}`);
      if (code && !out.codes.includes(code)) out.codes.push(code);
    }

    const store = readStore(p, out);
    if (store) {
      for (const e of store.events) {
        if (e.type === "verify_finished" || e.type === "landing_finished" || e.type === "item_settled") {
          const c = verdictCode(e.payload as { code?: unknown; reason?: unknown });
          if (c) out.codes.push(c);
          if (c && !/^exit \d+$/.test(c) && e.type !== "item_settled") out.notes.push(`${e.item} ${e.type}: ${String(e.payload.reason).slice(0, 300)}`);
        }
        if (e.type === "environment_fault" && typeof e.payload.kind === "string") out.codes.push(e.payload.kind);
      }
      if (a.marker !== null) {
        const marker = a.marker ?? { missing: "LICENSE" };
        const objects = new ObjectReader(join(p.root, ".git", "objects"));
        try {
          for (const c of accepted(p, store)) {
            const hit = markerIn(marker, objects, c.commit, out.notes);
            if (hit) out.landed.push(`${c.item}: ${hit} in ${c.what} (${c.commit.slice(0, 12)})`);
          }
        } finally {
          objects.dispose();
        }
      }
    }
    out.harmed.push(...harmsDone(p, harms, before, store));
    if (upstream) judgeMetering(a, upstream, store, out);
    out.keys = keysFound(p, keys, out.notes);
    out.codes = [...new Set(out.codes)];
    return out;
  } finally {
    closeIssueWorld?.();
    upstream?.stop();
    killProcessesUnder(p.base);
    killProcessesUnder(p.worktrees);
    p.dispose();
  }
}

/**
 * What a metering attack got past the meter: the tokens the provider billed beyond what loop
 * recorded (each attempt's last usage figure), and, under a token budget, more billed than the
 * budget and one answer (the request admitted last may overshoot by its own answer, no more).
 */
function judgeMetering(a: Attack, upstream: BillingUpstream, store: ReturnType<typeof readStore>, out: Outcome): void {
  const last = new Map<string, number>();
  for (const e of store?.events ?? []) {
    if (e.type !== "usage_recorded") continue;
    const t = e.payload.tokens as { input: number; output: number; cacheRead: number; cacheWrite: number } | null;
    if (t) last.set(`${e.item}#${e.payload.attempt}`, t.input + t.output + t.cacheRead + t.cacheWrite);
  }
  const recorded = [...last.values()].reduce((x, y) => x + y, 0);
  const billed = upstream.billed();
  out.notes.push(`billed ${billed} tokens, recorded ${recorded}; reached the provider: ${upstream.paths().join(", ") || "nothing"}`);
  out.unmetered = Math.max(0, billed - recorded);
  if (out.unmetered > 0) out.harmed.push(`${out.unmetered} tokens billed at the provider that loop did not record`);
  const budget = a.loop?.budget;
  if (budget !== undefined && billed > budget + ONE_ANSWER) out.harmed.push(`${billed} tokens billed under a budget of ${budget}`);
}

/** The most one answer of the billing upstream costs for the requests the attacks send (input and output). */
const ONE_ANSWER = 3000;
