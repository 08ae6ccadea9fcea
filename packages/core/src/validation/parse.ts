import { err, ok, type Result } from 'neverthrow';
import type { z } from 'zod';
import { type FieldIssue, type FleetError, invalidRequest } from '../errors/fleet-error.js';
import { isPlainObject, zodIssues } from './zod-issues.js';

export interface FieldRules {
  /** Fields the service sets: a body that names one is refused with "is read-only". @default [] */
  readOnly?: readonly string[];
  /** An issue with a top-level field that the schema cannot phrase (e.g. a field of another type), or `undefined`. */
  fieldIssue?: (field: string) => string | undefined;
}

export interface ParseOptions extends FieldRules {
  /** An update: it must name at least one field. @default false */
  patch?: boolean;
  /** What an issue about the whole input calls it. @default 'body' */
  root?: string;
}

/** The issues of the top-level fields under `rules`, in the order the body names them. */
export function fieldIssues(body: Record<string, unknown>, rules: FieldRules): FieldIssue[] {
  const issues: FieldIssue[] = [];
  for (const field of Object.keys(body)) {
    const issue = rules.readOnly?.includes(field) === true ? 'is read-only' : rules.fieldIssue?.(field);
    if (issue !== undefined) issues.push({ field, issue });
  }
  return issues;
}

/** The input as an object: a JSON object, and for a patch one that names a field. */
export function objectBody(body: unknown, options: Pick<ParseOptions, 'patch' | 'root'> = {}): Result<Record<string, unknown>, FleetError> {
  const root = options.root ?? 'body';
  if (!isPlainObject(body)) return err(invalidRequest([{ field: root, issue: 'must be a JSON object' }]));
  if (options.patch === true && Object.keys(body).length === 0) {
    return err(invalidRequest([{ field: root, issue: 'must name at least one field to change' }]));
  }
  return ok(body);
}

/**
 * Validates an input object against `schema`: read-only and other refused fields are reported by name (and left
 * out of the schema's parse, so each is reported once), together with every issue of the schema, in one 400.
 */
export function parse<S extends z.ZodType>(schema: S, body: unknown, options: ParseOptions = {}): Result<z.output<S>, FleetError> {
  return objectBody(body, options).andThen((fields): Result<z.output<S>, FleetError> => {
    const issues = fieldIssues(fields, options);
    const rest = issues.length === 0 ? fields : Object.fromEntries(Object.entries(fields).filter(([key]) => !issues.some((i) => i.field === key)));
    const parsed = schema.safeParse(rest);
    if (parsed.success && issues.length === 0) return ok(parsed.data);
    if (!parsed.success) issues.push(...zodIssues(parsed.error, rest, options.root));
    return err(invalidRequest(issues));
  });
}
