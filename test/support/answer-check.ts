import { createFleet, type Fleet } from '@mcp-fleet/core';
import { mountPath } from '@mcp-fleet/core/node';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsPlugin from 'ajv-formats';
import { afterEach } from 'vitest';
import { ERROR_CODES, isErrorCode } from '../../packages/core/src/errors/codes.js';
import { envelopeText, errorBodySchema } from '../../packages/core/src/http/envelope.js';
import { splitPath } from '../../packages/core/src/http/handler.js';
import { type JsonSchema, renderSchema, routeJsonSchemas } from '../../packages/core/src/http/json-schema.js';
import { buildRoutes, matchRoute, type Operation, type Route } from '../../packages/core/src/http/routes.js';

/**
 * Every answer of the HTTP suite, checked against what its route declares (`http/routes.ts`): the body of a success
 * against the route's success envelope for that status (rendered with `z.toJSONSchema`, validated with Ajv, draft
 * 2020-12), an error against the error envelope, with a code the route declares and the code's status. The served
 * fleets of `adapters.ts` answer through `checkedFleet`; a mismatch fails the test that got it (`afterEach` below).
 */

// ajv-formats is CommonJS: its default export is the plugin under ESM and under the transform alike.
const addFormats = ((addFormatsPlugin as unknown as { default?: typeof addFormatsPlugin }).default ?? addFormatsPlugin) as unknown as (ajv: Ajv2020) => Ajv2020;
const ajv = addFormats(new Ajv2020({ allErrors: true, strict: false }));
/** Validators by the JSON text of their schema: every served fleet declares the same shapes, compiled once. */
const compiled = new Map<string, ValidateFunction>();

function validator(schema: JsonSchema): ValidateFunction {
  const key = JSON.stringify(schema);
  let validate = compiled.get(key);
  if (validate === undefined) compiled.set(key, (validate = ajv.compile(schema)));
  return validate;
}

interface Checked {
  responses: Record<number, ValidateFunction>;
  error: ValidateFunction;
  errors: ReadonlySet<string>;
}

const byOperation = new WeakMap<Operation, Checked>();

function checkedOperation(operation: Operation): Checked {
  let checked = byOperation.get(operation);
  if (checked === undefined) {
    const rendered = routeJsonSchemas(operation);
    const responses: Record<number, ValidateFunction> = {};
    for (const [status, schema] of Object.entries(rendered.responses)) responses[Number(status)] = validator(schema);
    checked = { responses, error: validator(rendered.error), errors: new Set(rendered.errors) };
    byOperation.set(operation, checked);
  }
  return checked;
}

/** The one error envelope, for answers no route made (404, 405, a 401 before the route is known). */
const errorEnvelope = (): ValidateFunction => validator(renderSchema(errorBodySchema, 'output'));

const describe = (validate: ValidateFunction) => ajv.errorsText(validate.errors, { separator: '; ', dataVar: 'body' });

/**
 * What is wrong with one answer under `routes` (nothing: `[]`). `path` is below the fleet's prefix, raw. Answers that
 * are not an envelope (MCP, the dashboard, a 204) are not judged here.
 */
export function answerProblems(routes: readonly Route[], method: string, path: string, status: number, text: string): string[] {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return [`${method} ${path} ${status}: the envelope is not JSON`];
  }
  const where = `${method} ${path} → ${status}`;
  const segments = splitPath(path);
  const match = segments.isOk() ? matchRoute(routes, segments.value, method) : undefined;
  const operation = match?.kind === 'found' ? match.operation : undefined;
  const problems: string[] = [];
  const success = (body as { success?: unknown } | null)?.success === true;
  if (!success) {
    const validate = operation === undefined ? errorEnvelope() : checkedOperation(operation).error;
    if (!validate(body)) return [`${where}: the error envelope does not match: ${describe(validate)}`];
    const code = (body as { error: { code: string } }).error.code;
    if (isErrorCode(code) && ERROR_CODES[code].category === 'request' && ERROR_CODES[code].status !== status) {
      problems.push(`${where}: ${code} answered with ${status}, the table says ${ERROR_CODES[code].status}`);
    }
    if (operation !== undefined && !checkedOperation(operation).errors.has(code)) {
      problems.push(`${where}: ${operation.name} answered ${code}, which it does not declare`);
    }
    return problems;
  }
  if (operation === undefined) return [`${where}: a success envelope where no route is declared`];
  const validate = checkedOperation(operation).responses[status];
  if (validate === undefined) return [`${where}: ${operation.name} declares no success ${status}`];
  if (!validate(body)) return [`${where}: ${operation.name}'s answer does not match its declared schema: ${describe(validate)}`];
  return problems;
}

const mismatches: string[] = [];

/** The mismatches seen since the last call, forgotten (a test that expects one takes it, so the hook below passes). */
export function takeMismatches(): string[] {
  return mismatches.splice(0);
}

afterEach(() => {
  const seen = takeMismatches();
  if (seen.length > 0) throw new Error(`answers that do not match their route's declared schemas (http/routes.ts):\n${seen.join('\n')}`);
});

/**
 * `fleet` with a `handle` that checks every envelope it answers against `routes` (by default the fleet's own table,
 * built as `createFleet` builds it) and records each mismatch. Reads the envelope's text without reading its body.
 */
export function checkedFleet(fleet: Fleet, routes: readonly Route[] = buildRoutes(fleet as never)): Fleet {
  const handle: Fleet['handle'] = async (request, context) => {
    const response = await fleet.handle(request, context);
    const text = envelopeText(response);
    if (text !== undefined) {
      const path = context?.path ?? mountPath(new URL(request.url).pathname, fleet.prefix) ?? '';
      mismatches.push(...answerProblems(routes, request.method, path, response.status, text));
    }
    return response;
  };
  return { ...fleet, handle };
}

let table: readonly Route[] | undefined;

/** The route table every fleet builds (webhooks on), for answers of a fleet in another process. */
function defaultRoutes(): readonly Route[] {
  if (table === undefined) {
    const fleet = createFleet({ rateLimit: false, webhooks: { worker: false } });
    table = buildRoutes(fleet as never);
    // Only the declarations are read: the fleet itself is not needed past this.
    void fleet.close();
  }
  return table;
}

/**
 * Checks an answer a client got from a fleet it cannot wrap (the reference server, in a process of its own), as
 * `checkedFleet` does: `path` below the prefix, its query ignored.
 */
export function checkAnswer(method: string, path: string, status: number, text: string): void {
  const query = path.indexOf('?');
  mismatches.push(...answerProblems(defaultRoutes(), method, query === -1 ? path : path.slice(0, query), status, text));
}
