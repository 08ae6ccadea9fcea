// Small helpers shared by the benchmarks: medians, ratios and fixed-width formatting.

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** The `q` quantile (0..1) of `values`, nearest rank: quantile(xs, 0.99) is the p99. */
export function quantile(values, q) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

export const min = (values) => Math.min(...values);
export const max = (values) => Math.max(...values);

/** 1234567 -> "1,234,567" */
export function fmtInt(n) {
  return Math.round(n).toLocaleString('en-US');
}

/** 1.2345 -> "1.23×" */
export function fmtRatio(r) {
  return `${r.toFixed(2)}×`;
}

/** 1.2345 -> "1.23" (milliseconds) */
export function fmtMs(ms) {
  return ms.toFixed(2);
}

/** 1.2345 -> "+1.23", -0.5 -> "−0.50" (a difference in milliseconds) */
export function fmtAddedMs(ms) {
  return `${ms >= 0 ? '+' : '−'}${Math.abs(ms).toFixed(2)}`;
}

export function pad(text, width) {
  const s = String(text);
  return s.length >= width ? s : s + ' '.repeat(width - s.length);
}

export function padLeft(text, width) {
  const s = String(text);
  return s.length >= width ? s : ' '.repeat(width - s.length) + s;
}

/** Runs `gc()` when node was started with --expose-gc, so one variant's garbage is not collected on another's time. */
export function collect() {
  if (typeof globalThis.gc === 'function') globalThis.gc();
}

/** `target` met? A mark for the summary lines. */
export function verdict(ratio, target) {
  return ratio >= target ? `meets target ≥ ${target}×` : `misses target ≥ ${target}×`;
}

/** For the targets that are a ceiling (added ms, round trips, a time ratio): met when `value` ≤ `target`. */
export function verdictAtMost(value, target, unit = '') {
  return value <= target ? `meets target ≤ ${target}${unit}` : `misses target ≤ ${target}${unit}`;
}

/**
 * Times `variant.run()` of every variant in `rounds` rounds of `batch` passes; a pass runs each variant once, in an
 * order rotated (and reversed every other pass) so that no variant always goes first or follows the same neighbour.
 * Runs of different variants are thus milliseconds apart, and drift in the machine hits them alike. Each timed run
 * starts after one turn of the event loop (`settled`): the end of the previous run's exchange (undici and the SDK
 * closing its response stream, which outlives the answer) then lands before the clock starts, instead of in whichever
 * variant happens to come next.
 * Answers the median time of each round, per variant id.
 */
export async function interleavedRounds(list, rounds, batch) {
  const perRound = Object.fromEntries(list.map((v) => [v.id, []]));
  for (let round = 0; round < rounds; round++) {
    collect();
    const times = Object.fromEntries(list.map((v) => [v.id, []]));
    for (let pass = 0; pass < batch; pass++) {
      const order = list.map((_, i) => list[(i + pass + round) % list.length]);
      if (pass % 2 === 1) order.reverse();
      for (const v of order) {
        await settled();
        const start = performance.now();
        await v.run();
        times[v.id].push(performance.now() - start);
      }
    }
    for (const v of list) perRound[v.id].push(median(times[v.id]));
  }
  return perRound;
}

/** One turn of the event loop: what the last run left queued (I/O callbacks, stream ends) runs before the next. */
export function settled() {
  return new Promise((resolve) => setImmediate(resolve));
}
