import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { type Result, ResultAsync } from 'neverthrow';
import type { FleetError } from '../errors/fleet-error.js';
import type { Ran } from './result.js';
import { SecretBox, unreadableSecret } from './secret-box.js';

describe('SecretBox.open', () => {
  const box = new SecretBox({ current: randomBytes(32) });
  const sealed = box.sealUnchecked('upstream-token', 'server:srv_1:token');

  it('opens a sealed value again and again to its plaintext; a new seal of a new value opens to the new one', async () => {
    expect((await box.open(sealed, 'server:srv_1:token'))._unsafeUnwrap()).toBe('upstream-token');
    expect((await box.open(sealed, 'server:srv_1:token'))._unsafeUnwrap()).toBe('upstream-token');
    const updated = box.sealUnchecked('rotated-token', 'server:srv_1:token');
    expect((await box.open(updated, 'server:srv_1:token'))._unsafeUnwrap()).toBe('rotated-token');
  });

  it('a value opened once still does not open in another place, nor tampered with', async () => {
    expect((await box.open(sealed, 'server:srv_1:token'))._unsafeUnwrap()).toBe('upstream-token');
    expect((await box.open(sealed, 'server:srv_2:token')).isErr()).toBe(true);
    const parts = sealed.split(':');
    const data = parts.at(-1) as string;
    const tampered = [...parts.slice(0, -1), `${data[0] === 'A' ? 'B' : 'A'}${data.slice(1)}`].join(':');
    expect((await box.open(tampered, 'server:srv_1:token')).isErr()).toBe(true);
  });

  it('another box without the key does not open what this one opened', async () => {
    expect((await box.open(sealed, 'server:srv_1:token')).isOk()).toBe(true);
    expect((await new SecretBox({ current: randomBytes(32) }).open(sealed, 'server:srv_1:token')).isErr()).toBe(true);
  });
});

/** What a box answered at once: a `Result`, never a promise. */
function atOnce<T>(ran: Ran<T>): Result<T, FleetError> {
  expect(ran).not.toBeInstanceOf(ResultAsync);
  return ran as Result<T, FleetError>;
}

describe('SecretBox.open at once', () => {
  it('opens at once what it opens later, refuses what it refuses, and waits (a promise) while the key check runs', async () => {
    const box = new SecretBox({ current: randomBytes(32) });
    const sealed = box.sealUnchecked('upstream-token', 'server:srv_1:token');
    let pass: (error: undefined) => void = () => {};
    const check = box.startCheck(() => new Promise((resolve) => (pass = resolve)));
    const waiting = box.open(sealed, 'server:srv_1:token');
    expect(waiting).toBeInstanceOf(ResultAsync);
    pass(undefined);
    await check;
    await new Promise((resolve) => setImmediate(resolve));
    expect((await waiting)._unsafeUnwrap()).toBe('upstream-token');
    expect(atOnce(box.open(sealed, 'server:srv_1:token'))._unsafeUnwrap()).toBe('upstream-token');
    expect(atOnce(box.open('plain-token', 'server:srv_1:token'))._unsafeUnwrap()).toBe('plain-token');
    expect(atOnce(box.open(sealed, 'server:srv_2:token'))._unsafeUnwrapErr().code).toBe((await box.open(sealed, 'server:srv_2:token'))._unsafeUnwrapErr().code);
  });

  it('answers a failed key check as open does', async () => {
    const box = new SecretBox({ current: randomBytes(32) });
    const sealed = box.sealUnchecked('upstream-token', 'server:srv_1:token');
    await box.startCheck(async () => unreadableSecret('old'));
    await new Promise((resolve) => setImmediate(resolve));
    const refused = (await box.open(sealed, 'server:srv_1:token'))._unsafeUnwrapErr();
    expect(atOnce(box.open(sealed, 'server:srv_1:token'))._unsafeUnwrapErr()).toBe(refused);
  });
});

describe('SecretBox.seal', () => {
  it('goes through the key check as open does: a box whose keys failed the check seals nothing, at once', async () => {
    const box = new SecretBox({ current: randomBytes(32) });
    await box.startCheck(async () => unreadableSecret('old'));
    await new Promise((resolve) => setImmediate(resolve));
    const refused = atOnce(box.open(box.sealUnchecked('x', 'p'), 'p'))._unsafeUnwrapErr();
    expect(atOnce(box.seal('upstream-token', 'server:srv_1:token'))._unsafeUnwrapErr()).toBe(refused);
  });

  it('seals at once once the check passed, and what it sealed opens', async () => {
    const box = new SecretBox({ current: randomBytes(32) });
    await box.startCheck(async () => undefined);
    await new Promise((resolve) => setImmediate(resolve));
    const sealed = atOnce(box.seal('upstream-token', 'server:srv_1:token'))._unsafeUnwrap();
    expect(sealed).not.toContain('upstream-token');
    expect(atOnce(box.open(sealed, 'server:srv_1:token'))._unsafeUnwrap()).toBe('upstream-token');
  });
});
