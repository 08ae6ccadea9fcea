import type { TracingChannel } from 'node:diagnostics_channel';
import { Err, Ok, type Result, ResultAsync } from 'neverthrow';
import { isFleetError } from '../errors/fleet-error.js';
import type { Settled } from './channels.js';

/** Reads what a message may show of a call's value (a status, `isError`), never the value itself. */
export type Describe<M, V> = (message: M, value: V) => void;

/**
 * Runs `call` as one traced action of `channel`, whatever it answers: a value, a neverthrow `Result`, a `ResultAsync`
 * or a promise. `start` and `end` around the call (with the channel's bound stores, so a span started on `start` is
 * the active one during the call), then `asyncStart` and `asyncEnd` when the answer settles later; `error` for a
 * throw, a rejection or an `Err` (its `FleetError`, never the value). The answer is handed back as it came (a
 * `ResultAsync` stays one). Call it only when `channel.hasSubscribers`: the caller builds `message` and `call` then.
 */
export function traced<M extends Settled, R>(channel: TracingChannel<unknown, M>, message: M, call: () => R, describe?: Describe<M, unknown>): R {
  return channel.start.runStores(message, () => {
    try {
      const answer = call();
      if (answer instanceof ResultAsync) {
        // `then` of a ResultAsync is its promise's: a real `Promise`.
        const settled = answer.then((result) => later(channel, message, result, describe)) as Promise<Result<unknown, unknown>>;
        return new ResultAsync(settled) as R;
      }
      if (isPromise(answer)) return answer.then((value) => later(channel, message, value, describe), (error: unknown) => laterFailed(channel, message, error)) as R;
      settle(channel, message, answer, describe);
      return answer;
    } catch (error) {
      failed(channel, message, error);
      throw error;
    } finally {
      channel.end.publish(message);
    }
  });
}

function isPromise(value: unknown): value is PromiseLike<unknown> {
  return value instanceof Promise;
}

/** Marks the outcome of a settled answer; an `Err` publishes `error`. */
function settle<M extends Settled>(channel: TracingChannel<unknown, M>, message: M, answer: unknown, describe: Describe<M, unknown> | undefined): void {
  if (answer instanceof Err) {
    failed(channel, message, answer.error);
    return;
  }
  const value = answer instanceof Ok ? answer.value : answer;
  message.outcome = 'ok';
  describe?.(message, value);
  if ((message.outcome as string) === 'error') channel.error.publish(message);
}

function failed<M extends Settled>(channel: TracingChannel<unknown, M>, message: M, error: unknown): void {
  message.outcome = 'error';
  message.error = error;
  if (isFleetError(error)) message.error_code = error.code;
  channel.error.publish(message);
}

function later<M extends Settled, V>(channel: TracingChannel<unknown, M>, message: M, value: V, describe: Describe<M, unknown> | undefined): V {
  settle(channel, message, value, describe);
  channel.asyncStart.publish(message);
  channel.asyncEnd.publish(message);
  return value;
}

function laterFailed<M extends Settled>(channel: TracingChannel<unknown, M>, message: M, error: unknown): never {
  failed(channel, message, error);
  channel.asyncStart.publish(message);
  channel.asyncEnd.publish(message);
  throw error;
}
