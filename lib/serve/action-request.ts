// The body of POST /api/loops/<name>/actions (docs/cli/loop-serve.md#actions), read and checked
// before anything is done, and the HTTP status of `loop ctl`'s answer to it. Pure.
import { type LoopError, StoreError } from "../shared/errors.ts";

/** What an action asks (docs/cli/loop-serve.md#actions): the body of POST /api/loops/<name>/actions, checked. */
interface ActionRequest {
  verb: string;
  item?: string;
  text?: string;
  reason?: string;
  confirm?: string;
}

/** Carries out an action on a loop as `actor`, answering `loop ctl --json`'s document (lib/serve/actions.ts). */
export type Act = (loop: { root: string; stateRoot: string }, a: ActionRequest, actor: string) => Promise<unknown>;

const ACTION_KEYS = ["verb", "item", "text", "reason", "confirm", "csrf"] as const;

/** The body's fields, or what is wrong with them; and its `csrf`, checked before anything else is said about it. */
export function actionRequest(text: string): { a: ActionRequest; csrf: unknown } | { problem: string; csrf: unknown } {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return { problem: 'the body is not JSON: expected {"verb": …, "item"?: …, "text"?: …, "confirm"?: …}', csrf: undefined };
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) return { problem: "the body is not a JSON object", csrf: undefined };
  const d = doc as Record<string, unknown>;
  const problem = (p: string) => ({ problem: p, csrf: d.csrf });
  for (const k of Object.keys(d))
    if (!(ACTION_KEYS as readonly string[]).includes(k)) return problem(`unknown field ${JSON.stringify(k)} (fields: ${ACTION_KEYS.join(", ")})`);
  for (const k of ACTION_KEYS) if (d[k] !== undefined && typeof d[k] !== "string") return problem(`${k} must be a string`);
  if (typeof d.verb !== "string") return problem("verb is required");
  const a: ActionRequest = { verb: d.verb };
  for (const k of ["item", "text", "reason", "confirm"] as const) if (typeof d[k] === "string") a[k] = d[k];
  return { a, csrf: d.csrf };
}

/** The HTTP status of an error of `loop ctl`: its error code decides (docs/cli/loop-serve.md#actions). */
export function actionStatus(err: LoopError): number {
  if (err.code === "refused") return 409;
  if (err.code === "busy") return 503;
  if (err.code === "usage" || err.code === "declined" || err.code === "invalid_ref" || err.code === "unknown_item") return 400;
  return err instanceof StoreError ? 503 : 500;
}
