import { describe, expect, it } from 'vitest';
import { globMatches } from '../toolcalls/tool-names.js';
import { grantedKey, keyRequestSchema, type KeyRequest, toolsOutside } from './key-grants.js';
import { type Principal, SCOPES } from './scopes.js';

const creator = (extra: Partial<Principal> = {}): Principal => ({ account: 'acme', tier: 'pro', scopes: [...SCOPES], keyId: 'key_x', ...extra });
const grant = (principal: Principal, request: KeyRequest) => grantedKey(principal, keyRequestSchema.parse(request));
const refusal = (principal: Principal, request: KeyRequest) => {
  const error = grant(principal, request)._unsafeUnwrapErr();
  expect(error.code).toBe('FORBIDDEN');
  return error;
};

describe('grantedKey: a key makes keys with at most what it holds', () => {
  it('fills what is left out from the creator: its tier, tools, expiry, and its scopes but keys:manage', () => {
    const principal = creator({ tools: ['search__*'], prompts: ['search__*'], resources: null, expiresAt: '2027-01-01T00:00:00.000Z' });
    expect(grant(principal, {})._unsafeUnwrap()).toEqual({
      account: 'acme',
      tier: 'pro',
      scopes: SCOPES.filter((scope) => scope !== 'keys:manage'),
      tools: ['search__*'],
      prompts: ['search__*'],
      resources: null,
      expires_at: '2027-01-01T00:00:00.000Z',
    });
    expect(grant(creator(), { description: 'ci' })._unsafeUnwrap()).toMatchObject({ name: 'ci', tools: null, prompts: null, resources: null });
    expect(grant(creator(), {})._unsafeUnwrap()).not.toHaveProperty('expires_at');
  });

  it('passes on keys:manage only when asked, and only a creator that holds it', () => {
    expect(grant(creator(), { scopes: ['keys:manage', 'servers:read'] })._unsafeUnwrap().scopes).toEqual(['keys:manage', 'servers:read']);
    // No list holds every scope but keys:manage: such a principal (an embedder's) cannot pass it on.
    const error = refusal(creator({ scopes: null }), { scopes: ['keys:manage'] });
    expect(error.details).toEqual({ scopes: ['keys:manage'] });
    expect(error.message).toContain('"keys:manage"');
  });

  it('refuses each scope the creator lacks, naming them; a creator with only keys:manage must name the scopes', () => {
    const error = refusal(creator({ scopes: ['keys:manage', 'servers:read'] }), { scopes: ['servers:read', 'servers:write', 'webhooks:manage'] });
    expect(error.details).toEqual({ scopes: ['servers:write', 'webhooks:manage'] });
    expect(error.message).toBe('This API key does not hold the scopes "servers:write", "webhooks:manage": a key can only pass on scopes it holds.');
    expect(grant(creator({ scopes: ['keys:manage'] }), {})._unsafeUnwrapErr()).toMatchObject({ code: 'INVALID_REQUEST', details: { field: 'scopes' } });
  });

  it('a creator with an allowlist and no scope list holds no servers:write to pass on (hasScope)', () => {
    const error = refusal(creator({ scopes: null, tools: ['a__*'] }), { scopes: ['servers:write'] });
    expect(error.details).toEqual({ scopes: ['servers:write'] });
    expect(grant(creator({ scopes: null, tools: ['a__*'] }), {})._unsafeUnwrap().scopes).not.toContain('servers:write');
  });

  it('refuses a higher tier by the order free < pro < enterprise, whatever limits the tiers are given', () => {
    expect(refusal(creator({ tier: 'pro' }), { tier: 'enterprise' }).details).toEqual({ tier: 'enterprise' });
    expect(refusal(creator({ tier: 'free' }), { tier: 'pro' }).message).toBe('This API key is of tier "free": it cannot make a key of tier "pro".');
    expect(grant(creator({ tier: 'enterprise' }), { tier: 'free' })._unsafeUnwrap().tier).toBe('free');
    expect(grant(creator({ tier: 'pro' }), { tier: 'pro' })._unsafeUnwrap().tier).toBe('pro');
    // A tier outside the ranked ones holds no rank, not even its own.
    expect(refusal(creator({ tier: 'gold' as never }), {}).details).toEqual({ tier: 'gold' });
  });

  it('refuses an expiry later than the creator’s own; an earlier one or the same stands', () => {
    const principal = creator({ expiresAt: '2027-01-01T00:00:00.000Z' });
    expect(refusal(principal, { expires_at: '2027-01-01T00:00:00.001Z' }).details).toEqual({ expires_at: '2027-01-01T00:00:00.000Z' });
    expect(grant(principal, { expires_at: '2026-12-31T23:00:00-01:00' })._unsafeUnwrap().expires_at).toBe('2026-12-31T23:00:00-01:00');
    expect(grant(principal, { expires_at: '2026-12-01T00:00:00Z' })._unsafeUnwrap().expires_at).toBe('2026-12-01T00:00:00Z');
    // An embedder's principal whose expiry cannot be read holds no later one: refused, never waved through.
    expect(refusal(creator({ expiresAt: 'soon' }), { expires_at: '2026-12-01T00:00:00Z' }).details).toEqual({ expires_at: 'soon' });
  });

  it('refuses tool patterns outside the creator’s allowlist, and `null` (every tool) from a creator with one', () => {
    const principal = creator({ tools: ['search__*', 'files__read_*'] });
    expect(grant(principal, { tools: ['search__web', 'files__read_*', 'files__read_text*'] })._unsafeUnwrap().tools).toEqual(['search__web', 'files__read_*', 'files__read_text*']);
    const error = refusal(principal, { tools: ['search__*', 'files__*', '*'] });
    expect(error.details).toEqual({ tools: ['files__*', '*'] });
    expect(error.message).toContain('"files__*", "*"');
    expect(refusal(principal, { tools: null }).details).toEqual({ tools: ['*'] });
    expect(grant(creator(), { tools: null })._unsafeUnwrap().tools).toBeNull();
    expect(grant(creator(), { tools: ['anything__*'] })._unsafeUnwrap().tools).toEqual(['anything__*']);
  });
});

describe('toolsOutside: a requested pattern lies within a held one exactly when every name it matches, the held one matches', () => {
  it.each([
    // [held, requested, within]
    ['*', '*', true],
    ['*', 'a*b', true],
    ['a*', 'ab*', true],
    ['a*', 'a', true],
    ['a*', '*a', false],
    ['*a', 'b*a', true],
    ['a*c', 'a*b*c', true],
    ['a*b*c', 'a*c', false],
    ['ab', 'a*', false],
    ['a*', 'b*', false],
    ['*x*', 'x', true],
    ['*x*', '*', false],
    ['a__*', 'a__b*', true],
    ['a__b', 'a__b', true],
    ['a__b', 'a__*', false],
  ])('held %s, requested %s: within %s', (held, requested, within) => {
    expect(toolsOutside([held], [requested])).toEqual(within ? [] : [requested]);
  });

  it('allows a pattern exactly when the held patterns match every name it matches (a brute check over short names)', () => {
    // `z` is in no pattern: the name that shows a refused pattern reaches past the held ones uses it.
    const alphabet = ['a', 'b', '_', 'z'];
    const names: string[] = [''];
    for (let length = 1; length <= 5; length++) for (const name of names.filter((n) => n.length === length - 1)) for (const c of alphabet) names.push(name + c);
    const patterns = names.filter((n) => n.length <= 3 && !n.includes('z')).flatMap((n) => [n, `${n}*`, `*${n}`, n.length > 1 ? `${n[0]}*${n.slice(1)}` : n]);
    const held = [['a*'], ['*b', 'a_*'], ['a*b*'], ['_']];
    for (const own of held) {
      for (const pattern of patterns) {
        const reachesPast = names.some((name) => globMatches(pattern, name) && !own.some((p) => globMatches(p, name)));
        expect(toolsOutside(own, [pattern]).length > 0, `${pattern} against ${own.join('|')}`).toBe(reachesPast);
      }
    }
  });
});
