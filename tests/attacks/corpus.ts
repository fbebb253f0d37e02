// The attack corpus (docs/threat-model.md#the-attack-corpus): every attack a review found or anyone
// thought of, as data (what one is: tests/attacks/attack.ts), run by tests/attacks/corpus.e2e.test.ts
// through the real `loop run` in each of its modes. New attacks are added to one of its files and to
// the table in docs/threat-model.md, not as one-off tests.
import type { Attack } from "./attack.ts";
import { GIT_ATTACKS } from "./attacks-git.ts";
import { LOOP_ATTACKS } from "./attacks-loop.ts";
import { METERING_ATTACKS } from "./attacks-metering.ts";
import { TRACKER_ATTACKS } from "./attacks-tracker.ts";
import { VERIFY_ATTACKS } from "./attacks-verify.ts";

export const CORPUS: readonly Attack[] = [...GIT_ATTACKS, ...VERIFY_ATTACKS, ...LOOP_ATTACKS, ...METERING_ATTACKS, ...TRACKER_ATTACKS];
