import { createFleet, type Fleet, type RequestContext } from '@mcp-fleet/core';
import { atOnce, mountPath } from '@mcp-fleet/core/node';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsPlugin from 'ajv-formats';
import { afterEach } from 'vitest';
import { ERROR_CODES, isErrorCode } from '../../packages/core/src/errors/codes.js';
import { AT_ONCE } from '../../packages/core/src/http/at-once.js';
import { envelopeText } from '../../packages/core/src/http/envelope.js';
import { errorBodySchema } from '../../packages/core/src/http/envelope-schemas.js';
import { splitPath } from '../../packages/core/src/http/handler.js';
import { type JsonSchema, renderSchema } from '../../packages/core/src/http/json-schema.js';
import { type OpenApiDocument, openApiDocument, templateOf } from '../../packages/core/src/http/openapi.js';
import { buildRoutes, matchRoute, type Operation, type Route } from '../../packages/core/src/http/routes.js';

/**
 * Every answer of the HTTP suite, checked against the OpenAPI document of its route table (`http/openapi.ts`, what
 * `GET /openapi.json` serves, rendered from the routes' declared schemas): the body of a success against the
 * document's answer for that route and status, an error against the error envelope, with a code the document lists for
 * that route and status, and the code's status in the one table. Ajv, draft 2020-12 (the document's dialect). The
 * served fleets of `adapters.ts` answer through `checkedFleet`; a mismatch fails the test that got it (`afterEach`).
 */

// ajv-formats is CommonJS: its default export is the plugin under ESM and under the transform alike.
const addFormats = ((addFormatsPlugin as unknown as { default?: typeof addFormatsPlugin }).default ?? addFormatsPlugin) as unknown as (
  ajv: Ajv2020,
) => Ajv2020;
const ajv = addFormats(new Ajv2020({ allErrors: true, strict: false }));
/** Validators by the JSON text of their schema: every served fleet declares the same shapes, compiled once. */
const compiled = new Map<string, ValidateFunction>();

function validator(schema: JsonSchema): ValidateFunction {
  const key = JSON.stringify(schema);
  let validate = compiled.get(key);
  if (validate === undefined) compiled.set(key, (validate = ajv.compile(schema)));
  return validate;
}

type Json = any;

/** A document's `components`, held by Ajv under an id of their own, so that its `$ref`s resolve. */
const componentIds = new Map<string, string>();

/** A response object of the document, `$ref` to `components.responses` followed. */
export function resolvedAnswer(document: OpenApiDocument, answer: Json): Json {
  return answer.$ref === undefined ? answer : (document.components as Json).responses[String(answer.$ref).split('/').pop() as string];
}

/** A schema of the document, its `#/components/…` references pointed at the document's components. */
function inDocument(document: OpenApiDocument, schema: Json): JsonSchema {
  const components = document.components as Json;
  const text = JSON.stringify(components);
  let id = componentIds.get(text);
  if (id === undefined) {
    id = `https://openapi.test/${componentIds.size + 1}.json`;
    ajv.addSchema({ $id: id, components });
    componentIds.set(text, id);
  }
  return JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', `"${id}#/components/`));
}

/** The schema of one answer of the document. */
const answerSchema = (document: OpenApiDocument, answer: Json): JsonSchema => inDocument(document, resolvedAnswer(document, answer).content['application/json'].schema);

/** A validator of any schema of the document (a request body's, a parameter's): its `$ref`s resolve in the document. */
export const schemaValidator = (document: OpenApiDocument, schema: Json): ValidateFunction => validator(inDocument(document, schema));

/** A validator of the document's `status` answer to `method` on the path template `path` (`/servers/{id}`). */
export function documentValidator(document: OpenApiDocument, path: string, method: string, status: number): ValidateFunction {
  return validator(answerSchema(document, (document.paths as Json)[path][method].responses[String(status)]));
}

interface Checked {
  /** By status, success and error alike. */
  responses: Record<number, ValidateFunction>;
  /** The error codes the document lists for the route, any status. */
  errors: ReadonlySet<string>;
}

const documents = new WeakMap<readonly Route[], OpenApiDocument>();
const byOperation = new WeakMap<Operation, Checked>();

function checkedOperation(routes: readonly Route[], operation: Operation): Checked {
  let checked = byOperation.get(operation);
  if (checked === undefined) {
    let document = documents.get(routes);
    if (document === undefined) documents.set(routes, (document = openApiDocument(routes, '/v1')));
    const answers = ((document.paths as Json)[templateOf(operation.path)][operation.method.toLowerCase()].responses ?? {}) as Record<string, Json>;
    const responses: Record<number, ValidateFunction> = {};
    const errors = new Set<string>();
    for (const [status, answer] of Object.entries(answers)) {
      const schema = answerSchema(document, answer);
      responses[Number(status)] = validator(schema);
      if (Number(status) >= 400) for (const code of (schema as Json).allOf[1].properties.error.properties.code.enum as string[]) errors.add(code);
    }
    checked = { responses, errors };
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
    const envelope = errorEnvelope();
    if (!envelope(body)) return [`${where}: the error envelope does not match: ${describe(envelope)}`];
    const code = (body as { error: { code: string } }).error.code;
    if (isErrorCode(code) && ERROR_CODES[code].category === 'request' && ERROR_CODES[code].status !== status) {
      problems.push(`${where}: ${code} answered with ${status}, the table says ${ERROR_CODES[code].status}`);
    }
    if (operation === undefined) return problems;
    const checked = checkedOperation(routes, operation);
    if (!checked.errors.has(code)) return [...problems, `${where}: ${operation.name} answered ${code}, which it does not declare`];
    const validate = checked.responses[status];
    if (validate === undefined) problems.push(`${where}: ${operation.name}'s document lists no ${status} answer`);
    else if (!validate(body)) problems.push(`${where}: ${operation.name}'s document does not list ${code} as a ${status} answer: ${describe(validate)}`);
    return problems;
  }
  if (operation === undefined) return [`${where}: a success envelope where no route is declared`];
  const validate = checkedOperation(routes, operation).responses[status];
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
  if (seen.length > 0) throw new Error(`answers that do not match the OpenAPI document of their routes (http/openapi.ts, from http/routes.ts):\n${seen.join('\n')}`);
});

/**
 * `fleet` with a `handle` that checks every envelope it answers against `routes` (by default the fleet's own table,
 * built as `createFleet` builds it) and records each mismatch. Reads the envelope's text without reading its body.
 */
export function checkedFleet(fleet: Fleet, routes: readonly Route[] = buildRoutes(fleet as never)): Fleet {
  const checked = (request: Request, context: RequestContext | undefined, response: Response): Response => {
    const text = envelopeText(response);
    if (text !== undefined) {
      const path = context?.path ?? mountPath(new URL(request.url).pathname, fleet.prefix) ?? '';
      mismatches.push(...answerProblems(routes, request.method, path, response.status, text));
    }
    return response;
  };
  // The form that answers at once too (the Hono adapter's), checked alike.
  const own = atOnce(fleet.handle);
  const answer = (request: Request, context?: RequestContext): Response | Promise<Response> => {
    const answered = own(request, context);
    return answered instanceof Promise ? answered.then((response) => checked(request, context, response)) : checked(request, context, answered);
  };
  const handle: Fleet['handle'] = async (request, context) => answer(request, context);
  return { ...fleet, handle: Object.assign(handle, { [AT_ONCE]: answer }) };
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
