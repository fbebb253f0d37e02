// The live tracker query (loop.json tracker.query, docs/trackers.md#live-query): at most once per
// tracker.pollInterval, while the loop runs (or has drained), read the issues loop.json's tracker
// filter selects, the very search `loop add --from-issues` makes (no search of its own: for Jira the
// filter's JQL alone), and append those no item has yet through `loop add`'s own append
// (StepOptions.appendItems: validated, atomic, refused whole), as `{ref, prompt}` (loop's words naming the issue). The next
// step's import makes them items (adding items under the same settings asks no review). A tracker
// that does not answer is said, nothing is written, and it is asked again on a later step; a refused
// append (loop.json edited meanwhile, an id taken) likewise. Nothing is ever removed from loop.json.
import { queryAppends } from "../../decisions/tracker-query.ts";
import { requireItem } from "../../log/projection.ts";
import { BusyError, DefinitionError, RefusedError } from "../../shared/errors.ts";
import { projection, type StepContext } from "../context.ts";
import { forgeLink } from "./link.ts";

export async function trackerQuery(ctx: StepContext): Promise<void> {
  const settings = ctx.def.tracker;
  const appendItems = ctx.options.appendItems;
  if (!settings?.query) return;
  if (!appendItems) {
    // Only `loop run` can write loop.json from a step; a step run otherwise says what it left out.
    ctx.options.log.warn("tracker: live query: this step cannot append to loop.json; nothing was read");
    return;
  }
  // Only a loop that runs (or has drained and would take more): never a paused, stopped or new one.
  const state = projection(ctx).loop.state;
  if (state !== "running" && state !== "drained") return;
  const link = await forgeLink(ctx);
  if (!link?.keyed || link.limited()) return;
  if (Date.now() - link.cache.queriedAt < settings.pollInterval) return;
  ctx.store.assertLease();
  const where = `the ${settings.provider} issues of ${settings.key}`;
  const r = await link.keyed.searchOpenIssues("");
  if (!r.ok) {
    ctx.options.log.warn(`tracker: live query: reading ${where} failed: ${link.failed(r)}; nothing was written, asked again on a later step`);
    return;
  }
  for (const note of r.value.notes) ctx.options.log.warn(`tracker: live query: reading ${where}: ${note}`);
  // loop.json's items now: a loop.json changed while an attempt runs is the deferred one, else the
  // items the log has imported and not withdrawn (loop.json was imported at the start of the step).
  const p = projection(ctx);
  const existingRefs = ctx.deferred
    ? ctx.deferred.parsed.def.items.map((it) => it.ref)
    : p.order.map((id) => requireItem(p, id)).flatMap((it) => (it.status === "withdrawn" ? [] : [it.def.ref]));
  const appends = queryAppends({
    provider: settings.provider,
    key: settings.key,
    // Only the numbers: the issue's text reaches the agent fenced, as the handoff's issue context.
    issues: r.value.issues.map((i) => ({ number: i.number })),
    existingRefs,
  });
  if (appends.length) {
    let added: { id: string; ref: string | null }[];
    try {
      added = await appendItems(appends.map((a) => ({ ...a, from: `issue ${a.ref} (tracker.query)` })));
    } catch (err) {
      if (!(err instanceof RefusedError || err instanceof DefinitionError || err instanceof BusyError)) throw err;
      ctx.options.log.warn(`tracker: live query: could not append ${where} to loop.json: ${(err as Error).message}; tried again on a later step`);
      return;
    }
    ctx.options.log.info(
      `tracker: live query: appended ${added.length} item${added.length === 1 ? "" : "s"} to loop.json (${added.map((a) => `${a.id} ${a.ref}`).join(", ")}); the next step imports them`,
    );
  } else ctx.options.log.debug(`tracker: live query: no issue of ${where} matching loop.json's filter is new`);
  link.cache.queriedAt = Date.now();
}
