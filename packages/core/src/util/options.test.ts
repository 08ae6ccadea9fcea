import { describe, expect, it } from 'vitest';
import { atLeast, checkOption, integerIn, nonNegativeNumber, numberIn, positiveInteger, positiveNumber } from './options.js';

describe('checkOption', () => {
  it('answers a value that holds', () => {
    expect(checkOption('webhooks.timeoutMs', 10, positiveNumber)).toBe(10);
    expect(checkOption('monitor.jitter', 0.5, numberIn(0, 0.5))).toBe(0.5);
  });

  it.each([
    [positiveNumber, 0, 'mcp-fleet: x.y must be a positive number'],
    [positiveNumber, Number.POSITIVE_INFINITY, 'mcp-fleet: x.y must be a positive number'],
    [positiveInteger, 1.5, 'mcp-fleet: x.y must be a positive integer'],
    [nonNegativeNumber, Number.NaN, 'mcp-fleet: x.y must be a finite number >= 0'],
    [integerIn(1000), 999, 'mcp-fleet: x.y must be an integer of at least 1000'],
    [integerIn(1, 100), 101, 'mcp-fleet: x.y must be an integer from 1 to 100'],
    [atLeast(5, 'baseMs'), 4, 'mcp-fleet: x.y must be at least baseMs'],
    [numberIn(0, 1, { belowMax: true }), 1, 'mcp-fleet: x.y must be from 0 to below 1'],
  ])('throws a TypeError naming the option (%#)', (rule, value, message) => {
    expect(() => checkOption('x.y', value, rule)).toThrow(new TypeError(message));
  });

  it('names another owner when given', () => {
    expect(() => checkOption('killGraceMs', -1, nonNegativeNumber, 'createStdioSupervisor')).toThrow('createStdioSupervisor: killGraceMs must be');
  });
});
