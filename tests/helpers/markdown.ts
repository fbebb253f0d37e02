// Reading the markdown loop writes for agents (handoff.md, reply.md) as an agent would.

/** The lines outside every fenced block (a fence closes only with a line of its own length; its own lines are not counted): what a reader takes as the document's. */
export function linesOutsideFences(md: string): string[] {
  const out: string[] = [];
  let open: string | null = null;
  for (const line of md.split("\n")) {
    const marks = /^(`{3,})/.exec(line)?.[1] ?? null;
    if (open === null && marks) open = marks;
    else if (open !== null && line === open) open = null;
    else if (open === null) out.push(line);
  }
  return out;
}

/** The `## ` headings outside every fenced block: the sections a reader sees. */
export function headingsOutsideFences(md: string): string[] {
  return linesOutsideFences(md).filter((line) => line.startsWith("## "));
}
