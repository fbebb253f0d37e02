// Reading the markdown loop writes for agents (handoff.md, reply.md) as an agent would.

/** The `## ` headings outside every fenced block (a fence closes only with a line of its own length): the sections a reader sees. */
export function headingsOutsideFences(md: string): string[] {
  const out: string[] = [];
  let open: string | null = null;
  for (const line of md.split("\n")) {
    const marks = /^(`{3,})/.exec(line)?.[1] ?? null;
    if (open === null && marks) open = marks;
    else if (open !== null && line === open) open = null;
    else if (open === null && line.startsWith("## ")) out.push(line);
  }
  return out;
}
