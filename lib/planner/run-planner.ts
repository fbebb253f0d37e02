// Running a planner program once (planners.ts builds its argv): in an empty temporary directory,
// stdin closed, its output capped, under a deadline. Everything that goes wrong is a PlannerError
// naming the planner and what it said last.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PlannerError } from "../shared/errors.ts";
import { parseDuration } from "../definition/duration.ts";
import { extractAnswer, plannerCommand, plannerFiles } from "./planners.ts";
import type { CommandRunner } from "../definition/normalized.ts";
import { childEnvironment, type EnvRule } from "../definition/child-environment.ts";

/** More answer than this is not a plan: the planner is cut off and the answer judged truncated. */
const MAX_ANSWER_BYTES = 4 * 2 ** 20;
/** Default deadline for one planner call; LOOP_PLAN_TIMEOUT (a duration: "90s", "20m") overrides it. */
const DEFAULT_TIMEOUT = "15m";

async function readCapped(stream: ReadableStream<Uint8Array>, cap: number): Promise<{ text: string; cut: boolean }> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  let cut = false;
  for await (const chunk of stream) {
    if (size + chunk.length > cap) {
      chunks.push(chunk.subarray(0, cap - size));
      size = cap;
      cut = true;
      continue; // keep draining, so the planner is not blocked on a full pipe
    }
    chunks.push(chunk);
    size += chunk.length;
  }
  return { text: Buffer.concat(chunks).toString("utf8"), cut };
}

interface RunPlannerOptions {
  runner: string;
  model: string | null;
  prompt: string;
  schema: object;
  commandRunners: Record<string, CommandRunner>;
  /** loop plan's own environment (LOOP_PLAN_TIMEOUT is read from it). */
  env: Record<string, string | undefined>;
  /** What of it the planner gets (lib/definition/child-environment.ts plannerRule): never loop's secrets. */
  envRule: EnvRule;
}

/** The answer text of one planner call. */
export async function runPlanner(o: RunPlannerOptions): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "loop-plan-"));
  try {
    const files = plannerFiles(dir);
    writeFileSync(files.promptFile, o.prompt);
    writeFileSync(files.schemaFile, JSON.stringify(o.schema, null, 2));
    let cmd;
    try {
      cmd = plannerCommand({ ...o, files });
    } catch (e) {
      throw new PlannerError(`planner ${o.runner}: ${(e as Error).message}`);
    }
    const timeoutMs = parseDuration(o.env.LOOP_PLAN_TIMEOUT || DEFAULT_TIMEOUT);
    let proc;
    try {
      proc = Bun.spawn(cmd.argv, {
        cwd: dir,
        env: childEnvironment(o.env, o.envRule, { cwd: dir }),
        stdin: "ignore",
        stdout: "pipe",
        stderr: "pipe",
        detached: true,
      });
    } catch (e) {
      throw new PlannerError(`planner ${o.runner}: cannot start ${JSON.stringify(cmd.argv[0])}: ${(e as Error).message}`);
    }
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-proc.pid, "SIGKILL");
      } catch {}
    }, timeoutMs);
    const [out, err, code] = await Promise.all([readCapped(proc.stdout, MAX_ANSWER_BYTES), readCapped(proc.stderr, 64 * 1024), proc.exited]);
    clearTimeout(timer);
    const said = err.text.trim().split("\n").slice(-5).join(" / ");
    if (timedOut)
      throw new PlannerError(`planner ${o.runner}: no answer within ${o.env.LOOP_PLAN_TIMEOUT || DEFAULT_TIMEOUT} (killed)${said ? `; it said: ${said}` : ""}`);
    if (code !== 0) throw new PlannerError(`planner ${o.runner} exited ${code}${said ? `: ${said}` : " without a message"}`);
    if (out.cut) throw new PlannerError(`planner ${o.runner}: answer larger than ${MAX_ANSWER_BYTES} bytes: truncated output`);
    if (cmd.answer.from === "file") {
      try {
        return readFileSync(cmd.answer.path, "utf8");
      } catch {
        throw new PlannerError(`planner ${o.runner} wrote no answer file${said ? `; it said: ${said}` : ""}`);
      }
    }
    const got = extractAnswer(cmd.answer.extract, out.text);
    if ("error" in got) throw new PlannerError(`planner ${o.runner}: ${got.error}`);
    return got.text;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
