import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SecretBox, unreadableSecret } from './secret-box.js';

describe('SecretBox.open', () => {
  const box = new SecretBox({ current: randomBytes(32) });
  const sealed = box.sealNow('upstream-token', 'server:srv_1:token');

  it('opens a sealed value again and again to its plaintext; a new seal of a new value opens to the new one', async () => {
    expect((await box.open(sealed, 'server:srv_1:token'))._unsafeUnwrap()).toBe('upstream-token');
    expect((await box.open(sealed, 'server:srv_1:token'))._unsafeUnwrap()).toBe('upstream-token');
    const updated = box.sealNow('rotated-token', 'server:srv_1:token');
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

describe('SecretBox.openNow', () => {
  it('opens at once what open opens, refuses what it refuses, and waits (undefined) while the key check runs', async () => {
    const box = new SecretBox({ current: randomBytes(32) });
    const sealed = box.sealNow('upstream-token', 'server:srv_1:token');
    let pass: (error: undefined) => void = () => {};
    const check = box.startCheck(() => new Promise((resolve) => (pass = resolve)));
    expect(box.openNow(sealed, 'server:srv_1:token')).toBeUndefined();
    pass(undefined);
    await check;
    await new Promise((resolve) => setImmediate(resolve));
    expect(box.openNow(sealed, 'server:srv_1:token')?._unsafeUnwrap()).toBe('upstream-token');
    expect(box.openNow('plain-token', 'server:srv_1:token')?._unsafeUnwrap()).toBe('plain-token');
    expect(box.openNow(sealed, 'server:srv_2:token')?._unsafeUnwrapErr().code).toBe((await box.open(sealed, 'server:srv_2:token'))._unsafeUnwrapErr().code);
  });

  it('answers a failed key check as open does', async () => {
    const box = new SecretBox({ current: randomBytes(32) });
    const sealed = box.sealNow('upstream-token', 'server:srv_1:token');
    await box.startCheck(async () => unreadableSecret('old'));
    await new Promise((resolve) => setImmediate(resolve));
    const refused = (await box.open(sealed, 'server:srv_1:token'))._unsafeUnwrapErr();
    expect(box.openNow(sealed, 'server:srv_1:token')?._unsafeUnwrapErr()).toBe(refused);
  });
});
