import { AsyncLocalStorage } from 'node:async_hooks';
import { tracingChannel } from 'node:diagnostics_channel';
import { err, errAsync, ok, okAsync, ResultAsync } from 'neverthrow';
import { afterEach, describe, expect, it } from 'vitest';
import { FleetError } from '../errors/fleet-error.js';
import type { Settled } from './channels.js';
import { traced } from './traced.js';

interface Message extends Settled {
  name: string;
  status?: number;
}

const channel = tracingChannel<unknown, Message>('mcp-fleet:test.traced');
const events: [string, Message][] = [];
const handlers = Object.fromEntries(
  (['start', 'end', 'asyncStart', 'asyncEnd', 'error'] as const).map((event) => [event, (message: Message) => events.push([event, { ...message }])]),
) as unknown as Parameters<typeof channel.subscribe>[0];

const subscribed = () => {
  channel.subscribe(handlers);
  return () => channel.unsubscribe(handlers);
};
let off: (() => void) | undefined;
afterEach(() => {
  off?.();
  events.length = 0;
});

const kinds = () => events.map(([event]) => event);
const last = () => events.at(-1)?.[1];
const notFound = () => new FleetError('SERVER_NOT_FOUND');

describe('traced', () => {
  it('a value or an Ok answered at once: start, end, with the outcome at end; the answer as it came', () => {
    off = subscribed();
    expect(traced(channel, { name: 'value' }, () => 42)).toBe(42);
    const result = ok(1);
    expect(traced(channel, { name: 'ok' }, () => result)).toBe(result);
    expect(kinds()).toEqual(['start', 'end', 'start', 'end']);
    expect(events[1]?.[1]).toEqual({ name: 'value', outcome: 'ok' });
  });

  it('an Err answered at once publishes error with its code, then end', () => {
    off = subscribed();
    const result = traced(channel, { name: 'err' }, () => err(notFound()));
    expect(result.isErr()).toBe(true);
    expect(kinds()).toEqual(['start', 'error', 'end']);
    expect(last()).toMatchObject({ outcome: 'error', error_code: 'SERVER_NOT_FOUND' });
  });

  it('a throw publishes error and end, and is thrown on', () => {
    off = subscribed();
    expect(() =>
      traced(channel, { name: 'throws' }, () => {
        throw new Error('boom');
      }),
    ).toThrow('boom');
    expect(kinds()).toEqual(['start', 'error', 'end']);
  });

  it('a ResultAsync stays one, settled later: asyncStart and asyncEnd; an Err on error', async () => {
    off = subscribed();
    const answered = traced(channel, { name: 'async ok' }, () => okAsync(7));
    expect(answered).toBeInstanceOf(ResultAsync);
    expect(kinds()).toEqual(['start', 'end']);
    expect(events[1]?.[1].outcome).toBeUndefined();
    expect((await answered)._unsafeUnwrap()).toBe(7);
    expect(kinds()).toEqual(['start', 'end', 'asyncStart', 'asyncEnd']);
    events.length = 0;
    const failed = await traced(channel, { name: 'async err' }, () => errAsync(notFound()));
    expect(failed.isErr()).toBe(true);
    expect(kinds()).toEqual(['start', 'end', 'error', 'asyncStart', 'asyncEnd']);
    expect(last()).toMatchObject({ outcome: 'error', error_code: 'SERVER_NOT_FOUND' });
  });

  it('a promise: resolved with describe reading the value, rejected on error', async () => {
    off = subscribed();
    const describe = (message: Message, value: unknown) => {
      message.status = (value as { status: number }).status;
    };
    expect(await traced(channel, { name: 'promise' }, () => Promise.resolve({ status: 204 }), describe)).toEqual({ status: 204 });
    expect(last()).toEqual({ name: 'promise', outcome: 'ok', status: 204 });
    events.length = 0;
    await expect(traced(channel, { name: 'rejects' }, () => Promise.reject(new Error('down')))).rejects.toThrow('down');
    expect(kinds()).toEqual(['start', 'end', 'error', 'asyncStart', 'asyncEnd']);
  });

  it("enters the channel's bound stores for the whole call, so a subscriber's context is the active one", async () => {
    const als = new AsyncLocalStorage<string>();
    channel.start.bindStore(als, (message) => `span of ${message.name}`);
    try {
      const inside = await traced(channel, { name: 'bound' }, () => new Promise<string | undefined>((resolve) => setTimeout(() => resolve(als.getStore()), 1)));
      expect(inside).toBe('span of bound');
    } finally {
      channel.start.unbindStore(als);
    }
  });
});
