import { err, ok, type Ok, Result, ResultAsync } from 'neverthrow';
import { type FleetError, storageUnavailable } from '../errors/fleet-error.js';
import { type StoreMessage, storeChannel } from '../trace/channels.js';
import { traced } from '../trace/traced.js';

/**
 * What an operation answers: a `Result` when every step answered at once (the stores held in this process), a
 * `ResultAsync` as soon as one step handed it a promise. One road for both: an operation goes on synchronously until
 * a step is asynchronous (graphql-js `PromiseOrValue`, hono's `compose`). The embedder's API turns it into a
 * `ResultAsync` (`toAsync`); the HTTP handler awaits it only when it is one.
 */
export type Ran<T, E = FleetError> = Result<T, E> | ResultAsync<T, E>;

/** `f` on the value of `ran`, at once when `ran` is a `Result`; an error passes through. (Not named `then`: a module
 * exporting `then` is itself a thenable to `await import(…)`.) */
export function chain<T, E, U, F>(ran: Ran<T, E>, f: (value: T) => Ran<U, F>): Ran<U, E | F> {
  if (ran instanceof ResultAsync) return ran.andThen(f);
  return ran.isOk() ? f(ran.value) : err(ran.error);
}

/** `ran` with its value through `f` (which must not return a promise), at once when `ran` is a `Result`. */
export function chainMap<T, E, U>(ran: Ran<T, E>, f: (value: T) => U): Ran<U, E> {
  if (ran instanceof ResultAsync) return ran.andThen(okWith(f));
  return ran.isOk() ? ok(f(ran.value)) : err(ran.error);
}

/** `f` on the error of `ran` only, at once when `ran` is a `Result`; a success passes through unchanged. */
export function otherwise<T, E, U, F>(ran: Ran<T, E>, f: (error: E) => Ran<U, F>): Ran<T | U, F> {
  if (ran instanceof ResultAsync) return recover(ran, f);
  return ran.isOk() ? ok(ran.value) : f(ran.error);
}

/** Both values side by side: a `Result` when both are, else both awaited together. */
export function both<A, B, E>(a: Ran<A, E>, b: Ran<B, E>): Ran<[A, B], E> {
  if (!(a instanceof ResultAsync) && !(b instanceof ResultAsync)) return a.andThen((x) => b.map((y): [A, B] => [x, y]));
  return ResultAsync.combine([toAsync(a), toAsync(b)]) as unknown as ResultAsync<[A, B], E>;
}

/** The values of every `Ran` in order: a `Result` when each is one. */
export function all<T, E>(rans: readonly Ran<T, E>[]): Ran<T[], E> {
  if (!rans.some((ran) => ran instanceof ResultAsync)) return Result.combine(rans as Result<T, E>[]);
  return ResultAsync.combine(rans.map(toAsync)) as unknown as ResultAsync<T[], E>;
}

/** `ran` as the embedder's API answers: a `ResultAsync` either way. */
export function toAsync<T, E>(ran: Ran<T, E>): ResultAsync<T, E> {
  return ran instanceof ResultAsync ? ran : new ResultAsync(Promise.resolve(ran));
}

/**
 * A call to a port that may answer a value or a promise (`T | Promise<T>`): a value is a `Result` at once, a promise
 * a `ResultAsync`; a synchronous throw and a rejected promise alike are STORAGE_UNAVAILABLE. With `port` and `method`
 * (a storage port's call: `records`, `index`, `ratelimit`) it is traced on `mcp-fleet:store` when anyone listens; with
 * no subscriber `call` is made directly, and nothing (no closure, no message) is made for the trace point. The trace
 * point sits here, not in a wrapper around the port call, so that a store call is the same code with or without it
 * but for the guard (one call less for V8 to inline on every road to the stores).
 */
export function portCall<T>(call: () => T | PromiseLike<T>, port?: StoreMessage['port'], method?: string): Ran<T> {
  let answer: T | PromiseLike<T>;
  try {
    answer = storeChannel.hasSubscribers && port !== undefined ? traced(storeChannel, { port, method: method as string }, call) : call();
  } catch (cause) {
    return err(storageUnavailable(cause));
  }
  if (isPromiseLike(answer)) return ResultAsync.fromPromise(Promise.resolve(answer), storageUnavailable);
  return ok(answer);
}

function isPromiseLike<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}

/**
 * `result.andThen(okWith(f))` is `result.map(f)` for a `ResultAsync`, in one step. neverthrow 8's `ResultAsync.map`
 * runs each callback through a generator-based awaiter (its build targets ES2016): about 5 µs a call on Node 20
 * against 0.3 µs for `andThen`, paid by every result that passes through, and a request's path has dozens
 * (docs/performance.md). `f` must not return a promise (`map` would wait for it; this would not).
 */
export function okWith<T, U>(f: (value: T) => U): (value: T) => Ok<U, never> {
  return (value) => ok(f(value));
}

/**
 * `result.orElse(f)` in one step (`orElse` goes through the same awaiter as `map`, see `okWith`): `f` runs on an
 * error only; a success passes through unchanged.
 */
function recover<T, E, U, F>(result: ResultAsync<T, E>, f: (error: E) => Result<U, F> | ResultAsync<U, F>): ResultAsync<T | U, F> {
  const settled = async (): Promise<Result<T | U, F>> => {
    const outcome = await result;
    return outcome.isOk() ? ok(outcome.value) : await f(outcome.error);
  };
  return new ResultAsync(settled());
}
