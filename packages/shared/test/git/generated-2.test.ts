/**
 * Rule (Proof): repositories built from random sequences of git operations (seeds 50-99)
 * round-trip exactly; see generated.ts. The 200 seeds are split over four files.
 */
import { cleanup } from "./fixture";
import { describeGenerated } from "./generated";

afterAll(cleanup);

describe("generated repositories round-trip", () => {
  describeGenerated(50, 100);
});
