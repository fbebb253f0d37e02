// Comments (stage 5, in progress): placeholder so the step compiles.
import type { StepContext } from "./context.ts";
export async function pollComments(_ctx: StepContext): Promise<void> {}
