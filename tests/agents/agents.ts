// The real agent CLIs, as `npm run agents:install` put them in tests/agents/node_modules
// (tests/agents/package.json pins them). A test that needs one asks `agentBin`: when the CLI is not
// installed it is told so once (one line on stderr, naming the command that installs it) and the
// test is skipped, never silently; under CI (LOOP_TEST_AGENTS_REQUIRED=1, set by .ci/run) a missing
// CLI fails instead.
import { existsSync, mkdirSync, readFileSync, symlinkSync } from "node:fs";
import { join, resolve } from "node:path";

const MODULES = resolve(import.meta.dir, "node_modules");

/** The pinned CLIs: the newest of each, and the oldest Claude Code the docs support. */
export const AGENTS = {
  claude: join(MODULES, "@anthropic-ai/claude-code/bin/claude.exe"),
  "claude-2.1.197": join(MODULES, "claude-code-2.1.197/bin/claude.exe"),
  codex: join(MODULES, "@openai/codex/bin/codex.js"),
  gemini: join(MODULES, "@google/gemini-cli/bundle/gemini.js"),
  opencode: join(MODULES, "opencode-ai/bin/opencode.exe"),
  pi: join(MODULES, "@mariozechner/pi-coding-agent/dist/cli.js"),
  qwen: join(MODULES, "@qwen-code/qwen-code/cli-entry.js"),
} as const;
export type AgentName = keyof typeof AGENTS;

const told = new Set<string>();

/** The CLI's program, or null (said once) when it is not installed. */
export function agentBin(name: AgentName): string | null {
  let path: string = AGENTS[name];
  if (name === "claude" && !existsSync(path)) path = join(MODULES, "@anthropic-ai/claude-code/cli.js");
  if (existsSync(path)) return path;
  if (process.env.LOOP_TEST_AGENTS_REQUIRED === "1") throw new Error(`${name} is not installed in tests/agents (run \`npm run agents:install\`)`);
  if (!told.has(name)) {
    told.add(name);
    process.stderr.write(`tests/agents: ${name} is not installed, its end-to-end tests are skipped (run \`npm run agents:install\`)\n`);
  }
  return null;
}

/** A folder holding `as` → the CLI, to put first on an agent's PATH (the presets run `claude`, `codex`). */
export function agentPath(dir: string, name: AgentName, as: "claude" | "codex" | "gemini" | "opencode" | "pi" | "qwen"): string {
  const bin = join(dir, "agent-bin");
  mkdirSync(bin, { recursive: true });
  symlinkSync(agentBin(name)!, join(bin, as));
  return bin;
}

/**
 * The JSON blocks of one section of docs/runners.md (the text from its `### ` heading to the next
 * heading), parsed, in order: a recipe the doc gives is run as the doc writes it, so the two cannot
 * drift apart. Throws when the section or its blocks are gone.
 */
export function runnersDocJson(heading: string): unknown[] {
  const md = readFileSync(resolve(import.meta.dir, "../../docs/runners.md"), "utf8");
  const start = md.indexOf(`\n### ${heading}\n`);
  if (start < 0) throw new Error(`docs/runners.md has no section "### ${heading}"`);
  const rest = md.slice(start + 1);
  const end = rest.slice(4).search(/\n#{1,3} /);
  const section = end < 0 ? rest : rest.slice(0, end + 4);
  const blocks = [...section.matchAll(/^```json\n([\s\S]*?)^```$/gm)].map((m) => JSON.parse(m[1]!) as unknown);
  if (blocks.length === 0) throw new Error(`docs/runners.md's "${heading}" has no JSON block`);
  return blocks;
}
