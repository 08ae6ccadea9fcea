import { describe, expect, it } from 'vitest';
import { LabelValues, MetricLabels, OTHER } from './labels.js';

describe('LabelValues', () => {
  it('keeps the first maxValues distinct values, cut to maxLength; a later new value is `_OTHER`, an old one keeps its own', () => {
    const values = new LabelValues({ maxValues: 2, maxLength: 5 });
    expect(values.of('alpha-long')).toBe('alpha');
    expect(values.of('beta')).toBe('beta');
    expect(values.of('gamma')).toBe(OTHER);
    // Cut first, then counted: another long value with the same first characters is the same series.
    expect(values.of('alpha-other')).toBe('alpha');
    expect(values.of('beta')).toBe('beta');
  });
});

describe('MetricLabels', () => {
  it('bounds each label on its own and leaves an undefined value out', () => {
    const labels = new MetricLabels<'tool' | 'error'>({ maxValues: 1, maxLength: 64 });
    expect(labels.of({ tool: 'a', error: undefined })).toEqual({ tool: 'a' });
    expect(labels.of({ tool: 'b', error: 'x' })).toEqual({ tool: OTHER, error: 'x' });
    expect(labels.of({ tool: 'a', error: 'y' })).toEqual({ tool: 'a', error: OTHER });
  });
});
