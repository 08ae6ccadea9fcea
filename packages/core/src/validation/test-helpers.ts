import type { Result } from 'neverthrow';
import type { FieldIssue, FleetError } from '../errors/fleet-error.js';

/** Every field issue of a refused input, as `invalidRequest` put them into the error's details. */
export function issuesOf(result: Result<unknown, FleetError>): FieldIssue[] {
  if (result.isOk()) throw new Error(`expected issues, got ${JSON.stringify(result.value)}`);
  const details = result.error.details as { field?: string; issue?: string; issues?: FieldIssue[] };
  if (details.issues !== undefined) return details.issues;
  return details.field === undefined ? [] : [{ field: details.field, issue: details.issue ?? '' }];
}
