import { describe, expect, it } from 'vitest';
import { LabelValues, MAX_KEPT_LABEL_SETS, MetricLabels, OTHER } from './labels.js';

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

describe('MetricLabels.keyed', () => {
  it('answers what `of` answers, made once per key; a value bounded once stays what it became', () => {
    const labels = new MetricLabels<'route' | 'status'>({ maxValues: 1, maxLength: 64 });
    let made = 0;
    const route = (path: string) => () => {
      made++;
      return { route: path, status: '2xx' };
    };
    const first = labels.keyed(['a'], route('/a'));
    expect(first).toEqual({ route: '/a', status: '2xx' });
    expect(labels.keyed(['a'], route('/a'))).toBe(first);
    expect(made).toBe(1);
    // The label is full: a new route is `_OTHER`, now and on every later request, as `of` would say.
    expect(labels.keyed(['b'], route('/b'))).toEqual({ route: OTHER, status: '2xx' });
    expect(labels.keyed(['b'], route('/b'))).toEqual(labels.of({ route: '/b', status: '2xx' }));
    expect(made).toBe(2);
  });

  it('keeps at most MAX_KEPT_LABEL_SETS sets: past them, made for each call', () => {
    const labels = new MetricLabels<'route'>({ maxValues: 1, maxLength: 64 });
    for (let i = 0; i < MAX_KEPT_LABEL_SETS; i++) labels.keyed([`k${i}`], () => ({ route: '/a' }));
    let made = 0;
    const once = () => {
      made++;
      return { route: '/a' };
    };
    labels.keyed(['one more'], once);
    labels.keyed(['one more'], once);
    expect(made).toBe(2);
  });
});
