/**
 * Response times in bounded space: a sparse histogram of logarithmic bins, each 10% wider than the one below, from
 * 1 ms to past any timeout (`MAX_BIN`, about 9 minutes, holds everything longer). A digest has at most `MAX_BIN + 1`
 * entries however many samples it counts, digests of several five-minute buckets add up by bin, and a percentile read
 * from them is the upper edge of its bin: at most 10% above the true value, never below it.
 */
export type LatencyDigest = Record<string, number>;

const GROWTH = 1.1;
const LOG_GROWTH = Math.log(GROWTH);
export const MAX_BIN = 140;

/** The bin of a response time: 0 for 1 ms and less, then `ceil(log1.1(ms))`. */
export function binOf(ms: number): number {
  if (!(ms > 1)) return 0;
  return Math.min(MAX_BIN, Math.ceil(Math.log(ms) / LOG_GROWTH - 1e-9));
}

/** The upper edge of a bin, in whole milliseconds. */
function edgeOf(bin: number): number {
  return Math.round(GROWTH ** bin);
}

/** `digest` (a copy of its own, or nothing yet) with one more sample counted. */
export function withSample(digest: LatencyDigest | undefined, ms: number): LatencyDigest {
  const counted = digest ?? {};
  const bin = String(binOf(ms));
  counted[bin] = (counted[bin] ?? 0) + 1;
  return counted;
}

/** Adds `from` into `into`. */
export function addDigest(into: LatencyDigest, from: LatencyDigest | undefined): LatencyDigest {
  if (from !== undefined) for (const bin in from) into[bin] = (into[bin] ?? 0) + (from[bin] ?? 0);
  return into;
}

/** p50 and p95 of a digest, with how many samples it holds; `null` when it holds none. */
export function percentiles(digest: LatencyDigest): { p50: number; p95: number; count: number } | null {
  const bins = Object.keys(digest)
    .map(Number)
    .sort((a, b) => a - b);
  let count = 0;
  for (const bin of bins) count += digest[String(bin)] ?? 0;
  if (count === 0) return null;
  const at = (share: number) => {
    const rank = Math.ceil(share * count);
    let seen = 0;
    for (const bin of bins) {
      seen += digest[String(bin)] ?? 0;
      if (seen >= rank) return edgeOf(bin);
    }
    return edgeOf(bins[bins.length - 1] ?? 0);
  };
  return { p50: at(0.5), p95: at(0.95), count };
}
