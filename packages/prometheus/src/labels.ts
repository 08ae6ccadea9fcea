/** The value a label takes once it has seen as many distinct values as it may hold (the conventions' `_OTHER`). */
export const OTHER = '_OTHER';

export interface LabelLimits {
  /** Distinct values one label of one metric may hold; later new values are counted as `_OTHER`. */
  maxValues: number;
  /** Characters of a value; a longer one is cut to this length. */
  maxLength: number;
}

/**
 * The values one label of one metric has taken, bounded: each value is cut to `maxLength`, and past `maxValues`
 * distinct values a new one becomes `_OTHER`. A value seen before the cap keeps its own series.
 */
export class LabelValues {
  readonly #seen = new Set<string>();

  constructor(private readonly limits: LabelLimits) {}

  of(value: string): string {
    const cut = value.length > this.limits.maxLength ? value.slice(0, this.limits.maxLength) : value;
    if (this.#seen.has(cut)) return cut;
    if (this.#seen.size >= this.limits.maxValues) return OTHER;
    this.#seen.add(cut);
    return cut;
  }
}

/** Label sets {@link MetricLabels.keyed} keeps; past them a set is made for the call and not kept. */
export const MAX_KEPT_LABEL_SETS = 1000;

/** Bounded label values for every label of one metric, made on first use. */
export class MetricLabels<L extends string> {
  readonly #labels = new Map<L, LabelValues>();
  /** The kept sets, in nested maps by each value of their key: `[key[0]] → [key[1]] → … → set`. */
  readonly #sets = new Map<unknown, unknown>();
  #kept = 0;

  constructor(private readonly limits: LabelLimits) {}

  /** The label set with each value bounded; an `undefined` value leaves its label out (an empty label). */
  of(values: Partial<Record<L, string | undefined>>): Partial<Record<L, string>> {
    const out: Partial<Record<L, string>> = {};
    for (const name in values) {
      const value = values[name];
      if (value === undefined) continue;
      let label = this.#labels.get(name);
      if (label === undefined) {
        label = new LabelValues(this.limits);
        this.#labels.set(name, label);
      }
      out[name] = label.of(value);
    }
    return out;
  }

  /**
   * `of(values())`, made once per `key` (the values it is made of, raw: `['GET', '/servers', 200]`) and kept, for
   * the metrics recorded on every request: no label object and no key text made per request. The same as `of` each
   * time: a value bounded once stays what it became (a value admitted keeps its series, one refused past the cap
   * stays `_OTHER`, as the values seen never shrink). Every key of one metric has the same length.
   */
  keyed(key: readonly unknown[], values: () => Partial<Record<L, string | undefined>>): Partial<Record<L, string>> {
    let level: unknown = this.#sets;
    for (let i = 0; i < key.length && level !== undefined; i++) level = (level as Map<unknown, unknown>).get(key[i]);
    if (level !== undefined) return level as Partial<Record<L, string>>;
    const set = this.of(values());
    if (this.#kept < MAX_KEPT_LABEL_SETS) {
      let map = this.#sets;
      for (let i = 0; i < key.length - 1; i++) {
        let next = map.get(key[i]) as Map<unknown, unknown> | undefined;
        if (next === undefined) map.set(key[i], (next = new Map()));
        map = next;
      }
      map.set(key[key.length - 1], set);
      this.#kept++;
    }
    return set;
  }
}
