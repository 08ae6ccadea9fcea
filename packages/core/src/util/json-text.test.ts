import { describe, expect, it } from 'vitest';
import { joinJson, JsonList } from './json-text.js';

describe('JSON text', () => {
  it('joinJson answers the join of the items given, remembered or not', () => {
    const a = JSON.stringify({ id: 'a', name: 'one' });
    const b = JSON.stringify({ id: 'b', name: 'two' });
    expect(joinJson([])).toBe('');
    expect(joinJson([a, b])).toBe(`${a},${b}`);
    expect(joinJson([a, b])).toBe(`${a},${b}`);
    // Same first item, another list: joined afresh, never the remembered one.
    const renamed = JSON.stringify({ id: 'b', name: 'renamed' });
    expect(joinJson([a, renamed])).toBe(`${a},${renamed}`);
    expect(joinJson([a])).toBe(a);
    expect(joinJson([a, b, renamed])).toBe(`${a},${b},${renamed}`);
  });

  it('a JsonList stringified by JSON.stringify is its items parsed', () => {
    const list = new JsonList([JSON.stringify({ x: 1 }), JSON.stringify({ y: [2] })]);
    expect(JSON.stringify({ data: list })).toBe('{"data":[{"x":1},{"y":[2]}]}');
  });
});
