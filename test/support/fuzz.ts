/**
 * The fuzz tests' settings (test/http/fuzz.test.ts, test/http/openapi-fuzz.test.ts): a fixed seed and bounded runs
 * for `npm test`; `FUZZ_RUNS=<n>` for a longer run (`npm run fuzz`), `FUZZ_SEED=<n>` for another sequence. A failure
 * prints the seed and the path of its counterexample (fast-check's report): set both to replay it.
 */
const envInteger = (name: string): number | undefined => {
  const value = Number.parseInt(process.env[name] ?? '', 10);
  return Number.isSafeInteger(value) && value > 0 ? value : undefined;
};

/** Runs per property: `FUZZ_RUNS`, else `fallback`. */
export const fuzzRuns = (fallback: number): number => envInteger('FUZZ_RUNS') ?? fallback;

/** The seed: `FUZZ_SEED`, else `fallback`. */
export const fuzzSeed = (fallback: number): number => envInteger('FUZZ_SEED') ?? fallback;

/** A test's timeout: a minute, or more for a long run (`perRun` ms a run). */
export const fuzzTimeout = (runs: number, perRun = 300): number => Math.max(60_000, runs * perRun);
