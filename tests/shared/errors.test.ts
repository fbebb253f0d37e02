// The error contract: every error class is a LoopError carrying a code and an exit that
// docs/errors.md documents, and classifyError reads them off the error. A code is one of
// ERROR_CODES (the compiler holds every class, wherever it is declared, to that list), and the
// list is held to docs/errors.md here. The table below is typed by the module's exports, so a class
// added to lib/shared/errors.ts without a row fails the typecheck.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import * as errors from "../../lib/shared/errors.ts";
import { classifyError } from "../../lib/shared/cli.ts";

const REPO = resolve(import.meta.dir, "..", "..");

type Exports = typeof errors;
/** The name of every error class lib/shared/errors.ts exports, but the abstract base. */
type ErrorClass = Exclude<{ [K in keyof Exports]: Exports[K] extends abstract new (...args: never[]) => Error ? K : never }[keyof Exports], "LoopError">;

interface Row {
  error: Error;
  code: errors.ErrorCode;
  exit: errors.ExitCode;
}

const STORE_EXITS: Record<errors.StoreErrorCode, errors.ExitCode> = {
  missing_store: errors.EXIT.usage,
  store_missing: errors.EXIT.usage,
  corrupt_store: errors.EXIT.usage,
  outdated_store: errors.EXIT.usage,
  foreign_store: errors.EXIT.usage,
  io_error: errors.EXIT.problem,
  store_locked: errors.EXIT.problem,
  invalid_event: errors.EXIT.problem,
  duplicate_event: errors.EXIT.problem,
  seq_conflict: errors.EXIT.problem,
};

// The codes and exits as they were when the classes were mapped by an instanceof ladder in cli.ts:
// they are a contract (docs/cli/*.md), so this table is written out, not derived.
const TABLE: Record<ErrorClass, Row[]> = {
  UsageError: [{ error: new errors.UsageError("unknown option --x"), code: "usage", exit: errors.EXIT.usage }],
  DeclinedError: [{ error: new errors.DeclinedError("declined"), code: "declined", exit: errors.EXIT.declined }],
  InterruptedError: [{ error: new errors.InterruptedError("interrupted at the prompt"), code: "interrupted", exit: errors.EXIT.interrupted }],
  BusyError: [{ error: new errors.BusyError("busy"), code: "busy", exit: errors.EXIT.busy }],
  BusyLease: [{ error: new errors.BusyLease({ pid: 42, host: "build1", started: "2026-01-01T00:00:00Z" }), code: "busy", exit: errors.EXIT.busy }],
  LeaseLostError: [{ error: new errors.LeaseLostError("lease lost"), code: "busy", exit: errors.EXIT.busy }],
  RefusedError: [{ error: new errors.RefusedError("passed"), code: "refused", exit: errors.EXIT.problem }],
  RefError: [{ error: new errors.RefError("bad ref", "gh:x"), code: "invalid_ref", exit: errors.EXIT.usage }],
  UnknownItemError: [{ error: new errors.UnknownItemError("no item nope"), code: "unknown_item", exit: errors.EXIT.usage }],
  DefinitionError: [
    { error: new errors.DefinitionError([{ path: "items[0]", message: "bad" }], "loop.json"), code: "invalid_definition", exit: errors.EXIT.usage },
  ],
  StoreError: (Object.entries(STORE_EXITS) as [errors.StoreErrorCode, errors.ExitCode][]).map(([code, exit]) => ({
    error: new errors.StoreError(code, code),
    code,
    exit,
  })),
  IllegalEventError: [{ error: new errors.IllegalEventError(7, "item_status", "nope"), code: "illegal_event_sequence", exit: errors.EXIT.problem }],
  GitError: [{ error: new errors.GitError(["merge"], 128, "fatal: no"), code: "git_error", exit: errors.EXIT.problem }],
  // Translated by their callers before they reach a tool; one that does not is a bug.
  JsonSyntaxError: [{ error: new errors.JsonSyntaxError("invalid JSON at line 1, column 1", 1, 1), code: "internal", exit: errors.EXIT.internal }],
  CanonicalJsonError: [{ error: new errors.CanonicalJsonError("undefined in array", "a[0]"), code: "internal", exit: errors.EXIT.internal }],
  UnsupportedSchemaError: [{ error: new errors.UnsupportedSchemaError("schema type x"), code: "internal", exit: errors.EXIT.internal }],
  PlannerError: [{ error: new errors.PlannerError("truncated answer"), code: "planner_failed", exit: errors.EXIT.problem }],
  ForgeError: [{ error: new errors.ForgeError("forge: no answer"), code: "forge_failed", exit: errors.EXIT.problem }],
  DemoDirectiveError: [{ error: new errors.DemoDirectiveError(3, "empty @demo directive"), code: "internal", exit: errors.EXIT.internal }],
  StartError: [{ error: new errors.StartError("tmux new-session failed: no server"), code: "internal", exit: errors.EXIT.internal }],
  // Translated by the launch into the environment fault it carries (lib/decisions/faults.ts launchErrorFault).
  FaultError: [
    {
      error: new errors.FaultError({ kind: "base_missing", message: "the start point main is gone", fix: "fetch it" }),
      code: "internal",
      exit: errors.EXIT.internal,
    },
  ],
};

/** `| \`code\` | exit | …` rows of docs/errors.md. */
function documentedCodes(): Map<string, number> {
  const md = readFileSync(join(REPO, "docs/errors.md"), "utf8");
  return new Map([...md.matchAll(/^\|\s*`([a-z_]+)`\s*\|\s*(\d+)\s*\|/gm)].map((m) => [m[1]!, Number(m[2])]));
}

describe("every error class carries its code and exit", () => {
  const exported = Object.entries(errors).filter(([, v]) => typeof v === "function" && v.prototype instanceof Error);

  test("every error class lib/shared/errors.ts exports has a row, sampled by an instance of that very class", () => {
    const classes = exported.map(([name]) => name).filter((n) => n !== "LoopError");
    expect(classes.sort()).toEqual(Object.keys(TABLE).sort());
    // biome-ignore lint/performance/noDynamicNamespaceImportAccess: every error class, by name
    const wrong = Object.entries(TABLE).flatMap(([name, rows]) => rows.filter((r) => r.error.constructor !== errors[name as ErrorClass]).map(() => name));
    expect(wrong).toEqual([]);
  });

  const rows = Object.entries(TABLE).flatMap(([name, rs]) => rs.map((r) => ({ name, ...r })));
  test.each(rows)("$name: $code, exit $exit", ({ error, code, exit }) => {
    expect(error).toBeInstanceOf(errors.LoopError);
    const e = error as errors.LoopError;
    expect({ code: e.code, exit: e.exit }).toEqual({ code, exit });
    expect(classifyError(error)).toEqual({ code, exit, message: error.message });
  });

  test("docs/errors.md documents each class's code with its exit", () => {
    const docs = documentedCodes();
    const wrong = rows.filter((r) => docs.get(r.code) !== r.exit).map((r) => `${r.name}: ${r.code} ${r.exit} (documented: ${docs.get(r.code) ?? "no"})`);
    expect(wrong).toEqual([]);
  });

  test("docs/errors.md lists exactly ERROR_CODES, and no code that nothing gives; the contract's exit-code table lists every exit code", () => {
    expect([...documentedCodes().keys()].sort()).toEqual([...errors.ERROR_CODES].sort());
    const given = new Set<string>([...rows.map((r) => r.code), "io_error", "internal"]);
    expect(errors.ERROR_CODES.filter((c) => !given.has(c))).toEqual([]);
    const md = readFileSync(join(REPO, "docs/cli/README.md"), "utf8");
    const exits = new Set([...md.matchAll(/^\|\s*(\d+)\s*\|/gm)].map((m) => Number(m[1])));
    expect(Object.values(errors.EXIT).filter((x) => !exits.has(x))).toEqual([]);
  });
});

describe("classifyError: anything that is not a LoopError", () => {
  test("a failed system call is io_error, exit 1, with the system's message", () => {
    let err: unknown;
    try {
      readFileSync(REPO); // a directory: EISDIR from read
    } catch (e) {
      err = e;
    }
    expect(err).toBeDefined();
    expect(classifyError(err)).toEqual({ code: "io_error", exit: errors.EXIT.problem, message: (err as Error).message });
  });

  test.each([
    ["a plain Error", new Error("boom")],
    ["a thrown string", "boom"],
    ["an errno-like code without a system call", Object.assign(new Error("boom"), { code: "ENOENT" })],
  ])("%s is internal, exit 70", (_name, err) => {
    expect(classifyError(err)).toEqual({ code: "internal", exit: errors.EXIT.internal, message: "boom" });
  });
});
