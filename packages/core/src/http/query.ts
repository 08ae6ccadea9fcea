import { err, ok, type Result } from 'neverthrow';
import { z } from 'zod';
import { type FieldIssue, type FleetError, invalidRequest } from '../errors/fleet-error.js';
import { MAX_PAGE_LIMIT } from '../util/pagination.js';

/**
 * One query parameter: a string in, its typed value out. Every check says the same issue, so a refused value is
 * reported in one phrase whatever went wrong (`parseQuery` takes the first issue's message).
 */
export type QueryParam = z.ZodType;

/** A route's query: each parameter optional, none other allowed. */
export type QuerySchema = z.ZodObject<Record<string, z.ZodOptional>, z.core.$strict>;

// docs/http-api.md "Lists": any `page` >= 1 is valid (a page past the end is empty); the only cap is what a JSON number holds exactly.
const MAX_PAGE = Number.MAX_SAFE_INTEGER;

export function integerParam(min: number, max: number) {
  const issue = max === Number.MAX_SAFE_INTEGER ? `must be an integer of at least ${min}` : `must be an integer from ${min} to ${max}`;
  return z
    .string()
    .regex(/^\d{1,16}$/, { error: issue })
    .transform(Number)
    .refine((value) => value >= min && value <= max, { error: issue })
    .describe(`An integer ${max === Number.MAX_SAFE_INTEGER ? `of at least ${min}` : `from ${min} to ${max}`}, in decimal digits.`);
}

export function enumParam<const T extends string>(values: readonly [T, ...T[]]) {
  return z.enum(values, { error: `must be one of ${values.map((v) => `"${v}"`).join(', ')}` });
}

/** A non-empty string of at most `max` characters (a filter value). */
export function stringParam(max: number) {
  const issue = `must be 1 to ${max} characters`;
  return z.string().min(1, { error: issue }).max(max, { error: issue });
}

/** A route's query schema: every parameter optional, no other allowed. */
export function querySchema<S extends Record<string, QueryParam>>(params: S) {
  return z.strictObject(Object.fromEntries(Object.entries(params).map(([name, param]) => [name, param.optional()])) as { [K in keyof S]: z.ZodOptional<S[K]> });
}

export const pageParams = {
  page: integerParam(1, MAX_PAGE),
  limit: integerParam(1, MAX_PAGE_LIMIT),
};

/**
 * Parses a query string with a route's declared schema, each parameter with its own field schema, in the order the
 * query names them: unknown, repeated or invalid parameters are a 400 naming each. Nothing runs for an empty query.
 */
export function parseQuery<S extends QuerySchema>(params: URLSearchParams, schema: S): Result<z.output<S>, FleetError> {
  const issues: FieldIssue[] = [];
  const out: Record<string, unknown> = {};
  const seen = new Set<string>();
  const { shape } = schema;
  for (const [name, raw] of params) {
    const param = Object.hasOwn(shape, name) ? shape[name] : undefined;
    if (param === undefined) {
      issues.push({ field: name.slice(0, 100), issue: 'is not a known query parameter' });
      continue;
    }
    if (seen.has(name)) {
      issues.push({ field: name, issue: 'must be given once' });
      continue;
    }
    seen.add(name);
    const parsed = param.safeParse(raw);
    if (parsed.success) out[name] = parsed.data;
    else issues.push({ field: name, issue: parsed.error.issues[0]?.message ?? 'is invalid' });
  }
  return issues.length === 0 ? ok(out as z.output<S>) : err(invalidRequest(issues));
}
