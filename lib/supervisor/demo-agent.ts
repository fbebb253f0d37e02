// The built-in `demo` agent: a deterministic stand-in for a coding agent, used by the demo and tests.
//
// It reads LOOP_HANDOFF and obeys the `@demo` directive lines in it, in order (docs/runners.md):
//
//   @demo write <path> <text...>     create/overwrite <path> (relative, inside the worktree)
//   @demo append <path> <text...>    append a line to <path>
//   @demo commit <message...>        git add -A && git commit -m <message>
//   @demo merge <ref>                git merge <ref>, conflicts resolved to this branch's side (a rework after a conflict)
//   @demo ask <question...>          write the question to LOOP_ASK_FILE and stop (exit 0)
//   @demo give-up <reason...>        write the reason to LOOP_GIVE_UP_FILE and stop (exit 0)
//   @demo sleep <seconds>            wait
//   @demo exit <code>                stop with that exit code
//   @demo print <text...>            print the text on stdout
//   @demo usage <input> <output> [usd]  report that many more tokens (and dollars) used
//   @demo attempt <N> <directive>    the directive applies only on attempt N
//
// <text> may use the escapes \n, \t and \\. A directive line may be indented; anything else on the
// line is part of the directive. Every directive is parsed and checked before any is carried out, so
// a malformed one (exit 2) changes nothing. With no directive at all the agent writes
// DEMO-<item>.md (attempt number + first line of the prompt). Nothing random, no clock in any file.
//
// It reports what it "used" the way a command runner does (docs/runners.md#reporting-usage): JSON
// lines of cumulative figures appended to $LOOP_USAGE_FILE, when it is set. Deterministic: a token
// per 4 bytes of the handoff read, 40 per directive carried out, plus what `usage` directives add,
// priced at $3 per million input tokens and $15 per million output tokens.

import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";

/** The demo's pretend prices, US dollars per million tokens: input, output. */
const DEMO_PRICE = { input: 3, output: 15 };

/** What the demo agent has "used" so far, appended as one cumulative line to $LOOP_USAGE_FILE. */
class DemoUsage {
  input = 0;
  output = 0;
  /** Dollars given by `usage` directives, on top of the pretend prices. */
  extraUsd = 0;
  constructor(private readonly file: string | undefined) {}
  add(input: number, output: number, usd: number | null = null): void {
    this.input += input;
    this.output += output;
    this.extraUsd += usd ?? 0;
    this.report();
  }
  report(): void {
    if (!this.file) return;
    const usd = Math.round(((this.input * DEMO_PRICE.input + this.output * DEMO_PRICE.output) / 1e6 + this.extraUsd) * 1e6) / 1e6;
    try {
      appendFileSync(this.file, JSON.stringify({ input_tokens: this.input, output_tokens: this.output, usd }) + "\n");
    } catch {
      // A usage report is no reason to fail the work: the loop then shows what it last read.
    }
  }
}
import { dirname, isAbsolute, resolve } from "node:path";
import { DemoDirectiveError } from "../shared/errors.ts";

type DemoDirective =
  | { verb: "write" | "append"; path: string; text: string }
  | { verb: "commit"; message: string }
  | { verb: "merge"; ref: string }
  | { verb: "ask"; question: string }
  | { verb: "give-up"; reason: string }
  | { verb: "sleep"; seconds: number }
  | { verb: "exit"; code: number }
  | { verb: "print"; text: string }
  | { verb: "usage"; input: number; output: number; usd: number | null };

interface ParsedDirective {
  /** 1-based line number in the handoff. */
  line: number;
  /** Attempt the directive is limited to, or null for every attempt. */
  attempt: number | null;
  directive: DemoDirective;
}

const DIRECTIVE = /^[ \t]*@demo[ \t]+(.*)$/;
const ITEM_ID = /^[a-z0-9][a-z0-9-]*(?:[._][a-z0-9-]+)*$/;

/** Split off the first whitespace-delimited word; `rest` keeps its inner spacing. */
function word(s: string): { head: string; rest: string } {
  const m = /^[ \t]*(\S+)(?:[ \t]+(.*))?$/.exec(s);
  if (!m) return { head: "", rest: "" };
  return { head: m[1] ?? "", rest: (m[2] ?? "").replace(/[ \t]+$/, "") };
}

/** Decode the \n, \t and \\ escapes of directive text; any other backslash stays as is. */
function decodeText(s: string): string {
  return s.replace(/\\([nt\\])/g, (_m, c: string) => (c === "n" ? "\n" : c === "t" ? "\t" : "\\"));
}

/** A relative path that stays inside the worktree and out of .git, or a reason it does not. */
function checkRelativePath(p: string): string | null {
  if (p === "") return "a path is required";
  if (p.includes("\0")) return "path contains a NUL byte";
  if (isAbsolute(p) || p.startsWith("/") || p.startsWith("\\") || /^[A-Za-z]:/.test(p))
    return `absolute path "${p}" refused (paths are relative to the worktree)`;
  const segments = p.split(/[\\/]+/);
  if (segments.includes("..")) return `path "${p}" refused: ".." is not allowed`;
  const first = segments.find((s) => s !== "" && s !== ".");
  if (first === undefined) return `path "${p}" names no file`;
  if (first === ".git") return `path "${p}" refused: .git is off limits`;
  return null;
}

function parseOne(body: string, line: number): { attempt: number | null; directive: DemoDirective } {
  let { head: verb, rest } = word(body);
  let attempt: number | null = null;
  if (verb === "attempt") {
    const n = word(rest);
    if (!/^[1-9][0-9]*$/.test(n.head)) throw new DemoDirectiveError(line, `"attempt" needs a positive whole number, got "${n.head}"`);
    attempt = Number(n.head);
    ({ head: verb, rest } = word(n.rest));
    if (verb === "attempt") throw new DemoDirectiveError(line, `"attempt" cannot be nested`);
  }
  switch (verb) {
    case "write":
    case "append": {
      const { head: path, rest: text } = word(rest);
      const bad = checkRelativePath(path);
      if (bad) throw new DemoDirectiveError(line, `${verb}: ${bad}`);
      return { attempt, directive: { verb, path, text: decodeText(text) } };
    }
    case "commit":
      if (rest === "") throw new DemoDirectiveError(line, "commit needs a message");
      return { attempt, directive: { verb, message: decodeText(rest) } };
    case "merge":
      if (!/^[A-Za-z0-9][A-Za-z0-9._/-]*$/.test(rest) || rest.includes(".."))
        throw new DemoDirectiveError(line, `merge needs a ref (letters, digits, '.', '_', '/', '-'), got "${rest}"`);
      return { attempt, directive: { verb, ref: rest } };
    case "ask":
      if (rest === "") throw new DemoDirectiveError(line, "ask needs a question");
      return { attempt, directive: { verb, question: decodeText(rest) } };
    case "give-up":
      if (rest === "") throw new DemoDirectiveError(line, "give-up needs a reason");
      return { attempt, directive: { verb, reason: decodeText(rest) } };
    case "sleep": {
      if (!/^[0-9]+(?:\.[0-9]+)?$/.test(rest)) throw new DemoDirectiveError(line, `sleep needs a number of seconds, got "${rest}"`);
      return { attempt, directive: { verb, seconds: Number(rest) } };
    }
    case "exit": {
      if (!/^[0-9]{1,3}$/.test(rest) || Number(rest) > 255) throw new DemoDirectiveError(line, `exit needs a code from 0 to 255, got "${rest}"`);
      return { attempt, directive: { verb, code: Number(rest) } };
    }
    case "print":
      return { attempt, directive: { verb, text: decodeText(rest) } };
    case "usage": {
      const m = /^([0-9]{1,12})[ \t]+([0-9]{1,12})(?:[ \t]+([0-9]{1,9}(?:\.[0-9]{1,6})?))?$/.exec(rest);
      if (!m) throw new DemoDirectiveError(line, `usage needs input and output token counts and optional dollars, got "${rest}"`);
      return { attempt, directive: { verb, input: Number(m[1]), output: Number(m[2]), usd: m[3] === undefined ? null : Number(m[3]) } };
    }
    case "":
      throw new DemoDirectiveError(line, "empty @demo directive");
    default:
      throw new DemoDirectiveError(line, `unknown @demo directive "${verb}"`);
  }
}

/** Every `@demo` line of a handoff, parsed; throws DemoDirectiveError on the first malformed one. */
export function parseDemoDirectives(handoff: string): ParsedDirective[] {
  const out: ParsedDirective[] = [];
  const lines = handoff.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const m = DIRECTIVE.exec(lines[i] ?? "");
    if (!m) continue;
    const { attempt, directive } = parseOne(m[1] ?? "", i + 1);
    out.push({ line: i + 1, attempt, directive });
  }
  return out;
}

interface DemoAgentOptions {
  /** Directory the agent works in (default: process.cwd(), which the loop sets to the worktree). */
  cwd?: string;
  /** Where action lines go (default: stdout). */
  out?: (line: string) => void;
  /** Where error lines go (default: stderr). */
  err?: (line: string) => void;
}

function git(cwd: string, args: string[]): { code: number; stdout: string; stderr: string } {
  const r = Bun.spawnSync(["git", ...args], { cwd, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode ?? 1, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

function gitCommit(cwd: string, message: string): { code: number; output: string } {
  const add = git(cwd, ["add", "-A"]);
  if (add.code !== 0) return { code: add.code, output: add.stderr.trim() };
  // Fall back to a fixed identity only where none is configured, so a bare CI box can still commit.
  const identity: string[] = [];
  if (git(cwd, ["config", "user.name"]).code !== 0) identity.push("-c", "user.name=loop demo agent");
  if (git(cwd, ["config", "user.email"]).code !== 0) identity.push("-c", "user.email=demo-agent@loop.invalid");
  const commit = git(cwd, [...identity, "commit", "-q", "-m", message]);
  return { code: commit.code, output: (commit.stderr + commit.stdout).trim() };
}

/** Merge `ref` into the branch; a conflict is resolved to this branch's side (-X ours), and the merge committed. */
function gitMerge(cwd: string, ref: string): { code: number; output: string } {
  const identity: string[] = [];
  if (git(cwd, ["config", "user.name"]).code !== 0) identity.push("-c", "user.name=loop demo agent");
  if (git(cwd, ["config", "user.email"]).code !== 0) identity.push("-c", "user.email=demo-agent@loop.invalid");
  const r = git(cwd, [...identity, "merge", "--no-edit", "-X", "ours", "-m", `merge ${ref}`, ref]);
  return { code: r.code, output: (r.stderr + r.stdout).trim() };
}

function firstLine(text: string): string {
  for (const line of text.split(/\r?\n/)) if (line.trim() !== "") return line.trim();
  return "";
}

/** Run the demo agent against the LOOP_* environment; resolves to the process exit code. */
export async function runDemoAgent(env: Record<string, string | undefined>, options: DemoAgentOptions = {}): Promise<number> {
  const cwd = options.cwd ?? process.cwd();
  const out = options.out ?? ((line: string) => void process.stdout.write(`${line}\n`));
  const err = options.err ?? ((line: string) => void process.stderr.write(`${line}\n`));
  const fail = (message: string, code = 2): number => {
    err(`demo: error: ${message}`);
    return code;
  };

  const handoffPath = env.LOOP_HANDOFF;
  if (!handoffPath) return fail("LOOP_HANDOFF is not set");
  const attemptText = env.LOOP_ATTEMPT ?? "1";
  if (!/^[1-9][0-9]*$/.test(attemptText)) return fail(`LOOP_ATTEMPT must be a positive whole number, got "${attemptText}"`);
  const attempt = Number(attemptText);
  const item = env.LOOP_ITEM ?? "";

  let handoff: string;
  try {
    handoff = readFileSync(handoffPath, "utf8");
  } catch (e) {
    return fail(`cannot read handoff ${handoffPath}: ${(e as Error).message}`);
  }

  let directives: ParsedDirective[];
  try {
    directives = parseDemoDirectives(handoff);
  } catch (e) {
    return fail((e as Error).message);
  }
  // Reading the handoff "costs" a token per 4 bytes; each directive carried out, 40 more.
  const usage = new DemoUsage(env.LOOP_USAGE_FILE || undefined);
  usage.add(Math.ceil(Buffer.byteLength(handoff) / 4), 0);

  if (directives.length === 0) {
    if (!ITEM_ID.test(item)) return fail(`LOOP_ITEM must be an item id, got "${item}"`);
    const name = `DEMO-${item}.md`;
    const body = `# Demo work for ${item}\n\nattempt: ${attempt}\nprompt: ${firstLine(handoff)}\n`;
    writeFileSync(resolve(cwd, name), body);
    usage.add(0, 40);
    out(`demo: item ${item} attempt ${attempt}: no directives, wrote ${name}`);
    return 0;
  }

  const applicable = directives.filter((d) => d.attempt === null || d.attempt === attempt);
  out(`demo: item ${item} attempt ${attempt}: ${applicable.length} of ${directives.length} directive(s) apply`);

  for (const { line, directive: d } of applicable) {
    if (d.verb !== "usage") usage.add(0, 40);
    switch (d.verb) {
      case "write":
      case "append": {
        const target = resolve(cwd, d.path);
        const data = d.text === "" ? "" : `${d.text}\n`;
        try {
          mkdirSync(dirname(target), { recursive: true });
          if (d.verb === "write") writeFileSync(target, data);
          else appendFileSync(target, data);
        } catch (e) {
          return fail(`line ${line}: ${d.verb} ${d.path}: ${(e as Error).message}`, 1);
        }
        out(`demo: ${d.verb} ${d.path} (${Buffer.byteLength(data)} bytes)`);
        break;
      }
      case "commit": {
        const r = gitCommit(cwd, d.message);
        if (r.code !== 0) return fail(`line ${line}: commit failed (git exit ${r.code}): ${r.output}`, 1);
        out(`demo: commit ${JSON.stringify(d.message)}`);
        break;
      }
      case "merge": {
        const r = gitMerge(cwd, d.ref);
        if (r.code !== 0) return fail(`line ${line}: merge ${d.ref} failed (git exit ${r.code}): ${r.output}`, 1);
        out(`demo: merge ${d.ref}`);
        break;
      }
      case "ask": {
        const askFile = env.LOOP_ASK_FILE;
        if (!askFile) return fail(`line ${line}: ask: LOOP_ASK_FILE is not set`);
        try {
          writeFileSync(resolve(cwd, askFile), `${d.question}\n`);
        } catch (e) {
          return fail(`line ${line}: ask: cannot write ${askFile}: ${(e as Error).message}`, 1);
        }
        out(`demo: ask ${JSON.stringify(d.question)} (stopping for input)`);
        return 0;
      }
      case "give-up": {
        const file = env.LOOP_GIVE_UP_FILE;
        if (!file) return fail(`line ${line}: give-up: LOOP_GIVE_UP_FILE is not set`);
        try {
          writeFileSync(resolve(cwd, file), `${d.reason}\n`);
        } catch (e) {
          return fail(`line ${line}: give-up: cannot write ${file}: ${(e as Error).message}`, 1);
        }
        out(`demo: give-up ${JSON.stringify(d.reason)} (stopping)`);
        return 0;
      }
      case "sleep":
        out(`demo: sleep ${d.seconds}s`);
        await Bun.sleep(d.seconds * 1000);
        break;
      case "exit":
        out(`demo: exit ${d.code}`);
        return d.code;
      case "print":
        out(d.text);
        break;
      case "usage":
        usage.add(d.input, d.output, d.usd);
        out(`demo: usage +${d.input} input, +${d.output} output tokens${d.usd === null ? "" : `, +$${d.usd}`}`);
        break;
    }
  }
  out("demo: done");
  return 0;
}
