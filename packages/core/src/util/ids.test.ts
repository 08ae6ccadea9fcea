import { describe, expect, it } from 'vitest';
import { ID_PREFIXES, type IdKind, isId, newId, randomToken } from './ids.js';

const KINDS: [IdKind, string][] = [
  ['server', 'srv_'],
  ['toolCall', 'call_'],
  ['webhook', 'wh_'],
  ['event', 'evt_'],
  ['delivery', 'dlv_'],
  ['request', 'req_'],
  ['apiKey', 'key_'],
];

describe('ids', () => {
  it('has the prefixes of the contract, and no other kinds', () => {
    expect(Object.entries(ID_PREFIXES).sort()).toEqual([...KINDS].sort());
  });

  describe.each(KINDS)('newId(%j)', (kind, prefix) => {
    it(`is ${prefix} and 24 characters of [0-9A-Za-z]`, () => {
      for (let i = 0; i < 50; i++) {
        const id = newId(kind);
        expect(id).toMatch(new RegExp(`^${prefix}[0-9A-Za-z]{24}$`));
        expect(isId(kind, id)).toBe(true);
      }
    });

    it('is unique', () => {
      const ids = new Set(Array.from({ length: 1000 }, () => newId(kind)));
      expect(ids.size).toBe(1000);
    });

    it('isId refuses near misses', () => {
      const id = newId(kind);
      const body = id.slice(prefix.length);
      for (const bad of [
        body,
        `${prefix}${body.slice(1)}`,
        `${id}0`,
        `${prefix}${body.slice(1)}-`,
        `${prefix}${body.slice(1)}_`,
        `${prefix}${body.slice(1)}é`,
        `${prefix.toUpperCase()}${body}`,
        ` ${id}`,
        `${id}\n`,
        '',
      ]) {
        expect(isId(kind, bad), JSON.stringify(bad)).toBe(false);
      }
    });

    it('isId refuses an id of another kind', () => {
      for (const [other] of KINDS) if (other !== kind) expect(isId(kind, newId(other))).toBe(false);
    });
  });

  describe('randomToken', () => {
    it.each([0, 1, 24, 40, 1000])('has exactly %i characters', (length) => {
      expect(randomToken(length)).toHaveLength(length);
    });

    it('uses every character of [0-9A-Za-z] and nothing else', () => {
      const sample = randomToken(62 * 200);
      expect(sample).toMatch(/^[0-9A-Za-z]+$/);
      expect(new Set(sample).size).toBe(62);
    });

    it('is not biased towards the low characters (bytes at or over 248 are dropped)', () => {
      // With `byte % 62` over all 256 bytes, "0"–"3" would come 5/256 instead of 4/256 of the time: 25% more often.
      const sample = randomToken(200_000);
      const counts = new Map<string, number>();
      for (const c of sample) counts.set(c, (counts.get(c) ?? 0) + 1);
      const expected = sample.length / 62;
      for (const c of '0123') expect(counts.get(c) ?? 0).toBeLessThan(expected * 1.12);
      for (const c of 'xyz') expect(counts.get(c) ?? 0).toBeGreaterThan(expected * 0.88);
    });

    it('does not repeat', () => {
      expect(randomToken(40)).not.toBe(randomToken(40));
    });
  });
});
