// Text from outside, printed at a terminal: control characters escaped, visibly; nothing else changed.
import { expect, test } from "bun:test";
import { printable, printableLines } from "../../lib/shared/printable.ts";

test.each([
  ["plain text and non-ASCII stay", "naïve ✓ \u{1F600}", "naïve ✓ \u{1F600}"],
  ["an SGR colour", "\u001b[31mRED\u001b[0m", "\\u001b[31mRED\\u001b[0m"],
  ["bell, NUL, DEL", "a\u0007b\u0000c\u007f", "a\\u0007b\\u0000c\\u007f"],
  ["C1 CSI", "x\u009b2Jy", "x\\u009b2Jy"],
  ["line breaks and tabs in one field", "a\nb\r\tc", "a\\nb\\r\\tc"],
  ["bidi override and isolate (text that reads otherwise than it is)", "a\u202eb\u2066c", "a\\u202eb\\u2066c"],
  ["zero-width space, BOM, line separator", "a\u200bb\ufeffc\u2028d", "a\\u200bb\\ufeffc\\u2028d"],
  ["an emoji ZWJ sequence shows its joiner (zero-width characters can carry a hidden message)", "\u{1F468}\u200d\u{1F469}", "\u{1F468}\\u200d\u{1F469}"],
  ["tag characters (invisible text), soft hyphen, Hangul filler", "a\u{E0041}\u{E0042}b\u00adc\u3164", "a\\u{e0041}\\u{e0042}b\\u00adc\\u3164"],
])("printable: %s", (_name, input, want) => {
  expect(printable(input)).toBe(want);
});

test("printableLines keeps the line breaks of a block", () => {
  expect(printableLines("one\u001b]0;title\u0007\ntwo")).toBe("one\\u001b]0;title\\u0007\ntwo");
});
