// Branch names: an item's branch, the loop's default merge target, and which names git accepts
// (a subset of git check-ref-format). Pure.

/** The default merge target of the loop `loopName`. */
export function defaultTarget(loopName: string): string {
  return `loop/${loopName}/landed`;
}

/** The branch an item works on. Every item branch of a loop is under `loop/<name>/item/`. */
export function itemBranch(loopName: string, itemId: string): string {
  return `loop/${loopName}/item/${itemId}`;
}

/** Why `name` is not a usable git branch name (a subset of git check-ref-format), or undefined. */
export function branchNameProblem(name: string): string | undefined {
  const why = branchNameReason(name);
  return why && `${JSON.stringify(name)} is not a valid git branch name: ${why}`;
}

/** What makes `name` unusable as a git branch name, or undefined. */
export function branchNameReason(name: string): string | undefined {
  if (name === "") return "is empty";
  if (/[\x00-\x20\x7f]/.test(name)) return "contains whitespace or a control character";
  if (/[~^:?*[\\]/.test(name)) return "contains one of ~ ^ : ? * [ \\";
  if (name.includes("..")) return "contains '..'";
  if (name.includes("@{") || name === "@") return "contains '@{' or is '@'";
  if (name.startsWith("-")) return "starts with '-'";
  if (name.endsWith(".")) return "ends with '.'";
  const parts = name.split("/");
  if (parts.some((p) => p === "")) return "has an empty path component (leading, trailing or double '/')";
  if (parts.some((p) => p.startsWith("."))) return "has a component starting with '.'";
  if (parts.some((p) => p.endsWith(".lock"))) return "has a component ending in '.lock'";
  return undefined;
}
