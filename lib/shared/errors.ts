// Every error loop throws on purpose, each carrying the exit code and the error code (of the JSON
// error document) that it ends a tool with: `classifyError` (lib/shared/cli.ts) reads them off the
// error, so a new class cannot be forgotten in a separate mapping. docs/errors.md lists the codes;
// a class's code is one of ERROR_CODES (the compiler holds it), and tests/shared/errors.test.ts
// holds that list and every class here to the page. The module has no imports: every tool loads it at start-up, so it must
// not pull in the modules that throw its errors (the definition's schemas, git, the store). Those
// modules re-export their error.

/** The exit codes of every tool (docs/errors.md). `internal`: a bug in loop (EX_SOFTWARE), never a user's mistake. */
export const EXIT = { ok: 0, problem: 1, usage: 2, declined: 3, internal: 70, busy: 75, interrupted: 130 } as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/**
 * Every `code` a tool's JSON error document can carry (docs/errors.md lists each with its exit): an
 * error class can only take one of these, so the compiler holds the code to the documented list.
 * `io_error` and `internal` are also what classifyError (lib/shared/cli.ts) gives any other error.
 */
export const ERROR_CODES = [
  "usage",
  "invalid_ref",
  "unknown_item",
  "invalid_definition",
  "missing_store",
  "store_missing",
  "corrupt_store",
  "foreign_store",
  "outdated_store",
  "store_locked",
  "interrupted",
  "declined",
  "busy",
  "refused",
  "git_error",
  "illegal_event_sequence",
  "invalid_event",
  "duplicate_event",
  "seq_conflict",
  "planner_failed",
  "forge_failed",
  "io_error",
  "internal",
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

/** An error that ends a tool with its own exit code and error code. */
export abstract class LoopError extends Error {
  /** The `code` of the JSON error document `{"error":{"code","message"}}` (docs/errors.md). */
  abstract readonly code: ErrorCode;
  abstract readonly exit: ExitCode;
}

/** A bad command line: unknown flag, missing value, verbs misused. */
export class UsageError extends LoopError {
  override name = "UsageError";
  readonly code = "usage";
  readonly exit = EXIT.usage;
}

/** The user answered No at a confirmation prompt. */
export class DeclinedError extends LoopError {
  override name = "DeclinedError";
  readonly code = "declined";
  readonly exit = EXIT.declined;
}

/** Another step holds the lease: nothing was done, try later. */
export class BusyError extends LoopError {
  override name = "BusyError";
  readonly code = "busy";
  readonly exit = EXIT.busy;
}

/** Who holds a lease (lib/log/store.ts's Lease, which this module cannot import). */
interface LeaseHolder {
  owner?: string;
  pid: number;
  host: string;
  started: string;
}

/** The tag of a chained step's lease (lib/log/lease.ts newLease): `chained:<uuid>`. */
export const CHAINED_TAG = "chained";

/** `loop run` found the lease held by another step (lib/step/step.ts). */
export class BusyLease extends BusyError {
  override name = "BusyLease";
  /** The holder is a chained step (docs/cli/loop-run.md#chained-steps), which ends on its own. */
  readonly chained: boolean;
  constructor(readonly holder: LeaseHolder) {
    const chained = holder.owner?.startsWith(`${CHAINED_TAG}:`) ?? false;
    super(
      chained
        ? `a chained step holds the lease (pid ${holder.pid} on ${holder.host} since ${holder.started}: the step an agent's or a verify's end starts, docs/cli/loop-run.md#chained-steps); it ends on its own, try again in a moment`
        : `another step holds the lease (pid ${holder.pid} on ${holder.host} since ${holder.started}); try later`,
    );
    this.chained = chained;
  }
}

/**
 * A step's lease was taken over while it ran (it outlived the lease, and another `loop run` found it
 * expired): from then on the step may not write, so its next append or renewal throws this.
 */
export class LeaseLostError extends BusyError {
  override name = "LeaseLostError";
}

/** The command is well-formed but what it asks for cannot be done to the loop as it is. */
export class RefusedError extends LoopError {
  override name = "RefusedError";
  readonly code = "refused";
  readonly exit = EXIT.problem;
}

/** A work-item ref or id that does not parse (lib/definition/refs.ts). */
export class RefError extends LoopError {
  override name = "RefError";
  readonly code = "invalid_ref";
  readonly exit = EXIT.usage;
  constructor(
    message: string,
    readonly input: string,
  ) {
    super(message);
  }
}

/** A --work-item value that names no item of the loop (lib/definition/selectors.ts). */
export class UnknownItemError extends LoopError {
  override name = "UnknownItemError";
  readonly code = "unknown_item";
  readonly exit = EXIT.usage;
}

export interface DefinitionIssue {
  /** `items[3].dependsOn[0]`; "" for the file as a whole. */
  path: string;
  message: string;
}

/** loop.json is invalid: every problem, each with its JSON path (lib/definition/normalize.ts). */
export class DefinitionError extends LoopError {
  override name = "DefinitionError";
  readonly code = "invalid_definition";
  readonly exit = EXIT.usage;
  constructor(
    readonly issues: DefinitionIssue[],
    readonly file: string,
  ) {
    super(definitionLines(issues, file).join("\n"));
  }
  /** One line per problem (a message may quote a path or a value: print each line escaped). */
  lines(): string[] {
    return definitionLines(this.issues, this.file);
  }
}

function definitionLines(issues: DefinitionIssue[], file: string): string[] {
  return issues.map((i) => (i.path ? `${file}: ${i.path}: ${i.message}` : `${file}: ${i.message}`));
}

export type StoreErrorCode = Extract<
  ErrorCode,
  | "missing_store"
  | "store_missing"
  | "corrupt_store"
  | "outdated_store"
  | "foreign_store"
  | "io_error"
  | "store_locked"
  | "invalid_event"
  | "duplicate_event"
  | "seq_conflict"
>;

/** The store cannot be used (exit 2: nothing was attempted), or refused an append (exit 1) (lib/log/store.ts). */
export class StoreError extends LoopError {
  override name = "StoreError";
  readonly exit: ExitCode;
  constructor(
    readonly code: StoreErrorCode,
    message: string,
  ) {
    super(message);
    this.exit =
      code === "missing_store" || code === "store_missing" || code === "corrupt_store" || code === "outdated_store" || code === "foreign_store"
        ? EXIT.usage
        : EXIT.problem;
  }
}

/** An event the reducer rejects: names the event's seq and the rule broken (lib/log/reducer.ts). */
export class IllegalEventError extends LoopError {
  override name = "IllegalEventError";
  readonly code = "illegal_event_sequence";
  readonly exit = EXIT.problem;
  constructor(
    readonly seq: number,
    readonly rule: string,
    detail: string,
  ) {
    super(`seq ${seq}: ${rule}: ${detail}`);
  }
}

/** A git command failed, with git's own stderr (lib/repo/git.ts). */
export class GitError extends LoopError {
  override name = "GitError";
  readonly code = "git_error";
  readonly exit = EXIT.problem;
  constructor(
    readonly args: string[],
    /** git's exit status; null when it was killed by a signal. */
    readonly gitExit: number | null,
    readonly stderr: string,
  ) {
    super(`git ${withoutConfig(args).join(" ")} failed (exit ${gitExit}): ${gitReason(stderr)}`);
  }
}

/** The command as people know it: the `-c key=value` pairs loop puts first are its own, not the command's. */
function withoutConfig(args: string[]): string[] {
  let i = 0;
  while (args[i] === "-c" && i + 1 < args.length) i += 2;
  return args.slice(i);
}

/** What git said went wrong: its fatal/error lines when it printed any (hints follow them), else its last lines. */
function gitReason(stderr: string): string {
  const lines = stderr.trim().split("\n");
  const errors = lines.filter((l) => /^(fatal|error):/.test(l));
  return (errors.length ? errors : lines.slice(-3)).join(" / ");
}

// The errors below are translated by the caller of the module that throws them (a syntax error in
// loop.json becomes a DefinitionError that names the file), or mean a bug in loop itself. One that
// reaches a tool untranslated is loop's fault: `internal`, exit 70, its stack printed with --verbose.

/** A syntax error, with its message already saying `invalid JSON at line L, column C: ...` (lib/definition/json-strict.ts). */
export class JsonSyntaxError extends LoopError {
  override name = "JsonSyntaxError";
  readonly code = "internal";
  readonly exit = EXIT.internal;
  constructor(
    message: string,
    /** 1-based. */
    readonly line: number,
    /** 1-based, in UTF-16 code units. */
    readonly column: number,
  ) {
    super(message);
  }
}

/** A value with no single canonical JSON form, at a path (lib/log/canonical.ts); the store refuses such an event as `invalid_event`. */
export class CanonicalJsonError extends LoopError {
  override name = "CanonicalJsonError";
  readonly code = "internal";
  readonly exit = EXIT.internal;
  constructor(
    message: string,
    readonly path: string,
  ) {
    super(`${path || "<root>"}: ${message}`);
  }
}

/** A valibot construct the allocation-free checker cannot compile (lib/log/schema-check.ts): a bug in the event schemas. */
export class UnsupportedSchemaError extends LoopError {
  override name = "UnsupportedSchemaError";
  readonly code = "internal";
  readonly exit = EXIT.internal;
}

/** A malformed `@demo` line in a handoff (lib/supervisor/demo-agent.ts); the demo agent prints it and exits 2. */
export class DemoDirectiveError extends LoopError {
  override name = "DemoDirectiveError";
  readonly code = "internal";
  readonly exit = EXIT.internal;
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(`handoff line ${line}: ${message}`);
  }
}

/**
 * A session's or a verify's process could not be started: loop's wrapper, a tmux session, its
 * systemd scope, the worktree its sandbox mounts (lib/supervisor/). The phase that started it
 * translates it (a launch: an environment fault; a verify: a verify that could not run).
 */
export class StartError extends LoopError {
  override name = "StartError";
  readonly code = "internal";
  readonly exit = EXIT.internal;
}

/**
 * An environment fault (docs/cli/loop-run.md#environment-faults) met where it arises, inside an
 * effect (a program the runner names missing in the worktree, the start point gone, a link where the
 * session folder goes): thrown, and recorded by the launch as the fault it carries
 * (lib/decisions/faults.ts words the fault and gives it its kind). One that reaches a tool
 * untranslated is a bug.
 */
export class FaultError<F extends { kind: string; message: string; fix: string } = { kind: string; message: string; fix: string }> extends LoopError {
  override name = "FaultError";
  readonly code = "internal";
  readonly exit = EXIT.internal;
  constructor(readonly fault: F) {
    super(fault.message);
  }
}

/** The user interrupted the command (Ctrl-C at a prompt): exit 130, like a shell's SIGINT. */
export class InterruptedError extends LoopError {
  override name = "InterruptedError";
  readonly code = "interrupted";
  readonly exit = EXIT.interrupted;
}

/**
 * The planner of `loop plan` gave nothing usable: its program failed or could not be started, its
 * answer was truncated or not JSON, or still malformed after the one retry, or the brief was
 * undraftable (lib/planner/). Nothing was written.
 */
export class PlannerError extends LoopError {
  override name = "PlannerError";
  readonly code = "planner_failed";
  readonly exit = EXIT.problem;
}

/**
 * A command that needs the forge (`loop plan --issues`, `loop add --from-issues`) got no usable
 * answer: no connection, a refusal, a rate limit. Nothing was written (docs/forge.md).
 */
export class ForgeError extends LoopError {
  override name = "ForgeError";
  readonly code = "forge_failed";
  readonly exit = EXIT.problem;
}
