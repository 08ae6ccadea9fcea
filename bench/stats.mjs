// Small helpers shared by the benchmarks: medians, ratios and fixed-width formatting.
import { readFileSync } from 'node:fs';

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

/**
 * A figure measured once per round: `{ median, low, high, spreadPct }`, the spread being the largest distance of a
 * round from the median, in % of the median (`±6.2%` when the rounds lie within 6.2 % of it).
 */
export function figure(perRound) {
  const m = median(perRound);
  const low = min(perRound);
  const high = max(perRound);
  return { median: m, low, high, spreadPct: m === 0 ? 0 : (100 * Math.max(high - m, m - low)) / Math.abs(m), rounds: perRound.length };
}

/**
 * Section 2's ratio of one round between two variants, from their parts (each `{ requests, elapsedMs }`, in the order
 * they ran): the parts taken two by two as the mirror order pairs them (A B C C B A: a variant's parts 1 and 2 are
 * centred on the same instant as every other variant's), each pair's req/s ratio, and the median of those. With 4
 * parts that is the mean of 2 pair ratios; with 8, the mean of the middle 2 of 4, so a burst of other work or a
 * collection that spoils one pair of one variant does not move the round.
 */
export function roundRatio(oursParts, theirsParts) {
  const pairRps = (parts) => {
    const out = [];
    for (let k = 0; k + 1 < parts.length; k += 2) out.push(((parts[k].requests + parts[k + 1].requests) * 1000) / (parts[k].elapsedMs + parts[k + 1].elapsedMs));
    return out;
  };
  const ours = pairRps(oursParts);
  const theirs = pairRps(theirsParts);
  return median(ours.map((r, i) => r / theirs[i]));
}

/** Prints figures without a target (`info`), one line each: `(information) <label>  <figure>`. */
export function printInformation(entries, indent = '  ') {
  for (const e of entries) console.log(`${indent}${pad(`(information) ${e.label}`, 66)} ${fmtRatioFigure(e.builds.this)}`);
}

/** `±6.2%` */
export function fmtSpread(f) {
  return `±${f.spreadPct.toFixed(1)}%`;
}

/**
 * The verdict on a target, from the whole range of the rounds: "met on all rounds" when every round is on the right
 * side, "met on the median only" when the median is and some round is not, "missed" otherwise. `atMost` for
 * ceilings (added ms), else the target is a floor (a ratio ≥ target).
 */
export function rangeVerdict(f, target, { atMost = false, unit = '×' } = {}) {
  const ok = (v) => (atMost ? v <= target : v >= target);
  const what = `${atMost ? '≤' : '≥'} ${atMost && unit === ' ms' ? `+${target}` : target}${unit}`;
  if (ok(atMost ? f.high : f.low)) return `met on all rounds (${what})`;
  if (ok(f.median)) return `met on the median only (${what})`;
  return `missed (${what})`;
}

/** `0.93× (rounds 0.88×..0.97×, ±5.4%)` */
export function fmtRatioFigure(f) {
  return `${fmtRatio(f.median)} (rounds ${fmtRatio(f.low)}..${fmtRatio(f.high)}, ${fmtSpread(f)})`;
}

/** `+0.12 ms (rounds +0.08..+0.15)` */
export function fmtAddedFigure(f) {
  return `${fmtAddedMs(f.median)} ms (rounds ${fmtAddedMs(f.low)}..${fmtAddedMs(f.high)})`;
}

/**
 * Prints target figures, one line per build. An entry is `{ label, kind, target, builds: { this, base? }, ab? }`:
 * kind `ratio` (builds[b] a figure of per-round ratios, target a floor), `added` (builds[b] a figure of per-round
 * added milliseconds, target a ceiling, and `ratios[b]` the per-round time ratios whose spread is quoted), or `ms`
 * (builds[b] a figure of per-round p50 times in ms, target a ceiling). `ab` is
 * `{ what, figure }`: this build against the baseline build, per round. Answers the lines, for the summary.
 */
export function printFigures(entries, indent = '  ') {
  const lines = [];
  for (const e of entries) {
    const builds = Object.keys(e.builds);
    for (const b of builds) {
      const f = e.builds[b];
      const label = b === 'this' ? e.label : `${' '.repeat(Math.min(4, e.label.length))}baseline build`;
      const value =
        e.kind === 'added'
          ? `${fmtAddedFigure(f)}, time ×${e.ratios[b].median.toFixed(2)} ${fmtSpread(e.ratios[b])}`
          : e.kind === 'ms'
            ? `${fmtMs(f.median)} ms (rounds ${fmtMs(f.low)}..${fmtMs(f.high)}, ${fmtSpread(f)})`
            : fmtRatioFigure(f);
      const how = e.kind === 'added' ? { atMost: true, unit: ' ms' } : e.kind === 'ms' ? { atMost: true, unit: ' ms p50' } : {};
      const text = `${pad(label, 66)} ${pad(value, 44)} ${rangeVerdict(f, e.target, how)}`;
      lines.push(text);
      // The same comparison in server CPU per request (theirs / ours): in section 2 with the verdict it would give; in
      // section 8 as information, since the database's work is in neither server's CPU.
      const cpu = e.cpuBuilds?.[b];
      if (cpu !== undefined) {
        const note = e.section === 2 ? `${rangeVerdict(cpu, e.target)} (CPU view)` : '(information: the database\'s work is not in it)';
        lines.push(`${pad(`${' '.repeat(4)}the same in server CPU per request (CPU view)`, 66)} ${pad(fmtRatioFigure(cpu), 44)} ${note}`);
      }
    }
    if (e.ab !== undefined) lines.push(`${pad(`${' '.repeat(4)}this / baseline build (${e.ab.what})`, 66)} ${fmtRatioFigure(e.ab.figure)}`);
    if (e.cpuAb !== undefined) lines.push(`${pad(`${' '.repeat(4)}this / baseline build, CPU view`, 66)} ${fmtRatioFigure(e.cpuAb)}`);
  }
  for (const line of lines) console.log(`${indent}${line}`);
  return lines;
}

/**
 * Milliseconds this process's JavaScript thread has waited, runnable, for a core (Linux: /proc/self/schedstat, its
 * second figure, in ns); NaN elsewhere. Over a measurement it says how much other work took the core from the bench.
 */
export function runQueueWaitMs() {
  try {
    return Number(readFileSync('/proc/self/schedstat', 'utf8').split(' ')[1]) / 1e6;
  } catch {
    return Number.NaN;
  }
}

/**
 * The 95 % (or `confidence`) interval of the median of `values`, from order statistics (distribution-free): the k-th
 * smallest and k-th largest values, k the largest rank with P(Binomial(n, ½) < k) ≤ (1 − confidence) / 2. With 20
 * values it runs from the 6th to the 15th. `{ low, high }`; the whole range when there are too few values (n < 6).
 */
export function medianInterval(values, confidence = 0.95) {
  const sorted = [...values].sort((a, b) => a - b);
  const n = sorted.length;
  const tail = (1 - confidence) / 2;
  let k = 0;
  let cumulative = 0;
  let term = 0.5 ** n; // P(X = 0)
  for (let i = 0; i < n; i++) {
    cumulative += term;
    if (cumulative > tail) break;
    k = i + 1; // P(X ≤ i) ≤ tail: the (i+1)-th smallest value is a lower bound
    term = (term * (n - i)) / (i + 1);
  }
  if (k === 0) return { low: sorted[0], high: sorted[n - 1] };
  return { low: sorted[k - 1], high: sorted[n - k] };
}
