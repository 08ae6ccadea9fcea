/** What a numeric option must be, and how a message says it. */
export interface OptionRule {
  readonly holds: (value: number) => boolean;
  /** Completes "… must be": `a positive integer`. */
  readonly says: string;
}

/**
 * Checks a numeric option at construction, where a misconfiguration may throw. The message names the option as the
 * user wrote it (`webhooks.timeoutMs`) and what it must be, so that it says what to fix.
 */
export function checkOption(name: string, value: number, rule: OptionRule, owner = 'mcp-fleet'): number {
  if (!rule.holds(value)) throw new TypeError(`${owner}: ${name} must be ${rule.says}`);
  return value;
}

export const positiveNumber: OptionRule = { holds: (v) => Number.isFinite(v) && v > 0, says: 'a positive number' };

export const positiveInteger: OptionRule = { holds: (v) => Number.isInteger(v) && v >= 1, says: 'a positive integer' };

export const nonNegativeNumber: OptionRule = { holds: (v) => Number.isFinite(v) && v >= 0, says: 'a finite number >= 0' };

/** An integer from `min`, up to `max` when given. */
export function integerIn(min: number, max?: number): OptionRule {
  return {
    holds: (v) => Number.isInteger(v) && v >= min && (max === undefined || v <= max),
    says: max === undefined ? `an integer of at least ${min}` : `an integer from ${min} to ${max}`,
  };
}

/** A finite number of at least `min`; `minName` names it when it is another option (`baseMs`). */
export function atLeast(min: number, minName = String(min)): OptionRule {
  return { holds: (v) => Number.isFinite(v) && v >= min, says: `at least ${minName}` };
}

/** A number from `min` to `max`, or to below `max`. */
export function numberIn(min: number, max: number, options: { belowMax?: boolean } = {}): OptionRule {
  const below = options.belowMax === true;
  return {
    holds: (v) => v >= min && (below ? v < max : v <= max),
    says: below ? `from ${min} to below ${max}` : `from ${min} to ${max}`,
  };
}
