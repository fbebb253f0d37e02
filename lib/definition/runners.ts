// Runners: how one attempt of a work item becomes an argv. Pure — no I/O, no clock, no randomness.
//
// The step launches the argv detached, with cwd = the item's worktree, stdin = /dev/null, stdout and
// stderr appended to the session log, and the LOOP_* environment (docs/runners.md). Nobody can ever
// answer a prompt, so every preset below is fully headless: it must finish on its own or fail, never
// wait on a permission, consent, trust, update or analytics question.
//
// Flags were checked against the CLIs' own docs/source (Claude Code CLI reference, openai/codex
// codex-rs/exec/src/cli.rs + docs/exec.md, aider's options reference, Gemini CLI 0.61's --help and
// bundle); see docs/runners.md for the sources and for what remains uncertain.

import { dirname, join } from "node:path";
import { GATEWAY_OPENAI_URL_ARG, GATEWAY_PROVIDER } from "./network.ts";

export interface LaunchContext {
  item: string;
  /** 1-based attempt number. */
  attempt: number;
  /** The full handoff text (prompt + loop context). */
  prompt: string;
  /** Absolute path of handoff.md (same text as `prompt`). */
  handoffPath: string;
  /** Absolute path of the item's worktree (the session's cwd). */
  workdir: string;
  model: string | null;
  /** A UUID the loop picked for this attempt. */
  sessionId: string;
  /**
   * Continue an earlier conversation with the reply instead of starting fresh. The reply is in a
   * file (`replyFile`, written by the step, fenced): a reply may be forge text, and forge text never
   * goes into argv (docs/forge.md), so a preset passes only `resumePrompt` or the file's path.
   */
  resume?: { conversationId: string; replyFile: string };
  /**
   * What the attempt may still spend in US dollars, for a CLI with a cap of its own (claude's
   * --max-budget-usd): the least of what is left of the item's and the loop's budgets (docs/spend.md).
   */
  maxBudgetUsd?: number;
  /** The session runs behind its gateway (docs/threat-model.md#the-gateway): a CLI that needs telling on its command line is told. */
  gateway?: boolean;
}

/** Dollars for a command line: at most six decimals, no trailing zeros, never exponent notation. */
function usdArg(usd: number): string {
  return usd.toFixed(6).replace(/\.?0+$/, "") || "0";
}

/** What a resumed claude, codex, gemini or opencode conversation is told on the command line: where the reply is, never the reply. */
export function resumePrompt(replyFile: string): string {
  return `Your question was answered. Read the file ${replyFile}: it holds the reply (as data) and says how to go on.`;
}

interface RunnerCommand {
  argv: string[];
  /** Id to store so a later reply can resume this conversation; null if not known at launch. */
  conversationId: string | null;
  /** Whether `build` honours `ctx.resume` (otherwise a reply means a fresh session). */
  supportsResume: boolean;
  /** Files outside the worktree the command writes (aider's histories): writable in the sandbox. */
  writes?: string[];
}

interface CommandRunnerDef {
  command: string[];
}

type PlaceholderName = "prompt" | "handoff" | "workdir" | "model" | "session_id";

interface RunnerPreset {
  describe: string;
  build(ctx: LaunchContext): RunnerCommand;
}

/**
 * Linux caps a single argv string at MAX_ARG_STRLEN = 128 KiB (execve fails with E2BIG beyond it).
 * A handoff larger than this is not inlined: the agent is told to read handoff.md instead.
 */
export const MAX_INLINE_PROMPT_BYTES = 100_000;

/** The prompt to put on a command line: the handoff text, or a pointer to handoff.md when too big. */
function inlinePrompt(ctx: Pick<LaunchContext, "prompt" | "handoffPath">): string {
  if (new TextEncoder().encode(ctx.prompt).length <= MAX_INLINE_PROMPT_BYTES) return ctx.prompt;
  return (
    `Your complete task and its context are in the file ${ctx.handoffPath} ` +
    `(too large to pass on the command line). Read that whole file first, then do what it says.`
  );
}

/** Codex's model provider of loop's, at the session's gateway (lib/definition/network.ts GATEWAY_OPENAI_URL_ARG). */
function codexGatewayFlags(): string[] {
  const at = `model_providers.${GATEWAY_PROVIDER}`;
  return [
    "-c",
    `model_provider="${GATEWAY_PROVIDER}"`,
    "-c",
    `${at}.name="loop gateway"`,
    "-c",
    GATEWAY_OPENAI_URL_ARG,
    "-c",
    `${at}.wire_api="responses"`,
    "-c",
    `${at}.env_key="OPENAI_API_KEY"`,
    "-c",
    "analytics.enabled=false",
  ];
}

function modelFlag(flag: string, model: string | null): string[] {
  return model === null ? [] : [flag, model];
}

/** Where the aider preset keeps its chat transcript: next to handoff.md, outside the worktree. */
function aiderChatHistoryPath(handoffPath: string): string {
  return join(dirname(handoffPath), "aider.chat.history.md");
}

export const PRESETS: Record<"claude" | "codex" | "aider" | "gemini" | "opencode", RunnerPreset> = {
  // Claude Code, print mode.
  //   -p / --print                       non-interactive: run the prompt, print, exit. Print mode also
  //                                      skips the workspace-trust dialog.
  //   --output-format stream-json        one JSON event per line as the agent works, so the session log
  //                                      grows while it runs (the stall detector watches log growth;
  //                                      the default `text` format prints nothing until the very end).
  //   --verbose                          required by the CLI whenever -p is combined with stream-json.
  //   --include-partial-messages         also print the API's own streaming events: a message's
  //                                      message_delta carries its output count, which the assistant
  //                                      lines (message_start's snapshot, output 1) do not, so a
  //                                      session's figure is right before its `result` line and
  //                                      after a kill (docs/spend.md#from-where).
  //   --dangerously-skip-permissions     = permission mode bypassPermissions: edits and shell commands
  //                                      run without approval. Without it a -p session does not hang but
  //                                      every tool call needing approval is denied, so the agent could
  //                                      not run tests. Claude refuses this flag as root (uid 0) unless
  //                                      IS_SANDBOX=1 or CLAUDE_CODE_BUBBLEWRAP is set: the step checks
  //                                      that before launching (an environment fault, lib/decisions/faults.ts).
  //   --session-id <uuid>                name the new conversation with the loop's LOOP_SESSION_ID, so
  //                                      the id to resume is known before launch.
  //   --resume <id>                      (reply only) continue that conversation; without --fork-session
  //                                      it keeps the same id. --session-id is not combined with it (the
  //                                      CLI rejects --session-id with --resume unless forking). Only a
  //                                      conversation the log proves was saved is resumed
  //                                      (provenConversation); else the reply goes in a fresh handoff.
  //   --model <name>                     only when a model is configured (alias or full name).
  //   --max-budget-usd <usd>             only with a dollar budget (docs/spend.md): what is left of it,
  //                                      the CLI's own cap (print mode) as a second line of defence.
  //   -- <prompt>                        the handoff text (or, on a reply, resumePrompt: a pointer to the
  //                                      reply's file) as the positional prompt; `--` so a prompt
  //                                      starting with "-" is never read as a flag.
  claude: {
    describe: "Claude Code in print mode (claude -p), streaming JSON events, permissions bypassed",
    build(ctx) {
      const common = ["-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages", "--dangerously-skip-permissions"];
      const cap = ctx.maxBudgetUsd !== undefined ? ["--max-budget-usd", usdArg(ctx.maxBudgetUsd)] : [];
      if (ctx.resume) {
        return {
          argv: [
            "claude",
            ...common,
            "--resume",
            ctx.resume.conversationId,
            ...modelFlag("--model", ctx.model),
            ...cap,
            "--",
            resumePrompt(ctx.resume.replyFile),
          ],
          conversationId: ctx.resume.conversationId,
          supportsResume: true,
        };
      }
      return {
        argv: ["claude", ...common, "--session-id", ctx.sessionId, ...modelFlag("--model", ctx.model), ...cap, "--", inlinePrompt(ctx)],
        conversationId: ctx.sessionId,
        supportsResume: true,
      };
    },
  },

  // OpenAI Codex CLI, non-interactive `codex exec` (exec never asks for approvals).
  //   --json                                       JSONL events on stdout while it works (log growth),
  //                                                including {"type":"thread.started","thread_id":…}:
  //                                                the id `codex exec resume` needs (conversationIdFromLog).
  //   --dangerously-bypass-approvals-and-sandbox   no approvals and no sandbox. The default exec sandbox
  //                                                is read-only; `--sandbox workspace-write` (what the
  //                                                removed --full-auto used to mean) cannot write the
  //                                                worktree's git metadata, which lives under the main
  //                                                repository's .git/worktrees/, and has no network, so
  //                                                commits and dependency installs fail. Same trust level
  //                                                as the claude preset; isolate the host instead.
  //   --skip-git-repo-check                        never refuse to start over the repository check (the
  //                                                worktree is a git checkout, this only removes a way to
  //                                                fail on an unusual layout).
  //   --disable unbounded_connection_retries       without the network codex would retry forever, printing a
  //                                                line a minute (which also kept the stall deadline off);
  //                                                with the feature off it fails after ~30 s. Accepted
  //                                                before `resume` too.
  //   --model <name>                               only when a model is configured.
  //   resume <id> | resume --last                  (reply only) continue the recorded session; all flags
  //                                                go between `exec` and `resume`. Without a stored id,
  //                                                --last picks the newest session recorded for this cwd
  //                                                (the worktree is per item).
  //   -- <prompt>                                  the handoff text (or resumePrompt on a reply), after `--`.
  //   -c model_provider=… -c model_providers.…     (behind the gateway only) a provider of loop's pointed at the
  //                                                session's gateway, with the key from OPENAI_API_KEY (the
  //                                                stand-in): codex 0.171 ignores OPENAI_BASE_URL. Global
  //                                                flags, before `exec`; the URL is the wrapper's to fill in.
  //                                                And its analytics off (ab.chatgpt.com), as NONESSENTIAL_TRAFFIC_OFF
  //                                                does for claude.
  // Codex cannot be told which id to use, so conversationId is null at launch: read it from the log.
  codex: {
    describe: "OpenAI Codex CLI (codex exec), JSONL events, approvals and sandbox bypassed",
    build(ctx) {
      const common = [
        "exec",
        "--json",
        "--dangerously-bypass-approvals-and-sandbox",
        "--skip-git-repo-check",
        "--disable",
        "unbounded_connection_retries",
        ...modelFlag("--model", ctx.model),
      ];
      const provider = ctx.gateway ? codexGatewayFlags() : [];
      if (ctx.resume) {
        const target = ctx.resume.conversationId === "" ? ["--last"] : [ctx.resume.conversationId];
        return {
          argv: ["codex", ...provider, ...common, "resume", ...target, "--", resumePrompt(ctx.resume.replyFile)],
          conversationId: ctx.resume.conversationId === "" ? null : ctx.resume.conversationId,
          supportsResume: true,
        };
      }
      return { argv: ["codex", ...provider, ...common, "--", inlinePrompt(ctx)], conversationId: null, supportsResume: true };
    },
  },

  // Gemini CLI 0.61, headless. Its settings (an API key's auth, no usage statistics, no update
  // check) are in the session's own config home, GEMINI_CLI_HOME (lib/supervisor/config-home.ts).
  //   --prompt=<text>                    headless: run the prompt, print, exit (`=`: a prompt starting
  //                                      with "-" is never read as a flag).
  //   --yolo                             every tool call approved (nobody can answer).
  //   --skip-trust                       trust the checkout for this run: without it, it exits 55 in
  //                                      every fresh worktree ("not running in a trusted directory").
  //   --output-format stream-json        a JSON line per event as it works (log growth), the first
  //                                      {"type":"init","session_id":…}.
  //   --session-id <uuid>                name the conversation with the loop's LOOP_SESSION_ID.
  //   --resume <id>                      (reply only) continue that conversation, whose id it keeps;
  //                                      not combined with --session-id.
  //   --model <name>                     only when a model is configured (else its router picks).
  gemini: {
    describe: "Gemini CLI headless (gemini --prompt), streaming JSON events, every tool call approved",
    build(ctx) {
      const common = ["--yolo", "--skip-trust", "--output-format", "stream-json", ...modelFlag("--model", ctx.model)];
      if (ctx.resume)
        return {
          argv: ["gemini", "--resume", ctx.resume.conversationId, ...common, `--prompt=${resumePrompt(ctx.resume.replyFile)}`],
          conversationId: ctx.resume.conversationId,
          supportsResume: true,
        };
      return {
        argv: ["gemini", "--session-id", ctx.sessionId, ...common, `--prompt=${inlinePrompt(ctx)}`],
        conversationId: ctx.sessionId,
        supportsResume: true,
      };
    },
  },

  // opencode 1.18, `opencode run`. Its config (the providers at the session's gateway, every
  // permission allowed, no sharing, no update) is in OPENCODE_CONFIG_CONTENT, and its data, config,
  // cache and state folders in the session's own config home (lib/supervisor/config-home.ts).
  //   run                                non-interactive: send the message, work, exit.
  //   --format json                      a JSON event per line as it works (log growth), each step's
  //                                      tokens in its step_finish.
  //   --pure                             no external plugins (it would install them from npm).
  //   --model <provider/model>           only when a model is configured (opencode names models so).
  //   --session <id>                     (reply only) continue that conversation: its id, read from the
  //                                      previous session's events (each carries its sessionID,
  //                                      conversationIdFromLog), and its database kept with the session
  //                                      (lib/supervisor/config-home.ts) put back in the new home.
  //   -- <prompt>                        the handoff text (or resumePrompt on a reply) as the message, after `--`.
  // opencode names its conversation itself, so conversationId is null at launch: read it from the log.
  opencode: {
    describe: "opencode run, JSON events, every permission allowed in its config",
    build(ctx) {
      const common = ["opencode", "run", "--format", "json", "--pure", ...modelFlag("--model", ctx.model)];
      if (ctx.resume)
        return {
          argv: [...common, "--session", ctx.resume.conversationId, "--", resumePrompt(ctx.resume.replyFile)],
          conversationId: ctx.resume.conversationId,
          supportsResume: true,
        };
      return { argv: [...common, "--", inlinePrompt(ctx)], conversationId: null, supportsResume: true };
    },
  },

  // aider, scripted with one message.
  //   --message-file <handoff.md>        send the handoff as one message, apply the edits, exit (a file,
  //                                      so no command-line size limit applies).
  //   --message-file <reply.md>          (reply only) the reply's file as the message: forge text never
  //                                      goes in argv.
  //   --yes-always                       answer yes to every confirmation (add files, create, ...).
  //                                      Shell commands need an explicit yes, so they are never run.
  //   --no-suggest-shell-commands        don't propose shell commands nobody can approve.
  //   --no-check-update                  no update check (and no "install the new version?" question).
  //   --no-show-release-notes            no "see what's new?" question after an upgrade.
  //   --no-analytics                     no analytics for this run and no opt-in question (unlike
  //                                      --analytics-disable it does not write the user's aider config).
  //   --no-gitignore                     don't add .aider* to the item's .gitignore (a stray change
  //                                      on the deliverable branch).
  //   --no-show-model-warnings           no "open documentation URL?" question for unknown models.
  //   --no-detect-urls                   don't offer to scrape URLs found in the prompt.
  //   --no-fancy-input                   plain input: no prompt_toolkit on a non-terminal.
  //   --no-pretty --no-stream            plain, uncoloured, line-oriented output for the log file.
  //   --chat-history-file <file>         transcript in the session directory instead of the worktree;
  //                                      this file is the conversation id.
  //   --input-history-file <file>        likewise, out of the worktree.
  //   --restore-chat-history             (reply only) reload the transcript before sending the reply.
  //   --model <name>                     only when a model is configured.
  // aider's own auto-commits stay on: its edits land as commits on the item's branch.
  aider: {
    describe: "aider scripted with --message-file, every confirmation answered yes",
    build(ctx) {
      const sessionDir = dirname(ctx.handoffPath);
      const chatHistory = ctx.resume ? ctx.resume.conversationId : aiderChatHistoryPath(ctx.handoffPath);
      const argv = [
        "aider",
        "--message-file",
        ctx.resume ? ctx.resume.replyFile : ctx.handoffPath,
        "--yes-always",
        "--no-suggest-shell-commands",
        "--no-check-update",
        "--no-show-release-notes",
        "--no-analytics",
        "--no-gitignore",
        "--no-show-model-warnings",
        "--no-detect-urls",
        "--no-fancy-input",
        "--no-pretty",
        "--no-stream",
        "--chat-history-file",
        chatHistory,
        "--input-history-file",
        join(sessionDir, "aider.input.history"),
        ...(ctx.resume ? ["--restore-chat-history"] : []),
        ...modelFlag("--model", ctx.model),
      ];
      return { argv, conversationId: chatHistory, supportsResume: true, writes: [chatHistory, join(sessionDir, "aider.input.history")] };
    },
  },
};

/**
 * What a preset's CLI writes under $HOME when it has no config home of its own (claude's and codex's
 * are private, per session: lib/supervisor/config-home.ts): writable in the sandbox when it exists
 * (docs/runners.md#the-sandbox). Command runners get none: a runner that needs one sets its own folder
 * (most CLIs take a variable for it) inside the worktree or turns the sandbox off.
 */
export const PRESET_HOMES: Readonly<Record<string, readonly string[]>> = {
  aider: [".aider"],
};

/** Names a `runners` entry in loop.json cannot take: they are always the built-ins. */
export const RESERVED_RUNNER_NAMES: readonly string[] = [...Object.keys(PRESETS), "demo"];

const PLACEHOLDER = /\{(prompt|handoff|workdir|model|session_id)\}/g;

/**
 * Expand `{prompt}`, `{handoff}`, `{workdir}`, `{model}`, `{session_id}` in each element separately.
 * No shell, no word splitting: one template element is always exactly one argv element. Values are
 * inserted literally (never re-expanded); any other brace text is left as it is.
 */
export function expandPlaceholders(template: string[], values: Record<PlaceholderName, string>): string[] {
  return template.map((part) => part.replace(PLACEHOLDER, (_match, name: PlaceholderName) => values[name]));
}

function placeholderValues(ctx: LaunchContext): Record<PlaceholderName, string> {
  return {
    prompt: ctx.prompt,
    handoff: ctx.handoffPath,
    workdir: ctx.workdir,
    model: ctx.model ?? "",
    session_id: ctx.sessionId,
  };
}

/**
 * Resolve a runner name to the argv to launch. Built-ins first (claude, codex, aider, gemini, opencode, demo), then the
 * `runners` of loop.json. `demoArgv` is how to invoke the built-in demo agent, e.g.
 * [process.execPath, "cmd/loop.ts", "__demo-agent"]. Command runners and demo cannot resume: a reply
 * to them is delivered through the next session's handoff.
 */
export function buildRunnerCommand(runner: string, ctx: LaunchContext, commandRunners: Record<string, CommandRunnerDef>, demoArgv: string[]): RunnerCommand {
  if (Object.hasOwn(PRESETS, runner)) return PRESETS[runner as keyof typeof PRESETS].build(ctx);
  if (runner === "demo") {
    if (demoArgv.length === 0) throw new Error(`runner "demo": no command given to start the demo agent`);
    return { argv: [...demoArgv], conversationId: null, supportsResume: false };
  }
  if (Object.hasOwn(commandRunners, runner)) {
    const def = commandRunners[runner];
    if (!def || !Array.isArray(def.command) || def.command.length === 0 || def.command[0] === "")
      throw new Error(`runner "${runner}": "command" must be a non-empty array whose first element names a program`);
    return { argv: expandPlaceholders(def.command, placeholderValues(ctx)), conversationId: null, supportsResume: false };
  }
  const known = [...RESERVED_RUNNER_NAMES, ...Object.keys(commandRunners)].map((n) => `"${n}"`).join(", ");
  throw new Error(`unknown runner "${runner}" (known runners: ${known})`);
}

/**
 * The conversation a reply may resume, or null for a fresh session (whose handoff carries the
 * reply). Only one proven to exist: claude's id is chosen before launch, so a session that died
 * at start (as root, say) left an id naming nothing, and resuming it fails with "No conversation
 * found with session ID". claude (gemini, opencode): the id the log announces, when the CLI saved its conversation
 * file (`saved`; one that could not write its config folder printed the id and saved nothing);
 * codex: the id the log announces, or the one recorded from an earlier log, unless `saved` says
 * its session file is not there; aider: its chat history, when the file is there. Other runners
 * never resume. `saved` answering null (nowhere to look) proves nothing either way.
 */
export function provenConversation(
  runner: string,
  o: { recorded: string | null; logHead: string; historyExists: boolean; saved?: (id: string) => boolean | null },
): string | null {
  if (runner === "claude" || runner === "gemini" || runner === "opencode") {
    // The init line is printed before anything is saved: the CLI's saved file is the proof, where it can be looked for.
    const id = conversationIdFromLog(runner, o.logHead);
    return id !== null && o.saved?.(id) !== false ? id : null;
  }
  if (runner === "codex") {
    const id = conversationIdFromLog("codex", o.logHead) ?? o.recorded;
    return id !== null && (id === "" || o.saved?.(id) !== false) ? id : null;
  }
  if (runner === "aider") return o.recorded && o.historyExists ? o.recorded : null;
  return null;
}

/**
 * The conversation id a runner reported in its session log, for runners that choose it themselves.
 * codex: the first `{"type":"thread.started","thread_id":…}` JSONL event; claude: the
 * `{"type":"system","subtype":"init","session_id":…}` event (equal to --session-id); gemini: its
 * `{"type":"init","session_id":…}` event (likewise); opencode: the `sessionID` of its first event
 * (`ses_` and letters and digits: it goes on a command line). Null otherwise.
 */
export function conversationIdFromLog(runner: string, log: string): string | null {
  for (const line of log.split("\n")) {
    const text = line.trim();
    if (!text.startsWith("{")) continue;
    let event: unknown;
    try {
      event = JSON.parse(text);
    } catch {
      continue;
    }
    if (typeof event !== "object" || event === null) continue;
    const e = event as Record<string, unknown>;
    if (runner === "codex" && e.type === "thread.started" && typeof e.thread_id === "string") return e.thread_id;
    if (runner === "claude" && e.type === "system" && e.subtype === "init" && typeof e.session_id === "string") return e.session_id;
    if (runner === "gemini" && e.type === "init" && typeof e.session_id === "string") return e.session_id;
    if (runner === "opencode" && typeof e.type === "string" && typeof e.sessionID === "string")
      return /^ses_[A-Za-z0-9]{1,100}$/.test(e.sessionID) ? e.sessionID : null;
  }
  return null;
}
