// An attack written in a tracker's issue (an entry's `issue`: tests/attacks/attack.ts): item x names
// a Linear issue whose title and description the attacker wrote, which loop reads through a Linear
// tracker beside a GitHub forge (the fakes, on 127.0.0.1, the Linear one held to Linear's published
// schema) into the agent's handoff. What it may do there is judged by the harms `fencedOnly` (the
// attacker's words reach the handoff only inside a fence, with no hidden character anywhere in it)
// and `noControl` (nothing in the issue steers the loop: only an authorized user's comment is control).
import { readFileSync } from "node:fs";
import type { StoredEvent } from "../../lib/log/events.ts";
import { hasHidden } from "../../lib/shared/untrusted-text.ts";
import { FakeLinear } from "../helpers/fake-linear.ts";
import { github } from "../helpers/forges.ts";
import { linesOutsideFences } from "../helpers/markdown.ts";
import { git, type Project } from "../helpers/project.ts";

/** The Linear issue item x names: its title and description, as its author wrote them. */
export interface AttackIssue {
  title: string;
  description: string;
}

/**
 * Start the fakes, give Linear the attack's issue (ENG-1), and make item x of loop.json name it
 * (`linear:ENG-1`), with the forge and the tracker loop needs to read it; committed and pushed as an
 * operator would. `key` is loop's Linear key (a canary of the run). Returns what stops the fakes.
 */
export function openIssueWorld(p: Project, def: Record<string, unknown>, issue: AttackIssue, key: string): () => void {
  const linear = new FakeLinear({ authorization: key }).start();
  const gh = github(p.aux);
  linear.addIssue({ number: 1, ...issue });
  const items = (def.items as Record<string, unknown>[]).map((i) => (i.id === "x" ? { ...i, ref: "linear:ENG-1" } : i));
  p.writeDefinition({
    ...def,
    items,
    forge: { provider: "github", repo: gh.repo, apiUrl: gh.apiUrl, gitUrl: gh.bare, tokenEnv: "GITHUB_TOKEN", authorizedUsers: [] },
    tracker: { provider: "linear", apiUrl: linear.url, team: "ENG", authorizedUsers: ["ada@acme.dev"], pollInterval: "1ms" },
  });
  git(p.root, "add", "-A");
  git(p.root, "commit", "-qm", "the loop reads its items' issues from Linear");
  git(p.root, "remote", "add", "origin", gh.bare);
  git(p.root, "push", "-q", "origin", "main");
  return () => {
    gh.stop();
    linear.stop();
  };
}

/** How the handoff of `item`'s first attempt carries `texts`: each must reach it, and only inside a fence; nothing hidden in it. */
export function fencedOnly(p: Project, item: string, texts: string[]): string[] {
  let handoff: string;
  try {
    handoff = readFileSync(`${p.sessionDir(item, 1)}/handoff.md`, "utf8");
  } catch {
    return [`${item} has no handoff: the issue never reached an agent`];
  }
  const outside = linesOutsideFences(handoff).join("\n");
  const out: string[] = [];
  for (const t of texts) {
    if (!handoff.includes(t)) out.push(`${JSON.stringify(t)} is not in ${item}'s handoff (the check would be empty)`);
    else if (outside.includes(t)) out.push(`${JSON.stringify(t)} is in ${item}'s handoff outside every fence`);
  }
  if (hasHidden(handoff)) out.push(`${item}'s handoff holds a hidden character (an escape, a control)`);
  return out;
}

/** What in the log says the loop was steered: a control recorded, a comment acted on, a pause. */
export function steered(events: StoredEvent[]): string[] {
  return events
    .filter((e) => e.type === "control_recorded" || e.type === "forge_comment_handled" || e.type === "loop_paused")
    .map((e) => `${e.type} by ${e.actor}: ${JSON.stringify(e.payload).slice(0, 200)}`);
}
