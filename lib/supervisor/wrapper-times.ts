// When a wrapper saw its process start and end, from its own files (started.json's `at`, exit.json's
// `endedAt`, or `at` where an older wrapper wrote no `endedAt`; the verify's files likewise): the
// phases' own times, which a step observing them a tick later cannot know (docs/events.md#session_ended).
// The files are in a folder the agent can write, so each time is taken only when it reads as a time
// within the phase's bounds (from its reservation to now); anything else is null.
import { join } from "node:path";
import { readJsonOrNull } from "../shared/fsutil.ts";
import { type WrapperKind, wrapperFiles } from "./session-wrapper.ts";

interface WrapperTimes {
  started: string | null;
  ended: string | null;
}

/** A time as recorded (ISO 8601, UTC), or null when `v` is none or falls outside [from, to]. */
function boundedTime(v: unknown, from: number, to: number): string | null {
  if (typeof v !== "string" || v.length > 40) return null;
  const t = Date.parse(v);
  return Number.isFinite(t) && t >= from && t <= to ? new Date(t).toISOString() : null;
}

export function readWrapperTimes(dir: string, kind: WrapperKind, bounds: { from: number; to: number }): WrapperTimes {
  const files = wrapperFiles(kind);
  const started = readJsonOrNull<{ at?: unknown }>(join(dir, files.started));
  const exit = readJsonOrNull<{ at?: unknown; endedAt?: unknown }>(join(dir, files.exit));
  const s = boundedTime(started?.at, bounds.from, bounds.to);
  const e = boundedTime(exit?.endedAt ?? exit?.at, s === null ? bounds.from : Date.parse(s), bounds.to);
  return { started: s, ended: e };
}
