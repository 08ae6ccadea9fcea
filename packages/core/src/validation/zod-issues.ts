import type { z } from 'zod';
import type { FieldIssue } from '../errors/fleet-error.js';

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `retry.max_attempts`, `args[2]`: the path of an issue as callers write it. */
export function formatPath(path: readonly PropertyKey[]): string {
  return path.reduce<string>((out, key) => {
    if (typeof key === 'number') return `${out}[${key}]`;
    return out === '' ? String(key) : `${out}.${String(key)}`;
  }, '');
}

const describeType = (value: unknown) => (value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value);

/** zod's name of an expected type as callers read it: "an integer", "an object", "a string". */
function expectedType(expected: string): string {
  if (expected === 'int') return 'an integer';
  if (expected === 'record') return 'an object';
  return /^[aeiou]/.test(expected) ? `an ${expected}` : `a ${expected}`;
}

const quoted = (values: readonly unknown[]) => values.map((v) => JSON.stringify(v)).join(' or ');

/** Issue text written here, not by zod, so that no message ever echoes a submitted value (it may be a secret). */
function issueText(issue: z.core.$ZodIssue, input: unknown): string {
  switch (issue.code) {
    case 'invalid_type':
      return input === undefined ? 'is required' : `must be ${expectedType(issue.expected)}`;
    case 'too_small':
      if (issue.origin === 'string') return issue.minimum === 1 ? 'must not be empty' : `must be at least ${issue.minimum} characters`;
      if (issue.origin === 'array') return `must have at least ${issue.minimum} items`;
      return `must be at least ${issue.minimum}`;
    case 'too_big':
      if (issue.origin === 'string') return `must be at most ${issue.maximum} characters`;
      if (issue.origin === 'array') return `must have at most ${issue.maximum} items`;
      return `must be at most ${issue.maximum}`;
    case 'invalid_value':
      return `must be ${quoted(issue.values)}`;
    case 'invalid_union':
      // A discriminated union names the tags it knows; zod reports the issue at the tag, so say what the parent must have.
      if (issue.discriminator !== undefined && 'options' in issue && issue.options !== undefined) {
        return `must have a ${issue.discriminator} of ${quoted(issue.options)}`;
      }
      return 'matches none of the allowed forms';
    case 'invalid_format':
      return 'has an invalid format';
    case 'not_multiple_of':
      return `must be a multiple of ${String(issue.divisor)}`;
    case 'invalid_key':
      return 'has an invalid key';
    case 'custom':
      return issue.message;
    default:
      return 'is invalid';
  }
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let current = root;
  for (const key of path) {
    if (!isPlainObject(current) && !Array.isArray(current)) return undefined;
    current = (current as Record<PropertyKey, unknown>)[key];
  }
  return current;
}

/**
 * zod's issues as `{ field, issue }` in our words. Only `custom` issues keep their message: write a rule whose
 * wording matters as a `refine`. `root` names an issue about the whole input.
 */
export function zodIssues(error: z.ZodError, input: unknown, root = 'body'): FieldIssue[] {
  const out: FieldIssue[] = [];
  for (const issue of error.issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) out.push({ field: formatPath([...issue.path, key]), issue: 'is not a known field' });
      continue;
    }
    if (issue.code === 'invalid_key') {
      // zod nests the key's own issues here; a refinement says best why a key (LD_PRELOAD) is refused.
      const reason = issue.issues.find((inner) => inner.code === 'custom') ?? issue.issues[0];
      out.push({ field: formatPath(issue.path), issue: reason === undefined ? 'has an invalid key' : issueText(reason, issue.input) });
      continue;
    }
    const value = valueAt(input, issue.path);
    // "must be an integer, not number" would puzzle: say what was sent only when its type is the problem.
    const wrongType = issue.code === 'invalid_type' && value !== undefined && !(issue.expected === 'int' && typeof value === 'number');
    const text = wrongType ? `must be ${expectedType(issue.expected)}, not ${describeType(value)}` : issueText(issue, value);
    out.push({ field: formatPath(issue.path) || root, issue: text });
  }
  return out;
}
