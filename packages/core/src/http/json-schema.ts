import { z } from 'zod';
import type { ErrorCode } from '../errors/codes.js';
import { errorBodySchema, successBodySchema } from './envelope-schemas.js';
import type { Operation } from './routes.js';

export type JsonSchema = z.core.JSONSchema.BaseSchema;

/** A route's declared shapes as JSON Schema (draft 2020-12): what a document of the API is rendered from. */
export interface RouteJsonSchemas {
  params: JsonSchema | undefined;
  query: JsonSchema | undefined;
  body: JsonSchema | undefined;
  /** The whole success envelope, by status. */
  responses: Record<number, JsonSchema>;
  /** The error envelope; `error.code` is one of `errors`. */
  error: JsonSchema;
  errors: readonly ErrorCode[];
}

/**
 * One schema as JSON Schema. `io: 'input'` for what a request sends (a query parameter is the string before it becomes
 * a number, a field with a default is optional), `'output'` for answers. What JSON Schema cannot say is written into
 * the schema's description (`.describe()`): refinements (an allowlist, a URL's rules) render as the type they refine.
 * A `z.custom` check cannot render at all: it renders as its `.meta()` (`unrepresentable: 'any'` keeps it, where the
 * default would throw; json-schema.test.ts lists each one, so none slips in unnoticed).
 */
export function renderSchema(schema: z.ZodType, io: 'input' | 'output', unrepresentable: 'any' | 'throw' = 'any'): JsonSchema {
  return z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable });
}

/** Everything a route declares, rendered. */
export function routeJsonSchemas(operation: Operation, unrepresentable: 'any' | 'throw' = 'any'): RouteJsonSchemas {
  const { schemas } = operation;
  const input = (schema: z.ZodType | undefined) => (schema === undefined ? undefined : renderSchema(schema, 'input', unrepresentable));
  const responses: Record<number, JsonSchema> = {};
  for (const [status, answer] of Object.entries(schemas.responses)) responses[Number(status)] = renderSchema(successBodySchema(answer), 'output', unrepresentable);
  return {
    params: input(schemas.params),
    query: input(schemas.query),
    body: input(schemas.body),
    responses,
    error: renderSchema(errorBodySchema, 'output', unrepresentable),
    errors: schemas.errors,
  };
}
