import type { Tool } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { answerTail, TOUCH_EVERY_MS, ToolsAnswers } from './tools-answers.js';

const tool = (name: string): Tool => ({ name, inputSchema: { type: 'object' } });

describe('ToolsAnswers', () => {
  it('answers a view only from the same basis, element by element, by identity', () => {
    const answers = new ToolsAnswers(10_000);
    const items = [tool('x')];
    const basis = ['srv_1', 'alpha', items];
    const kept = answers.set('view', basis, [tool('alpha__x')]);
    expect(kept.names).toEqual(['alpha__x']);
    expect(kept.json.toString()).toBe(JSON.stringify(kept.tools));
    expect(answers.messageOf(kept.tools, {}, () => true)?.toString()).toBe(`{"result":{"tools":${JSON.stringify(kept.tools)}}`);
    expect(answers.get('view', ['srv_1', 'alpha', items])).toBe(kept);
    // A listing fetched again is another array, whatever it holds; a renamed server, another name; one more server, a longer basis.
    expect(answers.get('view', ['srv_1', 'alpha', [tool('x')]])).toBeUndefined();
    expect(answers.get('view', ['srv_1', 'beta', items])).toBeUndefined();
    expect(answers.get('view', [...basis, 'srv_2', 'beta', items])).toBeUndefined();
    expect(answers.get('other view', basis)).toBeUndefined();
  });

  it('an answer taken as kept marks the listings it shows used, at most every TOUCH_EVERY_MS', () => {
    const touched: (readonly string[])[] = [];
    const answers = new ToolsAnswers(10_000, (ids) => touched.push(ids));
    const revision = (at: number) => ({ records: 1, commits: 2, listings: 3, at });
    const kept = answers.set('view', ['srv_1', 'a', [], 'srv_2', 'b', []], [tool('a__x')], { revision: revision(0), until: 60_000, sources: ['srv_1', 'srv_2'], touchedAt: 0 });
    expect(answers.current('view', revision(10))).toBe(kept);
    expect(answers.current('view', revision(TOUCH_EVERY_MS - 1))).toBe(kept);
    expect(touched).toEqual([]);
    expect(answers.current('view', revision(TOUCH_EVERY_MS))).toBe(kept);
    expect(answers.current('view', revision(TOUCH_EVERY_MS + 10))).toBe(kept);
    expect(touched).toEqual([['srv_1', 'srv_2']]);
    expect(answers.current('view', revision(2 * TOUCH_EVERY_MS + 5))).toBe(kept);
    expect(touched).toHaveLength(2);
    // Not taken (its sources changed): nothing marked.
    expect(answers.current('view', { ...revision(5 * TOUCH_EVERY_MS), listings: 4 })).toBeUndefined();
    expect(touched).toHaveLength(2);
  });

  it('asks each wire encoding once per kept list whether it leaves the list as it is, and gives the JSON only then', () => {
    const answers = new ToolsAnswers(10_000);
    const kept = answers.set('view', ['b'], [tool('a__x'), tool('a__ünïcode')]);
    const [plain, wrapping] = [{}, {}];
    const asked: object[] = [];
    const leaves = (era: object, verdict: boolean) => (tools: Tool[]) => {
      expect(tools).toBe(kept.tools);
      asked.push(era);
      return verdict;
    };
    const message = answers.messageOf(kept.tools, plain, leaves(plain, true));
    // UTF-8, the bytes of `JSON.stringify` of the answer's message, up to its `jsonrpc` and id (`answerTail`).
    const whole = Buffer.concat([message!, answerTail('req-ü')]);
    expect(whole.equals(Buffer.from(JSON.stringify({ result: { tools: kept.tools }, jsonrpc: '2.0', id: 'req-ü' })))).toBe(true);
    expect(answers.messageOf(kept.tools, plain, leaves(plain, true))).toBe(message);
    expect(answers.messageOf(kept.tools, wrapping, leaves(wrapping, false))).toBeUndefined();
    expect(answers.messageOf(kept.tools, wrapping, leaves(wrapping, false))).toBeUndefined();
    expect(asked).toEqual([plain, wrapping]);
    // A list it did not make (the same tools in another array) has no JSON here.
    expect(answers.messageOf([...kept.tools], plain, () => true)).toBeUndefined();
    expect(answers.size).toBe(Buffer.byteLength(JSON.stringify(kept.tools)));
  });

  it('keeps at most its bound of JSON, the least recently used out first, and nothing larger than the bound', () => {
    const one = JSON.stringify([tool('a__x')]).length;
    const answers = new ToolsAnswers(2 * one);
    answers.set('a', ['a'], [tool('a__x')]);
    answers.set('b', ['b'], [tool('b__x')]);
    expect(answers.get('a', ['a'])).toBeDefined();
    answers.set('c', ['c'], [tool('c__x')]);
    expect(answers.get('b', ['b'])).toBeUndefined();
    expect(answers.get('a', ['a'])).toBeDefined();
    expect(answers.size).toBe(2 * one);
    const big = answers.set('big', ['big'], [tool('x'.repeat(3 * one))]);
    expect(big.tools).toHaveLength(1);
    expect(answers.get('big', ['big'])).toBeUndefined();
    expect(answers.size).toBeLessThanOrEqual(2 * one);
  });
});
