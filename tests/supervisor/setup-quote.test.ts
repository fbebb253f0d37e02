// What a failed setup's reason quotes of its output (lib/supervisor/setup-command.ts setupQuote):
// the first line that reads as an error, then the last lines. Plain text in, text out.
import { describe, expect, test } from "bun:test";
import { setupQuote } from "../../lib/supervisor/setup-command.ts";

const pip = [
  "Obtaining file:///w/proj",
  "  Installing build dependencies: started",
  "  Installing build dependencies: finished with status 'done'",
  "Collecting click>=8 (from proj==0.1)",
  "ERROR: Could not find a version that satisfies the requirement nosuchdep>=1 (from proj) (from versions: none)",
  "ERROR: No matching distribution found for nosuchdep>=1",
  "",
  "[notice] A new release of pip is available: 24.0 -> 24.2",
  "[notice] To update, run: pip install --upgrade pip",
  "See above for output.",
].join("\n");

describe("setupQuote", () => {
  test("pip: the first ERROR line, then the last lines", () => {
    expect(setupQuote(pip)).toBe(
      ": ERROR: Could not find a version that satisfies the requirement nosuchdep>=1 (from proj) (from versions: none) / … / [notice] A new release of pip is available: 24.0 -> 24.2 / [notice] To update, run: pip install --upgrade pip / See above for output.",
    );
  });

  test("a Python traceback: its last line, the exception", () => {
    const text = [
      "running setup",
      "Traceback (most recent call last):",
      '  File "setup.py", line 3, in <module>',
      "    import nosuch",
      "ModuleNotFoundError: No module named 'nosuch'",
      "cleanup 1",
      "cleanup 2",
      "cleanup 3",
    ].join("\n");
    // Right before the last lines: nothing left out between them.
    expect(setupQuote(text)).toBe(": ModuleNotFoundError: No module named 'nosuch' / cleanup 1 / cleanup 2 / cleanup 3");
    expect(setupQuote(`${text}\ncleanup 4`)).toBe(": ModuleNotFoundError: No module named 'nosuch' / … / cleanup 2 / cleanup 3 / cleanup 4");
  });

  test("npm ERR!, git's fatal:, cargo's error[E…]:, a tool's `x: error:`", () => {
    const tailOf = (first: string) => [first, "a", "b", "c", "d"].join("\n");
    expect(setupQuote(tailOf("npm ERR! code E404"))).toBe(": npm ERR! code E404 / … / b / c / d");
    expect(setupQuote(tailOf("fatal: not a git repository"))).toBe(": fatal: not a git repository / … / b / c / d");
    expect(setupQuote(tailOf("error[E0432]: unresolved import `foo`"))).toBe(": error[E0432]: unresolved import `foo` / … / b / c / d");
    expect(setupQuote(tailOf("usage: x\nx: error: unknown option"))).toBe(": x: error: unknown option / … / b / c / d");
  });

  test("no error line, or one among the last lines: the last lines only; no output: nothing", () => {
    expect(setupQuote("one\ntwo\nthree\nfour\n")).toBe(": two / three / four");
    expect(setupQuote("one\ntwo\nERROR: x\nfour\n")).toBe(": two / ERROR: x / four");
    expect(setupQuote("preparing\n")).toBe(": preparing");
    expect(setupQuote("\n \n")).toBe("");
    // A word that merely contains "error" is no error line.
    expect(setupQuote("no errors here\n1\n2\n3")).toBe(": 1 / 2 / 3");
  });
});
