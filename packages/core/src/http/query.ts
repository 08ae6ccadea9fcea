import { err, ok, type Result } from 'neverthrow';
import { type FieldIssue, type FleetError, invalidRequest } from '../errors/fleet-error.js';
import { MAX_PAGE_LIMIT } from '../util/pagination.js';

/** Turns one query value into a typed one, or says what is wrong with it. */
export type ParamParser<T> = (raw: string) => { ok: true; value: T } | { ok: false; issue: string };

type Spec = Record<string, ParamParser<unknown>>;
type Parsed<S extends Spec> = { [K in keyof S]?: S[K] extends ParamParser<infer T> ? T : never };

// docs/http-api.md "Lists": any `page` >= 1 is valid (a page past the end is empty); the only cap is what a JSON number holds exactly.
const MAX_PAGE = Number.MAX_SAFE_INTEGER;

export function integerParam(min: number, max: number): ParamParser<number> {
  const issue = max === Number.MAX_SAFE_INTEGER ? `must be an integer of at least ${min}` : `must be an integer from ${min} to ${max}`;
  return (raw) => {
    if (!/^\d{1,16}$/.test(raw)) return { ok: false, issue };
    const value = Number(raw);
    return value >= min && value <= max ? { ok: true, value } : { ok: false, issue };
  };
}

export function enumParam<const T extends string>(values: readonly T[]): ParamParser<T> {
  return (raw) =>
    (values as readonly string[]).includes(raw)
      ? { ok: true, value: raw as T }
      : { ok: false, issue: `must be one of ${values.map((v) => `"${v}"`).join(', ')}` };
}

/** A non-empty string of at most `max` characters (a filter value). */
export function stringParam(max: number): ParamParser<string> {
  return (raw) => (raw.length >= 1 && raw.length <= max ? { ok: true, value: raw } : { ok: false, issue: `must be 1 to ${max} characters` });
}

export const pageParams = {
  page: integerParam(1, MAX_PAGE),
  limit: integerParam(1, MAX_PAGE_LIMIT),
};

/** Parses a query string against `spec`: unknown, repeated or invalid parameters are a 400 naming each. */
export function parseQuery<S extends Spec>(params: URLSearchParams, spec: S): Result<Parsed<S>, FleetError> {
  const issues: FieldIssue[] = [];
  const out: Record<string, unknown> = {};
  const seen = new Set<string>();
  for (const [name, raw] of params) {
    const parser = Object.hasOwn(spec, name) ? spec[name] : undefined;
    if (parser === undefined) {
      issues.push({ field: name.slice(0, 100), issue: 'is not a known query parameter' });
      continue;
    }
    if (seen.has(name)) {
      issues.push({ field: name, issue: 'must be given once' });
      continue;
    }
    seen.add(name);
    const parsed = parser(raw);
    if (parsed.ok) out[name] = parsed.value;
    else issues.push({ field: name, issue: parsed.issue });
  }
  return issues.length === 0 ? ok(out as Parsed<S>) : err(invalidRequest(issues));
}
