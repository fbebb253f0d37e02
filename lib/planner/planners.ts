// The planners `loop plan --runner` can use, as pure argv builders and answer extractors: the
// claude, codex and aider presets in their non-interactive modes, given no tools (or the least the
// CLI allows), the loop.json `runners` entries as command planners, and the built-in `demo` planner
// (demo-planner.ts). Every planner runs in an empty temporary directory: it sees only the prompt.
//
// Flags (docs/cli/loop-plan.md#runners, with what remains uncertain):
//   claude  -p --output-format json --json-schema <schema> --tools ""   print mode, one JSON result
//           envelope on stdout whose `structured_output` holds the answer validated against the
//           schema (`result`, its text, when structured output is absent); `--tools ""` disables
//           every built-in tool.
//   codex   exec --output-schema <file> --output-last-message <file> --sandbox read-only
//           --skip-git-repo-check --ephemeral: the final message, shaped by the schema, is written to
//           the file. Codex has no switch that removes its tools; a read-only sandbox in an empty
//           directory is the least it allows.
//   aider   --message-file <prompt> --chat-mode ask --no-git --dry-run --map-tokens 0 …: ask mode
//           edits nothing; aider has no structured output, so the answer is the last JSON document in
//           what it prints.
//   command the runner's argv with {prompt} (the prompt text), {handoff} (a file holding it),
//           {workdir} (the empty directory), {model}, {session_id} (empty); its stdout is the answer.
import { join } from "node:path";
import { expandPlaceholders, MAX_INLINE_PROMPT_BYTES, PRESETS } from "../definition/runners.ts";
import type { CommandRunner } from "../definition/normalized.ts";

const PLANNER_PRESETS = ["claude", "codex", "aider"] as const;

interface PlannerFiles {
  /** The empty directory the planner runs in. */
  dir: string;
  /** The prompt, written to a file (for {handoff} and aider's --message-file). */
  promptFile: string;
  /** The answer's JSON Schema, written to a file (codex). */
  schemaFile: string;
  /** Where codex writes its last message. */
  answerFile: string;
}

interface PlannerCommand {
  argv: string[];
  /** Where the answer is: stdout (as the extractor reads it), or a file codex writes. */
  answer: { from: "stdout"; extract: "claude" | "aider" | "raw" } | { from: "file"; path: string };
}

export function plannerFiles(dir: string): PlannerFiles {
  return { dir, promptFile: join(dir, "prompt.md"), schemaFile: join(dir, "answer.schema.json"), answerFile: join(dir, "answer.json") };
}

/** The runner catalogue of a loop: the presets, demo and its command runners, each with what it is. */
export function runnerCatalogue(commandRunners: Record<string, CommandRunner>): { name: string; describe: string }[] {
  return [
    ...PLANNER_PRESETS.map((n) => ({ name: n, describe: PRESETS[n].describe })),
    { name: "demo", describe: "the built-in deterministic demo agent (writes files as its prompt's @demo lines say)" },
    ...Object.keys(commandRunners).map((n) => ({ name: n, describe: "a command runner of this loop.json" })),
  ];
}

/** The argv of a planner that is a program (not demo); throws when the prompt cannot go on a command line. */
export function plannerCommand(o: {
  runner: string;
  model: string | null;
  prompt: string;
  schema: object;
  files: PlannerFiles;
  commandRunners: Record<string, CommandRunner>;
}): PlannerCommand {
  const model = o.model === null ? [] : ["--model", o.model];
  const inline = () => {
    const bytes = new TextEncoder().encode(o.prompt).length;
    if (bytes > MAX_INLINE_PROMPT_BYTES)
      throw new Error(`the planner's prompt is ${bytes} bytes, over the ${MAX_INLINE_PROMPT_BYTES} a command line takes: narrow --issues or shorten the brief`);
    return o.prompt;
  };
  switch (o.runner) {
    case "claude":
      return {
        argv: ["claude", "-p", "--output-format", "json", "--json-schema", JSON.stringify(o.schema), "--tools", "", ...model, "--", inline()],
        answer: { from: "stdout", extract: "claude" },
      };
    case "codex":
      return {
        argv: [
          "codex",
          "exec",
          "--output-schema",
          o.files.schemaFile,
          "--output-last-message",
          o.files.answerFile,
          "--sandbox",
          "read-only",
          "--skip-git-repo-check",
          "--ephemeral",
          ...model,
          "--",
          inline(),
        ],
        answer: { from: "file", path: o.files.answerFile },
      };
    case "aider":
      return {
        argv: [
          "aider",
          "--message-file",
          o.files.promptFile,
          "--chat-mode",
          "ask",
          "--no-git",
          "--dry-run",
          "--map-tokens",
          "0",
          "--yes-always",
          "--no-suggest-shell-commands",
          "--no-check-update",
          "--no-show-release-notes",
          "--no-analytics",
          "--no-show-model-warnings",
          "--no-detect-urls",
          "--no-fancy-input",
          "--no-pretty",
          "--no-stream",
          "--chat-history-file",
          join(o.files.dir, "aider.chat.history.md"),
          "--input-history-file",
          join(o.files.dir, "aider.input.history"),
          ...model,
        ],
        answer: { from: "stdout", extract: "aider" },
      };
  }
  const def = Object.hasOwn(o.commandRunners, o.runner) ? o.commandRunners[o.runner] : undefined;
  if (!def) throw new Error(`internal: planner ${JSON.stringify(o.runner)} is not a program`);
  const argv = expandPlaceholders(def.command, {
    prompt: def.command.some((a) => a.includes("{prompt}")) ? inline() : o.prompt,
    handoff: o.files.promptFile,
    workdir: o.files.dir,
    model: o.model ?? "",
    session_id: "",
  });
  return { argv, answer: { from: "stdout", extract: "raw" } };
}

/**
 * The answer's text from what the planner printed. claude: its result envelope (`structured_output`,
 * else `result`); an envelope that says it failed is an error. aider: the last ```json block, else
 * the text from the last line that starts with "{". raw: stdout as it is.
 */
export function extractAnswer(kind: "claude" | "aider" | "raw", stdout: string): { text: string } | { error: string } {
  if (kind === "raw") return { text: stdout };
  if (kind === "claude") {
    let env: Record<string, unknown>;
    try {
      env = JSON.parse(stdout.trim()) as Record<string, unknown>;
    } catch {
      return { text: stdout }; // not an envelope: judged as the answer itself (truncated or not JSON)
    }
    if (env === null || typeof env !== "object" || !("type" in env)) return { text: stdout };
    if (env.is_error === true || (typeof env.subtype === "string" && env.subtype !== "success"))
      return { error: `claude reported ${String(env.subtype ?? "an error")}: ${String(env.result ?? "").slice(0, 500)}` };
    if (env.structured_output !== undefined && env.structured_output !== null) return { text: JSON.stringify(env.structured_output) };
    return { text: typeof env.result === "string" ? env.result : "" };
  }
  const fences = [...stdout.matchAll(/```(?:json)?\s*\n([\s\S]*?)```/g)];
  if (fences.length) return { text: fences[fences.length - 1]![1]! };
  const lines = stdout.split("\n");
  for (let i = lines.length - 1; i >= 0; i--) if (lines[i]!.startsWith("{")) return { text: lines.slice(i).join("\n") };
  return { text: stdout };
}
