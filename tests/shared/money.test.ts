// Dollars for people (docs/spend.md#how-figures-are-shown): cents, two significant digits under a cent.
import { expect, test } from "bun:test";
import { dollarsText } from "../../lib/shared/money.ts";

test("cents at a cent and over; two significant digits under one, never $0.00 for a cost", () => {
  expect([0, 0.42, 12.3, 0.01, 0.0027, 0.00271, 0.0099, 0.000041, 0.00000123, -0.0027, 1234.5, 0.00999].map(dollarsText)).toEqual([
    "$0.00",
    "$0.42",
    "$12.30",
    "$0.01",
    "$0.0027",
    "$0.0027",
    "$0.0099",
    "$0.000041",
    "$0.0000012",
    "-$0.0027",
    "$1234.50",
    "$0.01",
  ]);
});
