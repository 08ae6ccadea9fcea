// Limiter decisions per second: mcp-fleet's MemoryRateLimitStore and RateLimiter.admit() against
// rate-limiter-flexible's RateLimiterMemory, on the same keys, in one process, alternating variants each round.
// Run by bench/run.mjs (node --expose-gc); can also run alone: `node --expose-gc bench/limiter.mjs`.
import { MemoryRateLimitStore, RateLimiter } from '@mcp-fleet/core';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { collect, fmtInt, fmtRatio, max, median, min, pad, padLeft, verdict } from './stats.mjs';

const ACCOUNTS = Number(process.env.BENCH_ACCOUNTS ?? 1000);
const ROUNDS = Number(process.env.BENCH_LIMITER_ROUNDS ?? 7);
const SLICE_MS = Number(process.env.BENCH_LIMITER_SLICE_MS ?? 300);
const BATCH = 2000;
const WINDOW_MS = 60_000;
const OPERATION = 'servers.list';

const accounts = Array.from({ length: ACCOUNTS }, (_, i) => `acct-${String(i).padStart(4, '0')}`);
const principals = accounts.map((account) => ({ account, tier: 'pro', scopes: null }));

/**
 * The variants of one scenario. Each `run(n)` makes n decisions, one account after the other (round-robin,
 * continuing where the previous call stopped), awaiting each as a request handler would, and counts refusals.
 */
function variants({ operationLimit, tierLimit }) {
  // The routes declare each operation's default limit (servers.list: 100) and the fleet hands them to its limiter; a
  // limiter made here is handed the same.
  const limiterOptions = { tiers: { pro: tierLimit }, operations: { [OPERATION]: operationLimit } };

  // 1. Our store, driven the way RateLimiter.admit drives it: window from the clock; the two keys (operation, tier)
  //    built once per account and window and reused, as the limiter caches them; one synchronous decision of both
  //    (`consume`, answered as a value by the memory store; `consumeNow` in builds before issue 26).
  const store = new MemoryRateLimitStore({ now: Date.now });
  const consume = typeof store.consumeNow === 'function' ? store.consumeNow.bind(store) : store.consume.bind(store);
  const keyCache = new Map();
  let keyWindow = -1;
  let storeCursor = 0;
  const storeRun = async (n) => {
    let refused = 0;
    for (let k = 0; k < n; k++) {
      const account = accounts[storeCursor];
      storeCursor = storeCursor + 1 === ACCOUNTS ? 0 : storeCursor + 1;
      const index = Math.floor(Date.now() / WINDOW_MS);
      if (index !== keyWindow) {
        keyCache.clear();
        keyWindow = index;
      }
      let keys = keyCache.get(account);
      if (keys === undefined) {
        const encoded = encodeURIComponent(account);
        keys = { op: `rl:${encoded}:op:${OPERATION}:${index}`, tier: `rl:${encoded}:tier:${index}` };
        keyCache.set(account, keys);
      }
      const counters = [
        { key: keys.op, limit: operationLimit },
        { key: keys.tier, limit: tierLimit },
      ];
      // One road (issue 26): the memory store's `consume` answers a value, not a promise; before it, `consumeNow` was
      // the synchronous twin. Whichever the build has, a promise is awaited only when one comes back.
      const decided = consume(counters, (index + 1) * WINDOW_MS, 1);
      const { allowed } = typeof decided?.then === 'function' ? await decided : decided;
      if (!allowed) refused++;
    }
    return refused;
  };

  // 2. Our store through its async RateLimitStore interface, as any other caller (and the limiter before it cached
  //    keys) drives it: both key strings built anew for every decision, one awaited consume (information only).
  const storeAsync = new MemoryRateLimitStore({ now: Date.now });
  let storeAsyncCursor = 0;
  const storeAsyncRun = async (n) => {
    let refused = 0;
    for (let k = 0; k < n; k++) {
      const account = encodeURIComponent(accounts[storeAsyncCursor]);
      storeAsyncCursor = storeAsyncCursor + 1 === ACCOUNTS ? 0 : storeAsyncCursor + 1;
      const index = Math.floor(Date.now() / WINDOW_MS);
      const counters = [
        { key: `rl:${account}:op:${OPERATION}:${index}`, limit: operationLimit },
        { key: `rl:${account}:tier:${index}`, limit: tierLimit },
      ];
      const { allowed } = await storeAsync.consume(counters, (index + 1) * WINDOW_MS, 1);
      if (!allowed) refused++;
    }
    return refused;
  };

  // 3. RateLimiter.admit end to end: keys, store, binding-limit decision, neverthrow Result.
  const limiter = new RateLimiter(limiterOptions, Date.now);
  let admitCursor = 0;
  const admitRun = async (n) => {
    let refused = 0;
    for (let k = 0; k < n; k++) {
      const principal = principals[admitCursor];
      admitCursor = admitCursor + 1 === ACCOUNTS ? 0 : admitCursor + 1;
      const result = await limiter.admit(principal, OPERATION);
      if (result.isErr()) throw result.error;
      if (!result.value.allowed) refused++;
    }
    return refused;
  };

  // 4. rate-limiter-flexible: consume(key) resolves when allowed and rejects with a RateLimiterRes when refused.
  const rlf = new RateLimiterMemory({ points: operationLimit, duration: WINDOW_MS / 1000 });
  let rlfCursor = 0;
  const rlfRun = async (n) => {
    let refused = 0;
    for (let k = 0; k < n; k++) {
      const key = accounts[rlfCursor];
      rlfCursor = rlfCursor + 1 === ACCOUNTS ? 0 : rlfCursor + 1;
      try {
        await rlf.consume(key);
      } catch (res) {
        if (res instanceof Error) throw res;
        refused++;
      }
    }
    return refused;
  };

  // 5. rate-limiter-flexible doing the same job as admit: two limiters (operation, then tier), the tier one only
  //    consulted when the operation one admits (it cannot refuse both atomically). Information only.
  const rlfOperation = new RateLimiterMemory({ points: operationLimit, duration: WINDOW_MS / 1000 });
  const rlfTier = new RateLimiterMemory({ keyPrefix: 'tier', points: tierLimit, duration: WINDOW_MS / 1000 });
  let rlf2Cursor = 0;
  const rlf2Run = async (n) => {
    let refused = 0;
    for (let k = 0; k < n; k++) {
      const key = accounts[rlf2Cursor];
      rlf2Cursor = rlf2Cursor + 1 === ACCOUNTS ? 0 : rlf2Cursor + 1;
      try {
        await rlfOperation.consume(key);
        await rlfTier.consume(key);
      } catch (res) {
        if (res instanceof Error) throw res;
        refused++;
      }
    }
    return refused;
  };

  return [
    { id: 'store', label: 'ours: MemoryRateLimitStore, as RateLimiter drives it', run: storeRun },
    { id: 'admit', label: 'ours: RateLimiter.admit end to end', run: admitRun },
    { id: 'storeAsync', label: 'ours: MemoryRateLimitStore.consume, fresh keys, awaited', run: storeAsyncRun },
    { id: 'rlf', label: 'theirs: rate-limiter-flexible RateLimiterMemory.consume', run: rlfRun },
    { id: 'rlf2', label: 'theirs: two RateLimiterMemory.consume (operation+tier)', run: rlf2Run },
  ];
}

/** Decisions per second of one variant over one time slice, and the share refused. */
async function slice(variant) {
  collect();
  let ops = 0;
  let refused = 0;
  const start = process.hrtime.bigint();
  let elapsed = 0;
  do {
    refused += await variant.run(BATCH);
    ops += BATCH;
    elapsed = Number(process.hrtime.bigint() - start) / 1e6;
  } while (elapsed < SLICE_MS);
  return { rate: (ops * 1000) / elapsed, refusedShare: refused / ops };
}

async function scenario(title, limits, prefill) {
  const list = variants(limits);
  // Warm-up (JIT) and, for the refused scenario, spend every account's budget first.
  for (const v of list) await v.run(prefill);
  for (const v of list) await slice(v);

  const rates = Object.fromEntries(list.map((v) => [v.id, []]));
  const refused = Object.fromEntries(list.map((v) => [v.id, []]));
  for (let round = 0; round < ROUNDS; round++) {
    // Rotate the order each round so no variant always runs first (fresh heap) or right after another.
    const order = list.map((_, i) => list[(i + round) % list.length]);
    if (round % 2 === 1) order.reverse();
    for (const v of order) {
      const { rate, refusedShare } = await slice(v);
      rates[v.id].push(rate);
      refused[v.id].push(refusedShare);
    }
  }

  const ratio = (id, base) => rates[id].map((r, i) => r / rates[base][i]);
  console.log(`\n${title}`);
  console.log(`  ${pad('variant', 58)} ${padLeft('median/s', 11)} ${padLeft('min..max /s', 23)} ${padLeft('refused', 8)}`);
  for (const v of list) {
    const r = rates[v.id];
    console.log(
      `  ${pad(v.label, 58)} ${padLeft(fmtInt(median(r)), 11)} ${padLeft(`${fmtInt(min(r))}..${fmtInt(max(r))}`, 23)} ${padLeft(`${(median(refused[v.id]) * 100).toFixed(1)}%`, 8)}`,
    );
  }
  const out = {};
  const lines = [
    ['store', 'rlf', 'store as the limiter drives it / rlf consume', true],
    ['admit', 'rlf', 'RateLimiter.admit / rlf consume', true],
    ['admit', 'rlf2', 'RateLimiter.admit / rlf two consumes (same job)', false],
    ['storeAsync', 'rlf', 'store.consume, fresh keys / rlf consume', false],
  ];
  for (const [id, base, label, target] of lines) {
    const rs = ratio(id, base);
    out[`${id}/${base}`] = median(rs);
    console.log(`  ratio ${pad(label, 50)} ${padLeft(fmtRatio(median(rs)), 7)}  (rounds ${fmtRatio(min(rs))}..${fmtRatio(max(rs))})  ${target ? verdict(median(rs), 1) : '(information)'}`);
  }
  return out;
}

export async function runLimiterBench() {
  const started = Date.now();
  console.log(`== 1. Limiter decisions per second (one process; ${ACCOUNTS} accounts round-robin; ${ROUNDS} rounds × ${SLICE_MS} ms per variant, order rotated; ratios = median of per-round ratios)`);
  if (typeof globalThis.gc !== 'function') console.log('  (run with --expose-gc for a gc() between slices)');
  const allowed = await scenario(
    '1a. nothing refused (limits 1e9: operation servers.list, tier pro; rate-limiter-flexible points 1e9)',
    { operationLimit: 1e9, tierLimit: 1e9 },
    20_000,
  );
  const refused = await scenario(
    '1b. most refused (contract defaults: servers.list 100/min, pro 600/min — new RateLimiter({}, Date.now); rate-limiter-flexible points 100; every budget spent before measuring)',
    { operationLimit: 100, tierLimit: 600 },
    ACCOUNTS * 100 + 20_000,
  );
  const seconds = (Date.now() - started) / 1000;
  console.log(`\n  limiter section: ${seconds.toFixed(1)} s`);
  return { allowed, refused, seconds };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await runLimiterBench();
  if (process.send) process.send({ type: 'result', result });
}
