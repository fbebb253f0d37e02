// Shared command-line plumbing: argument fragments, strict parsing, output format, exit codes and
// error rendering. Commands declare their args once; citty renders --help from the same
// declaration. Parsing uses `arg`, which is strict (an unknown flag is an error) and collects every
// value of a repeated flag; citty's parser does neither, and node:util's parseArgs, which does
// both, costs every tool ~4 ms of start-up to load (bench/startup-probes.ts).
import arg from "arg";
import { existsSync, statSync, writeSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import type { ArgsDef } from "citty";
import { createConsola, type ConsolaInstance } from "consola/core";
import { DefinitionError, EXIT, type ErrorCode, LoopError, UsageError } from "./errors.ts";
import { VERSION } from "./version.ts";
import { printable, printableLines } from "./printable.ts";

type ArgSpec =
  | { type: "string"; description: string; valueHint?: string; multiple?: boolean; short?: string }
  | { type: "boolean"; description: string; short?: string }
  | { type: "positional"; description: string; valueHint?: string; required?: boolean; variadic?: boolean };
export type ArgsSpec = Record<string, ArgSpec>;

/** Fragments shared by every tool (docs/cli/README.md#common-flags). */
export const commonArgs = {
  root: { type: "string", description: "project root (default: nearest ancestor holding loop.json, else the cwd)", valueHint: "dir" },
  "state-root": { type: "string", description: "state root (default: $LOOP_STATE_ROOT, else <root>/.loop)", valueHint: "dir" },
  json: { type: "boolean", description: "print one JSON document (default when stdout is not a TTY)" },
  text: { type: "boolean", description: "print text for people (default on a TTY)" },
  quiet: { type: "boolean", description: "print only warnings and errors on stderr", short: "q" },
  verbose: { type: "boolean", description: "print debug diagnostics on stderr", short: "v" },
  help: { type: "boolean", description: "show this help and exit", short: "h" },
  version: { type: "boolean", description: "print the version and exit (with --json: also the commit and build target)" },
} as const satisfies ArgsSpec;

export const workItemArg = {
  "work-item": {
    type: "string",
    multiple: true,
    description: "a work item, by id or forge ref (provider:owner/repo#N); repeatable",
    valueHint: "ref|id",
  },
} as const satisfies ArgsSpec;

export const confirmArgs = {
  yes: { type: "boolean", description: "do it without asking (required when stdin is not a TTY)", short: "y" },
  "dry-run": { type: "boolean", description: "show what would happen and change nothing" },
} as const satisfies ArgsSpec;

type Parsed<S extends ArgsSpec> = {
  [K in keyof S]: S[K] extends { type: "boolean" }
    ? boolean
    : S[K] extends { type: "string"; multiple: true }
      ? string[]
      : S[K] extends { type: "positional"; variadic: true }
        ? string[]
        : string | undefined;
};

export function parseArgv<S extends ArgsSpec>(argv: string[], spec: S): Parsed<S> {
  const argSpec: arg.Spec = {};
  const positionals: [string, ArgSpec & { type: "positional" }][] = [];
  for (const [name, a] of Object.entries(spec)) {
    if (a.type === "positional") {
      positionals.push([name, a]);
      continue;
    }
    // Every string flag is collected, so a single-value flag given twice is seen and refused below.
    argSpec[`--${name}`] = a.type === "boolean" ? Boolean : [String];
    if (a.short) argSpec[`-${a.short}`] = `--${name}`;
  }
  // arg drops a value given to a boolean flag (`--json=yes`); the contract makes it a usage error.
  for (const a of argv) {
    if (a === "--") break;
    const m = /^--([^=]+)=/.exec(a);
    if (m && argSpec[`--${m[1]}`] === Boolean) throw new UsageError(`option --${m[1]} does not take a value`);
  }
  let parsed: arg.Result<arg.Spec>;
  try {
    parsed = arg(argSpec, { argv });
  } catch (err) {
    // arg takes a value that starts with "-" for the next option: say how to pass such a value.
    const flag = /^option requires argument: (--?[\w-]+)$/.exec((err as Error).message)?.[1];
    const next = flag ? argv[argv.indexOf(flag) + 1] : undefined;
    if (flag && next?.startsWith("-")) throw new UsageError(`${flag} needs a value; to pass ${JSON.stringify(next)} as its value, write ${flag}=${next}`);
    throw new UsageError((err as Error).message);
  }
  const out: Record<string, unknown> = {};
  for (const [name, a] of Object.entries(spec)) {
    if (a.type === "boolean") out[name] = parsed[`--${name}`] === true;
    else if (a.type === "string") {
      const v = (parsed[`--${name}`] as string[] | undefined) ?? [];
      if (v.includes("")) throw new UsageError(`--${name} needs a non-empty value`);
      // A second value would silently replace the first (an operator's reason, a root): refuse it.
      if (!a.multiple && v.length > 1) throw new UsageError(`--${name} was given ${v.length} times; give it once`);
      out[name] = a.multiple ? v : v[0];
    }
  }
  const rest = [...parsed._];
  // `--help` and `--version` answer even when a required argument is missing (`loop ctl --help`).
  const infoOnly = parsed["--help"] === true || parsed["--version"] === true;
  for (const [name, a] of positionals) {
    if (a.variadic) out[name] = rest.splice(0);
    else out[name] = rest.shift();
    if (a.required && !infoOnly && (out[name] === undefined || (Array.isArray(out[name]) && (out[name] as string[]).length === 0)))
      throw new UsageError(`missing required argument <${name}>`);
  }
  if (rest.length) throw new UsageError(`unexpected argument "${rest[0]}"`);
  return out as Parsed<S>;
}

// ---------------------------------------------------------------------------------------------

type Format = "json" | "text";

interface Context {
  format: Format;
  color: boolean;
  log: ConsolaInstance;
  /** Write the command's result to stdout (results only; diagnostics go to log). */
  out(text: string): void;
  /** Write a JSON result document. */
  outJson(doc: unknown): void;
  /**
   * Write bytes to stdout as they are (no newline added) and wait until they are written: a tool
   * that streams (`loop logs --follow`) keeps pace with its reader. False once the reader is gone
   * (EPIPE: `loop logs x | head`) or a write failed, so the tool can stop.
   */
  outRaw(data: string | Uint8Array): Promise<boolean>;
  stdinIsTTY: boolean;
  /** stdout is a terminal (whatever format was chosen): text from outside is then escaped (printable). */
  stdoutIsTTY: boolean;
  cwd: string;
  env: Record<string, string | undefined>;
}

export interface Tool<S extends ArgsSpec = ArgsSpec> {
  name: string;
  description: string;
  args: S;
  /** Two or three commands and what each does, first in --help (clig.dev: people read examples first). */
  examples: readonly (readonly [command: string, what: string])[];
  /** Extra help text printed after the options (exit codes, notes). */
  footer?: string;
  run(args: Parsed<S> & Parsed<typeof commonArgs>, ctx: Context): Promise<number> | number;
}

/** A tool's own args, then the common ones; a tool may redefine a common arg (e.g. its help text). */
export function allArgs(tool: Tool): ArgsSpec {
  return { ...tool.args, ...Object.fromEntries(Object.entries(commonArgs).filter(([k]) => !(k in tool.args))) };
}

export function defineTool<S extends ArgsSpec>(tool: Tool<S>): Tool<S> {
  return tool;
}

const ANSI = /\x1b\[[0-9;]*m/g;

/** Colour only on a terminal, and not when NO_COLOR is set to something (no-color.org: an empty value does not count). */
function wantColor(stream: { isTTY?: boolean }, env: Record<string, string | undefined>): boolean {
  return Boolean(stream.isTTY) && !env.NO_COLOR && env.TERM !== "dumb";
}

/** `prog`: the name the tool was invoked as (`loop run`, `loop-run`), shown in the usage line. */
export async function renderHelp(tool: Tool, color: boolean, prog: string = tool.name): Promise<string> {
  const argsDef: ArgsDef = {};
  for (const [name, a] of Object.entries(allArgs(tool)) as [string, ArgSpec][]) {
    if (a.type === "positional") argsDef[name] = { type: "positional", description: a.description, required: a.required ?? false, valueHint: a.valueHint };
    else if (a.type === "string")
      argsDef[name] = { type: "string", description: a.description, valueHint: a.valueHint, ...(a.short ? { alias: a.short } : {}) };
    else argsDef[name] = { type: "boolean", description: a.description, ...(a.short ? { alias: a.short } : {}) };
  }
  const { renderUsage } = await import("citty"); // only --help needs it
  let text = await renderUsage({ meta: { name: prog, version: VERSION, description: tool.description }, args: argsDef });
  // The examples first, right under the usage line; then the options.
  const examples = `EXAMPLES\n\n${tool.examples.map(([c, what]) => `  ${c}\n      ${what}`).join("\n")}\n\n`;
  const at = text.search(/^\S*OPTIONS/m);
  text = at >= 0 ? text.slice(0, at) + examples + text.slice(at) : text + "\n" + examples;
  if (tool.footer) text += `\n\n${tool.footer.trim()}\n`;
  if (!color) text = text.replace(ANSI, "");
  // citty pads the option table to the terminal's width: no line ends in blanks.
  text = text.replace(/[ \t]+$/gm, "");
  return text.endsWith("\n") ? text : text + "\n";
}

/**
 * Find the project root: --root, else the nearest ancestor of cwd holding loop.json, else cwd. A
 * --root that is not a directory is the flag's fault, said as such (not a missing loop.json in it).
 */
export function resolveRoot(rootFlag: string | undefined, cwd: string): string {
  if (rootFlag) return requireRootDirectory(resolve(cwd, rootFlag));
  let dir = resolve(cwd);
  for (;;) {
    if (existsSync(join(dir, "loop.json"))) return dir;
    const up = dirname(dir);
    if (up === dir) return resolve(cwd);
    dir = up;
  }
}

/** A --root given on the command line: an existing directory, else a usage error naming the flag. */
export function requireRootDirectory(dir: string): string {
  const st = statSync(dir, { throwIfNoEntry: false });
  if (!st) throw new UsageError(`--root ${dir}: no such directory`);
  if (!st.isDirectory()) throw new UsageError(`--root ${dir}: not a directory`);
  return dir;
}

/** The state root: --state-root (`flag`), else $LOOP_STATE_ROOT, else <root>/.loop; relative paths against `cwd`. */
export function resolveStateRoot({
  root,
  flag,
  env,
  cwd,
}: {
  root: string;
  flag: string | undefined;
  env: Record<string, string | undefined>;
  cwd: string;
}): string {
  if (flag) return resolve(cwd, flag);
  if (env.LOOP_STATE_ROOT) return resolve(cwd, env.LOOP_STATE_ROOT);
  return join(root, ".loop");
}

/** Error -> (exit code, one-line code for JSON consumers): loop's own errors carry both (errors.ts). */
export function classifyError(err: unknown): { exit: number; code: ErrorCode; message: string } {
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof LoopError) return { exit: err.exit, code: err.code, message };
  // A system call that failed on something of the environment (a file where a directory should be,
  // a full disk, no permission): the system's own message names the call, the error and the path.
  const sys = err as NodeJS.ErrnoException;
  if (typeof sys?.code === "string" && /^E[A-Z]+$/.test(sys.code) && typeof sys.syscall === "string") return { exit: EXIT.problem, code: "io_error", message };
  // Anything else is a bug in loop: never reclassified by its message.
  return { exit: EXIT.internal, code: "internal", message };
}

/** Where a tool writes. The defaults write through Bun.write: touching process.stdout/stderr costs
 * a compiled binary ~20 ms at start-up, and isatty is asked only when the format must be guessed. */
export interface OutStream {
  write(s: string | Uint8Array): unknown;
  readonly isTTY?: boolean;
  /** Resolves once everything written so far is written; false when the reader went away or a write failed. */
  drained?(): Promise<boolean>;
}

/**
 * Write a document to stdout synchronously: for a large one (`loop status` on a loop of 500 items
 * prints ~0.3 MB) Bun.write's asynchronous copy costs a cold process 2-3 ms more (bench/README.md).
 * Whatever the descriptor does not take at once (EAGAIN on a non-blocking pipe, a short write)
 * goes to `rest`. Only stdout, which a command writes once it is done: stderr carries warnings
 * written mid-step, which must not wait on a stalled reader while the step holds the lease.
 */
export function writeWhole(
  fd: number,
  s: string | Uint8Array,
  rest: (data: string | Uint8Array) => unknown,
  write: (fd: number, s: string | Uint8Array) => number = (fd, s) => (typeof s === "string" ? writeSync(fd, s) : writeSync(fd, s)),
): unknown {
  let written: number;
  try {
    written = write(fd, s);
  } catch (err) {
    if ((err as { code?: string }).code !== "EAGAIN") throw err;
    return rest(s);
  }
  const total = Buffer.byteLength(s);
  return written < total ? rest(Buffer.from(s).subarray(written)) : written;
}

class FdStream implements OutStream {
  private pending: Promise<unknown> = Promise.resolve();
  private tty: boolean | undefined;
  private readerGone = false;
  /** The first failure to write (a full disk): reported at once, later writes dropped, flush() throws it. */
  private failed: unknown = null;
  constructor(
    private readonly fd: 1 | 2,
    private readonly target: typeof Bun.stdout,
    private readonly onFail: (err: unknown) => void = () => {},
  ) {}
  write(s: string | Uint8Array) {
    this.pending = this.pending
      .then(() =>
        this.readerGone || this.failed ? 0 : this.fd === 1 ? writeWhole(this.fd, s, (rest) => Bun.write(this.target, rest)) : Bun.write(this.target, s),
      )
      .catch((err: { code?: string }) => {
        // The reader went away (`loop status | head -1`): the rest has nobody to read it, which is
        // not the tool's failure; its exit code still says how the command went.
        if (err?.code === "EPIPE") this.readerGone = true;
        // Anything else is said at once (a watcher must not go on silently) and kept for flush(),
        // never left as an unhandled rejection per write.
        else if (this.failed === null) {
          this.failed = err;
          try {
            this.onFail(err);
          } catch {
            // stderr is failing too: nowhere left to say it; the exit code still will.
          }
        }
        return 0;
      });
    return true;
  }
  get isTTY(): boolean {
    return (this.tty ??= require("node:tty").isatty(this.fd));
  }
  async drained(): Promise<boolean> {
    await this.pending;
    return !this.readerGone && this.failed === null;
  }
  async flush(): Promise<unknown> {
    await this.pending;
    if (this.failed) throw this.failed;
    return 0;
  }
}

interface RunOptions {
  argv: string[];
  stdout?: OutStream;
  stderr?: OutStream;
  stdinIsTTY?: boolean;
  env?: Record<string, string | undefined>;
  cwd?: string;
  /** The name the tool was invoked as (`loop run`, `loop-run`), for help and messages; default tool.name. */
  prog?: string;
}

/**
 * The format a command line asks for, read before (or without) parsing it, so that a usage error
 * is reported in the format every other error of the command would be: JSON whenever --json is
 * given (even beside --text, which is that usage error), text with --text, else JSON when stdout
 * is not a terminal.
 */
export function requestedFormat(argv: string[], stdout: { isTTY?: boolean }): Format {
  const end = argv.indexOf("--");
  const flags = end < 0 ? argv : argv.slice(0, end);
  if (flags.includes("--json")) return "json";
  if (flags.includes("--text")) return "text";
  return stdout.isTTY ? "text" : "json";
}

/**
 * A JSON error document, one line: C1 control characters are escaped too (JSON leaves them raw, a
 * terminal obeys them). `stack`: an internal error's, under --verbose.
 */
export function errorLine(code: string, message: string, stack?: string): string {
  return (
    JSON.stringify({ error: { code, message, ...(stack !== undefined ? { stack } : {}) } }).replace(
      /[\u007f-\u009f\u2028\u2029]/g,
      (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
    ) + "\n"
  );
}

function makeLogger(stderr: OutStream, color: () => boolean): ConsolaInstance {
  const paint = (code: number, s: string) => (color() ? `\x1b[${code}m${s}\x1b[39m` : s);
  return createConsola({
    level: 3,
    reporters: [
      {
        log(o) {
          const text = o.args.map((a) => (a instanceof Error ? a.message : typeof a === "string" ? a : JSON.stringify(a))).join(" ");
          const tag = o.level <= 0 ? paint(31, "error") : o.level === 1 ? paint(33, "warn") : o.level >= 4 ? "debug" : "";
          stderr.write(`${tag ? `${tag}: ` : ""}${printableLines(text)}\n`);
        },
      },
    ],
  });
}

/** Run a tool to completion and return its exit code; never throws for user errors. */
export async function runTool(tool: Tool, opts: RunOptions): Promise<number> {
  const env = opts.env ?? process.env;
  // stdout failing (ENOSPC, EIO) is one line on stderr, when it happens; the exit code says it too.
  const prog = opts.prog ?? tool.name;
  const out = opts.stdout
    ? null
    : new FdStream(1, Bun.stdout, (err) => writeSync(2, `${prog}: cannot write the results to stdout: ${(err as Error).message}\n`));
  const errOut = opts.stderr ? null : new FdStream(2, Bun.stderr);
  const stdout: OutStream = opts.stdout ?? out!;
  const stderr: OutStream = opts.stderr ?? errOut!;
  let code: number = EXIT.problem;
  try {
    code = await runParsed(tool, { ...opts, prog }, env, stdout, stderr);
  } finally {
    try {
      await out?.flush();
    } catch {
      // Already said on stderr (onFail above): the results did not arrive.
      if (code === EXIT.ok) code = EXIT.problem;
    }
    // Nowhere left to report a failure to write stderr itself.
    await errOut?.flush().catch(() => {});
  }
  return code;
}

async function runParsed(
  tool: Tool,
  opts: RunOptions & { prog: string },
  env: Record<string, string | undefined>,
  stdout: OutStream,
  stderr: OutStream,
): Promise<number> {
  const prog = opts.prog;
  const log = makeLogger(stderr, () => wantColor(stderr, env));
  // A usage error is reported like any other error of the command: JSON when its output is JSON.
  const usageError = (message: string): number => {
    if (requestedFormat(opts.argv, stdout) === "json") stderr.write(errorLine("usage", message));
    else stderr.write(`${prog}: ${printable(message)}\nRun \`${prog} --help\` for usage.\n`);
    return EXIT.usage;
  };
  let args: Record<string, unknown>;
  try {
    args = parseArgv(opts.argv, allArgs(tool));
  } catch (err) {
    return usageError(classifyError(err).message);
  }
  if (args.help) {
    stdout.write(await renderHelp(tool, wantColor(stdout, env), prog));
    return EXIT.ok;
  }
  if (args.json && args.text) return usageError("--json and --text exclude each other");
  if (args.version) {
    // Plain text unless --json is given: the default format (JSON when piped) does not apply, so
    // `loop-status --version | …` stays the bare version scripts compare against.
    if (!args.json) stdout.write(`${VERSION}\n`);
    else stdout.write(JSON.stringify((await import("./build-info.ts")).currentVersionDocument()) + "\n");
    return EXIT.ok;
  }
  if (args.quiet) log.level = 1;
  if (args.verbose) log.level = 4;
  const format: Format = args.json ? "json" : args.text ? "text" : stdout.isTTY ? "text" : "json";
  let stdinTTY = opts.stdinIsTTY;
  const ctx: Context = {
    format,
    get color() {
      return format === "text" && wantColor(stdout, env);
    },
    log,
    out: (text) => void stdout.write(text.endsWith("\n") ? text : text + "\n"),
    // One line per document: cheaper to print and to parse, and `loop run --watch` prints JSON Lines.
    outJson: (doc) => void stdout.write(JSON.stringify(doc) + "\n"),
    outRaw: async (data) => {
      stdout.write(data);
      return stdout.drained ? stdout.drained() : true;
    },
    get stdinIsTTY() {
      return (stdinTTY ??= require("node:tty").isatty(0));
    },
    get stdoutIsTTY() {
      return Boolean(stdout.isTTY);
    },
    cwd: opts.cwd ?? process.cwd(),
    env,
  };
  try {
    return await tool.run(args as never, ctx);
  } catch (err) {
    const c = classifyError(err);
    // A bug in loop shows where it happened under --verbose, in either format (cron's is JSON).
    const stack = c.code === "internal" && args.verbose && err instanceof Error && err.stack ? err.stack : undefined;
    if (format === "json") {
      stderr.write(errorLine(c.code, c.message, stack));
    } else if (c.code === "internal") {
      stderr.write(`${prog}: internal error: ${printable(c.message)}\n`);
      if (stack) stderr.write(printableLines(stack) + "\n");
    } else {
      // One line, whatever was typed into it; only loop.json's list of problems is several lines,
      // each escaped on its own.
      stderr.write(`${prog}: ${err instanceof DefinitionError ? err.lines().map(printable).join("\n") : printable(c.message)}\n`);
      // A usage error a tool finds reads like one the parser finds (docs/cli/README.md#errors).
      if (c.code === "usage") stderr.write(`Run \`${prog} --help\` for usage.\n`);
    }
    return c.exit;
  }
}

/** Entry for a single-file command script: run, set the exit code, let stdout drain. */
export async function main(tool: Tool, argv = process.argv.slice(2), prog?: string): Promise<void> {
  const code = await runTool(tool, { argv, prog });
  process.exitCode = code;
}
