import { ERROR_CODES, type ErrorCode } from '../errors/codes.js';
import { CLIENT_INFO } from '../mcp/connect.js';
import { errorBodySchema } from './envelope-schemas.js';
import { type JsonSchema, renderSchema, routeJsonSchemas } from './json-schema.js';
import type { Operation, Route } from './routes.js';

/** An OpenAPI 3.1 document, as JSON. */
export type OpenApiDocument = Record<string, unknown>;

const JSON_TYPE = 'application/json';
/** Where the document is served, below the fleet's prefix. */
export const OPENAPI_PATH = '/openapi.json';

/** The headers answers carry, once in `components.headers`, referred to by each response. */
const HEADERS = {
  'X-Request-Id': {
    description: 'The request id: the client\'s own `X-Request-Id` when it matches `^[A-Za-z0-9_-]{1,64}$`, else a new `req_…`. Also in `meta.request_id`.',
    schema: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' },
  },
  'X-RateLimit-Limit': {
    description: 'Requests allowed in the window of the binding limit (the account\'s operation limit or its tier\'s, whichever has less room). Absent when rate limits are off.',
    schema: { type: 'integer', minimum: 0 },
  },
  'X-RateLimit-Remaining': { description: 'Requests left in that window.', schema: { type: 'integer', minimum: 0 } },
  'X-RateLimit-Reset': { description: 'When that window ends, in Unix seconds.', schema: { type: 'integer', minimum: 0 } },
  'Retry-After': { description: 'Seconds to wait before trying again.', schema: { type: 'integer', minimum: 1 } },
} as const;

const ref = (name: keyof typeof HEADERS) => ({ $ref: `#/components/headers/${name}` });
const COUNTED_HEADERS = { 'X-Request-Id': ref('X-Request-Id'), 'X-RateLimit-Limit': ref('X-RateLimit-Limit'), 'X-RateLimit-Remaining': ref('X-RateLimit-Remaining'), 'X-RateLimit-Reset': ref('X-RateLimit-Reset') };

/** The operations' groups, by the first part of their names. */
const TAGS: Record<string, string> = {
  servers: 'The MCP servers of the account: register, read, update, delete, health.',
  tools: 'The tools of a server: list them, call one (each call is recorded).',
  tool_calls: 'The recorded tool calls of the account.',
  webhooks: 'Webhook subscriptions of the account, test pings and the delivery log.',
  keys: 'The API keys of the account: make one (never with more than the calling key holds), list, read, revoke.',
};

/** What each status means, whatever the route. */
const STATUS_TEXT: Record<number, string> = {
  400: 'The request is invalid: `details.field` and `details.issue` name the first problem.',
  401: 'No valid API key: send `Authorization: Bearer <API key>`.',
  403: 'The key lacks the scope or the tool this operation needs, or (`POST /keys`) the scope, tool, tier or expiry it would grant.',
  404: 'Not found, or not this account\'s (another account\'s resources are never revealed).',
  409: 'Conflicts with what exists: a name taken, or a quota full.',
  413: 'The body is larger than the fleet\'s `bodyLimit`.',
  415: 'The body must be JSON (`Content-Type: application/json`), not compressed.',
  429: 'A rate limit is exhausted: retry after `Retry-After` seconds.',
  500: 'An unexpected error; nothing secret is in the answer.',
  502: 'The upstream MCP server failed (refused, unreachable, broke the protocol).',
  503: 'The store is unavailable (nothing was changed), or the upstream is.',
  504: 'The upstream MCP server did not answer in time.',
};

/**
 * The document's shared parts: `components.schemas` (the error envelope, and what zod renders under `$defs`, hoisted so
 * that their references resolve inside the document) and `components.responses` (error answers several routes share).
 */
class Components {
  readonly schemas: Record<string, JsonSchema> = {};
  readonly responses: Record<string, unknown> = {};
  private readonly responseNames = new Map<string, string>();

  /** A JSON Schema rendered on its own, as a part of the document: without its `$schema` (the document's dialect is 2020-12), its `$defs` hoisted. */
  part(schema: JsonSchema): JsonSchema {
    const { $schema: _dialect, $defs, ...rest } = schema as JsonSchema & { $defs?: Record<string, JsonSchema> };
    if ($defs === undefined) return rest;
    const names = new Map(Object.entries($defs).map(([name, def]) => [name, componentName(name, def)]));
    for (const [name, def] of Object.entries($defs)) {
      const hoisted = rewriteRefs(def, names) as JsonSchema;
      const as = names.get(name) as string;
      const held = this.schemas[as];
      if (held === undefined) this.schemas[as] = hoisted;
      else if (JSON.stringify(held) !== JSON.stringify(hoisted)) throw new Error(`openapi: two different schemas render as ${as}: give one of them another id (.meta({ id }))`);
    }
    return rewriteRefs(rest, names) as JsonSchema;
  }

  /** A reference to `response` in `components.responses`, under `name` (or `name_2`… if another holds it). */
  response(name: string, response: unknown): { $ref: string } {
    const text = JSON.stringify(response);
    let as = this.responseNames.get(text);
    if (as === undefined) {
      as = name;
      for (let n = 2; this.responses[as] !== undefined; n++) as = `${name}_${n}`;
      this.responses[as] = response;
      this.responseNames.set(text, as);
    }
    return { $ref: `#/components/responses/${as}` };
  }
}

/** What a `$defs` entry is called in `components.schemas`: its id, or `JsonValue` for zod's unnamed JSON value (the MCP SDK's tool schemas). */
function componentName(name: string, def: JsonSchema): string {
  if (!/^__schema\d+$/.test(name)) return name;
  const kinds = (def.anyOf as JsonSchema[] | undefined)?.map((branch) => branch.type).join(',');
  if (kinds === 'string,number,boolean,null,object,array') return 'JsonValue';
  throw new Error(`openapi: a schema renders under $defs without an id (${name}): give it one (.meta({ id }))`);
}

/** `value` with every `#/$defs/<name>` reference pointed at `#/components/schemas/<its new name>`. */
function rewriteRefs(value: unknown, renamed: ReadonlyMap<string, string>): unknown {
  if (Array.isArray(value)) return value.map((item) => rewriteRefs(item, renamed));
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    const target = key === '$ref' && typeof item === 'string' && item.startsWith('#/$defs/') ? renamed.get(item.slice('#/$defs/'.length)) : undefined;
    out[key] = target === undefined ? rewriteRefs(item, renamed) : `#/components/schemas/${target}`;
  }
  return out;
}

/** Path and query parameters from a route's rendered params or query object. */
function parameters(where: 'path' | 'query', schema: JsonSchema | undefined): unknown[] {
  if (schema === undefined) return [];
  const required = new Set((schema.required as string[] | undefined) ?? []);
  return Object.entries((schema.properties ?? {}) as Record<string, JsonSchema>).map(([name, property]) => {
    const { description, ...rest } = property;
    return { name, in: where, required: where === 'path' || required.has(name), ...(description === undefined ? {} : { description }), schema: rest };
  });
}

/** The error answers of one route, by status: the error envelope with `error.code` held to the codes of that status. */
function errorResponses(codes: readonly ErrorCode[], components: Components): Record<string, unknown> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) {
    const status = ERROR_CODES[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const responses: Record<string, unknown> = {};
  for (const [status, list] of [...byStatus].sort(([a], [b]) => a - b)) {
    const headers = status === 429 ? { ...COUNTED_HEADERS, 'Retry-After': ref('Retry-After') } : COUNTED_HEADERS;
    responses[String(status)] = components.response(`Error${status}`, {
      description: `${STATUS_TEXT[status] ?? ERROR_CODES[list[0] as ErrorCode].message} Codes: ${list.map((code) => `\`${code}\``).join(', ')}.`,
      headers,
      content: {
        [JSON_TYPE]: {
          schema: { allOf: [{ $ref: '#/components/schemas/Error' }, { properties: { error: { properties: { code: { enum: list } } } } }] },
        },
      },
    });
  }
  return responses;
}

/** OpenAPI's path template of a route: `/servers/:id` → `/servers/{id}`. */
export const templateOf = (path: string) => path.replace(/:([A-Za-z_]+)/g, '{$1}');

function operationObject(operation: Operation, components: Components): Record<string, unknown> {
  const rendered = routeJsonSchemas(operation);
  const responses: Record<string, unknown> = {};
  for (const [status, schema] of Object.entries(rendered.responses)) {
    responses[status] = { description: 'Success: the envelope `{ success: true, data, meta }`.', headers: COUNTED_HEADERS, content: { [JSON_TYPE]: { schema: components.part(schema) } } };
  }
  const limit = operation.limit === undefined ? 'the tier\'s limit alone' : `${operation.limit} a minute per account (\`rateLimit.operations['${operation.name}']\`), within the tier's`;
  const charged = operation.charges === undefined ? '' : ` Each item it creates counts against \`${operation.charges}\`'s limit too.`;
  return {
    operationId: operation.name,
    tags: [operation.name.split('.')[0]],
    summary: operation.name,
    description: `Scope \`${operation.scope}\`. Rate limit: ${limit}.${charged}`,
    security: [{ apiKey: [operation.scope] }],
    parameters: [...parameters('path', rendered.params), ...parameters('query', rendered.query)],
    ...(rendered.body === undefined ? {} : { requestBody: { required: true, content: { [JSON_TYPE]: { schema: components.part(rendered.body) } } } }),
    responses: { ...responses, ...errorResponses(rendered.errors, components) },
    'x-rate-limit': operation.limit ?? null,
  };
}

/**
 * The HTTP API as an OpenAPI 3.1 document, rendered from the route table's declared schemas (`routes.ts`), the very
 * schemas the routes parse with and the answers are checked against. `servers[0].url` is where the API is mounted,
 * relative to the document's own URL (`/v1` at the root, `/api/v1` below `/api`).
 */
export function openApiDocument(routes: readonly Route[], base: string): OpenApiDocument {
  const paths: Record<string, Record<string, unknown>> = {};
  const components = new Components();
  for (const route of routes) {
    for (const [method, operation] of Object.entries(route.methods)) {
      const item = (paths[templateOf(operation.path)] ??= {});
      item[method.toLowerCase()] = operationObject(operation, components);
    }
  }
  const error = components.part(renderSchema(errorBodySchema, 'output'));
  return {
    openapi: '3.1.0',
    info: {
      title: 'mcp-fleet HTTP API',
      version: CLIENT_INFO.version,
      description:
        'Register MCP servers, check their health, call their tools, list the calls, manage webhooks and API keys. Every answer is an envelope: `{ success: true, data, pagination?, meta }` or `{ success: false, error: { code, message, details }, meta }`. Each error code, its status and its `details`: docs/errors.md of @mcp-fleet/core.',
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [{ url: base, description: 'Where this fleet is mounted.' }],
    security: [{ apiKey: [] }],
    tags: [...new Set(Object.values(paths).flatMap((item) => Object.values(item).flatMap((op) => (op as { tags: string[] }).tags)))].map((name) => ({ name, description: TAGS[name] ?? name })),
    paths,
    components: {
      securitySchemes: {
        apiKey: {
          type: 'http',
          scheme: 'bearer',
          description: 'An API key (`mcpf_…`), or what the fleet\'s own `authenticate` accepts. Each operation names the scope it needs.',
        },
      },
      headers: HEADERS,
      schemas: { Error: error, ...components.schemas },
      responses: components.responses,
    },
  };
}

/** Serves the document: `undefined` for any other path or method, which goes on to the API. */
export type OpenApiHandler = (request: Request, path: string, requestId: string) => Response | undefined;

/**
 * `GET`/`HEAD /openapi.json` below the mount, without a key. The document is rendered once, at the first request;
 * each answer only puts its mount point into `servers[0].url` (`/v1`, or `/api/v1` when the host app mounts the fleet
 * at `/api`), taken from the raw path the adapters pass, never from a `Host` header a client chose. A keyless request
 * thus costs one string join, however many mount points (a host route with parameters) the requests come through.
 */
export function createOpenApiHandler(routes: readonly Route[], prefix: string): OpenApiHandler {
  // The document's text around its one `servers[0].url`, split at a marker no route renders.
  let parts: [string, string] | undefined;
  const textFor = (base: string): string => {
    if (parts === undefined) {
      const marker = '\u0000mcp-fleet-base\u0000';
      const [before, after] = JSON.stringify(openApiDocument(routes, marker)).split(JSON.stringify(marker));
      parts = [before as string, after as string];
    }
    return `${parts[0]}${JSON.stringify(base)}${parts[1]}`;
  };
  return (request, path, requestId) => {
    if (path !== OPENAPI_PATH || (request.method !== 'GET' && request.method !== 'HEAD')) return undefined;
    const pathname = new URL(request.url).pathname;
    const base = pathname.endsWith(path) && pathname.length > path.length ? pathname.slice(0, -path.length) : prefix || '/';
    const headers = { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-cache', 'x-request-id': requestId };
    return new Response(request.method === 'HEAD' ? null : textFor(base), { status: 200, headers });
  };
}
