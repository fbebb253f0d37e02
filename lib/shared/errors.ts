// The errors a user can cause, in one module with no imports: `classifyError` (lib/shared/cli.ts) maps
// them to exit codes, and every tool loads this at start-up, so it must not pull in the modules
// that throw them (the definition's schemas, git, the store). Those modules re-export their error.

/** A bad command line: unknown flag, missing value, verbs misused. */
export class UsageError extends Error {
  override name = "UsageError";
}

/** The user answered No at a confirmation prompt. */
export class DeclinedError extends Error {
  override name = "DeclinedError";
}

/** Another step holds the lease: nothing was done, try later (exit 75). */
export class BusyError extends Error {
  override name = "BusyError";
}

/**
 * A step's lease was taken over while it ran (it outlived the lease, and another `loop run` found it
 * expired): from then on the step may not write, so its next append or renewal throws this.
 */
export class LeaseLostError extends BusyError {
  override name = "LeaseLostError";
}

/** The command is well-formed but what it asks for cannot be done to the loop as it is (exit 1). */
export class RefusedError extends Error {
  override name = "RefusedError";
}

/** A work-item ref or id that does not parse (lib/definition/refs.ts). */
export class RefError extends Error {
  override name = "RefError";
  constructor(
    message: string,
    readonly input: string,
  ) {
    super(message);
  }
}

/** A --work-item value that names no item of the loop (lib/definition/selectors.ts). */
export class UnknownItemError extends Error {
  override name = "UnknownItemError";
}

export interface DefinitionIssue {
  /** `items[3].dependsOn[0]`; "" for the file as a whole. */
  path: string;
  message: string;
}

/** loop.json is invalid: every problem, each with its JSON path (lib/definition/loop-json.ts). */
export class DefinitionError extends Error {
  override name = "DefinitionError";
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

export type StoreErrorCode =
  | "missing_store"
  | "corrupt_store"
  | "outdated_store"
  | "foreign_store"
  | "io_error"
  | "invalid_event"
  | "duplicate_event"
  | "seq_conflict";

/** The store cannot be used, or refused an append (lib/log/store.ts). */
export class StoreError extends Error {
  override name = "StoreError";
  constructor(
    readonly code: StoreErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** An event the reducer rejects: names the event's seq and the rule broken (lib/log/reducer.ts). */
export class IllegalEventError extends Error {
  override name = "IllegalEventError";
  constructor(
    readonly seq: number,
    readonly rule: string,
    detail: string,
  ) {
    super(`seq ${seq}: ${rule}: ${detail}`);
  }
}

/** A git command failed, with git's own stderr (lib/step/git.ts). */
export class GitError extends Error {
  override name = "GitError";
  constructor(
    readonly args: string[],
    readonly code: number | null,
    readonly stderr: string,
  ) {
    super(`git ${args.join(" ")} failed (exit ${code}): ${gitReason(stderr)}`);
  }
}

/** What git said went wrong: its fatal/error lines when it printed any (hints follow them), else its last lines. */
function gitReason(stderr: string): string {
  const lines = stderr.trim().split("\n");
  const errors = lines.filter((l) => /^(fatal|error):/.test(l));
  return (errors.length ? errors : lines.slice(-3)).join(" / ");
}

/** The user interrupted the command (Ctrl-C at a prompt): exit 130, like a shell's SIGINT. */
export class InterruptedError extends Error {
  override name = "InterruptedError";
}
