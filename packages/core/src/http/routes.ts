import { err, type Result, type ResultAsync } from 'neverthrow';
import { z } from 'zod';
import { keyRequestSchema } from '../auth/key-grants.js';
import { apiKeyViewSchema, createdApiKeySchema, toCreatedKeyView, toKeyView } from '../auth/key-views.js';
import type { Principal, Scope } from '../auth/scopes.js';
import { categoryOf, ERROR_CODES, type ErrorCode } from '../errors/codes.js';
import { type FleetError, invalidRequest } from '../errors/fleet-error.js';
import { healthHistorySchema, healthRecordSchema } from '../health/health-log.js';
import type { Operations } from '../operations/index.js';
import type { ListServersQuery } from '../registry/registry.js';
import { HEALTH_VALUES, SERVER_TYPES } from '../registry/schema.js';
import { type ServerSummary, serverDetailSchema, serverSummarySchema, toSummary } from '../registry/views.js';
import { TOOL_CALL_STATUSES, toolCallDetailSchema, toolCallRecordSchema } from '../toolcalls/tool-call-log.js';
import { callInputSchema, type InvokeOptions, toolCallOutcomeSchema, toolSchema } from '../toolcalls/tool-service.js';
import { type JsonText, JsonList } from '../util/json-text.js';
import { type Page, type Pagination, paginationSchema } from '../util/pagination.js';
import { deliveryViewSchema } from '../webhooks/deliveries.js';
import { createdWebhookSchema, webhookTestSchema } from '../webhooks/service.js';
import { webhookViewSchema } from '../webhooks/subscriptions.js';
import { zodIssues } from '../validation/zod-issues.js';
import type { AnswerSchema } from './envelope-schemas.js';
import { IMPORT_BODY_LIMIT, importBodySchema, type ImportOptions, importPlanSchema } from '../import/importer.js';
import { enumParam, pageParams, parseQuery, querySchema, type QuerySchema, stringParam } from './query.js';
import { type Ran, chainMap } from '../util/result.js';

export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** What an operation answers on success. */
export interface Outcome {
  status: number;
  data: unknown;
  pagination?: Pagination;
}

/** What a route reads from a request, once the handler has authenticated it (and read the body, for `body` routes). */
export interface OperationInput {
  principal: Principal;
  params: Record<string, string>;
  /** The URL's query, for a route that declares one (`RouteSpec.query`); `undefined` for the others, which ignore it. */
  query: URLSearchParams | undefined;
  body: unknown;
  /**
   * The request itself, for what only some operations read: a tool call, its `signal`, so that a client gone before
   * the answer cancels the upstream call (read there only: on `@hono/node-server` a `signal` costs an `AbortController`
   * and its listeners).
   */
  request: Request;
  /**
   * Counts `count` more against the limit of the operation the route `charges` (an import's servers against
   * `servers.create`), or refuses with 429; set by the handler when rate limits are on and the route charges one.
   */
  charge?: ((count: number) => Ran<void, FleetError>) | undefined;
}

/** A route's path parameters: strings, by name. */
export type ParamsSchema = z.ZodObject<Record<string, z.ZodType>>;

/**
 * What a route declares of its shapes: the source of docs/http-api.md's shapes and of any document rendered from the
 * table (render with `z.toJSONSchema`: `io: 'input'` for params, query and body, `'output'` for answers).
 */
export interface RouteSchemas {
  /** Parsed by the route, before the operation runs. */
  params: ParamsSchema | undefined;
  /** Parsed by the route (`parseQuery`), before the operation runs. */
  query: QuerySchema | undefined;
  /** The JSON body: the operation judges it with this very schema (its validator's); the route does not parse it. */
  body: z.ZodType | undefined;
  /** By success status: the envelope's `data`, and `pagination` for a listing (`successBodySchema`). */
  responses: Readonly<Record<number, AnswerSchema>>;
  /** Every code the route may answer, the handler's own before the operation included: keys of `ERROR_CODES`. */
  errors: readonly ErrorCode[];
}

/** A route as the handler runs it. */
export interface Operation {
  /** Stable name, used for per-operation rate limits and logs: `servers.list`. */
  name: string;
  method: Method;
  /** The route's template below the mount, for logs: `/servers/:id`. */
  path: string;
  /** Requests per minute per account; `undefined`: the tier limit alone (docs/rate-limits.md). */
  limit: number | undefined;
  scope: Scope;
  /** Reads a JSON body before running. */
  body: boolean;
  /** The largest body this route reads, when it may be larger than the fleet's `bodyLimit`. */
  bodyLimit: number | undefined;
  /** The operation whose limit the route counts each item it creates against (`OperationInput.charge`). */
  charges: string | undefined;
  /** The shapes the route declares: what it reads, what it answers, which error codes. */
  schemas: RouteSchemas;
  /** A `Result` when the operation could answer at once (over the memory stores), else a `ResultAsync` to wait for. */
  run(input: OperationInput): ResultAsync<Outcome, FleetError> | Result<Outcome, FleetError>;
}

export interface Route {
  /** Path segments; `:name` captures one. */
  segments: string[];
  methods: Partial<Record<Method, Operation>>;
}

/** The request as a route's `args` sees it: params and query parsed with the route's schemas, the body as received. */
export interface ParsedInput<P, Q> {
  principal: Principal;
  params: P;
  query: Q;
  body: unknown;
  request: Request;
  charge: OperationInput['charge'];
}

type Out<S> = S extends z.ZodType ? z.output<S> : Record<string, never>;

/**
 * One route: which operation a method and path run, under which scope and limit, with the shapes it reads and
 * answers, and how its answer is shown. Everything but `args`, `run` and `view` is data, read once at start.
 */
interface RouteSpec<P extends ParamsSchema | undefined, Q extends QuerySchema | undefined, A extends unknown[], T> {
  method: Method;
  /** Below the mount: `/servers/:id`. */
  path: string;
  name: string;
  limit?: number;
  scope: Scope;
  /** The path parameters, parsed here. @default none */
  params?: P;
  /** The query, parsed here (`parseQuery`). @default none: a query is ignored */
  query?: Q;
  /** The JSON body, read by the handler and judged by the operation with this very schema. @default none: not read */
  body?: z.ZodType;
  /** The largest body, in bytes, when larger than the fleet's `bodyLimit` (which wins if larger). @default the fleet's `bodyLimit` */
  bodyLimit?: number;
  /** The operation whose limit each item the route creates counts against (`OperationInput.charge`). @default none */
  charges?: string;
  /** The operation's arguments after the account, from the parsed request: typed by `params` and `query`. */
  args: (input: ParsedInput<Out<P>, Out<Q>>) => A;
  /** The operation: a `Result` when it answered at once (the memory stores), else a `ResultAsync` to wait for. */
  run: (account: string, ...args: A) => Ran<T, FleetError>;
  /** @default 200 */
  status?: number;
  /** The answer's `data`, as `view` shows it. */
  data: z.ZodType;
  /** A listing: the answer carries `pagination`. @default false */
  paginated?: boolean;
  /** The codes the operation itself may answer; the handler's (`HANDLER_ERRORS`, body and query ones) are added. */
  errors: readonly ErrorCode[];
  /** The HTTP view of the operation's value. @default the value itself */
  view?: (value: T) => { data: unknown; pagination?: Pagination };
}

/** What any route may answer before or around its operation: no key, no scope, a limit, a store down, a bug. */
const HANDLER_ERRORS = ['UNAUTHORIZED', 'FORBIDDEN', 'RATE_LIMITED', 'INTERNAL_ERROR', 'STORAGE_UNAVAILABLE'] as const satisfies ErrorCode[];
/** What reading a JSON body may answer (`readJsonBody`), and the operation's judgement of it. */
const BODY_ERRORS = ['INVALID_REQUEST', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE'] as const satisfies ErrorCode[];
/** Why a conversation with an upstream failed, as `GET /servers/{id}/tools` answers it. */
const UPSTREAM_ERRORS = (Object.keys(ERROR_CODES) as ErrorCode[]).filter((code) => categoryOf(code) === 'upstream');

const idParams = (what: string) => z.strictObject({ id: z.string().describe(`The ${what}'s id.`) });
const serverId = idParams('server');
const deleted = z.strictObject({ id: z.string(), deleted: z.literal(true) });
const revoked = z.strictObject({ id: z.string(), revoked: z.literal(true) });

const id = ({ params }: { params: { id: string } }): [string] => [params.id];
const idAndBody = ({ params, body }: { params: { id: string }; body: unknown }): [string, unknown] => [params.id, body];
const bodyOnly = ({ body }: { body: unknown }): [unknown] => [body];
const queryOnly = <Q>({ query }: { query: Q }): [Q] => [query];
const listed = <T>(page: Page<T>) => ({ data: page.data, pagination: page.pagination });
/** Summaries as JSON text, joined by the envelope as they are. */
const listedJson = (page: Page<JsonText<ServerSummary>>) => ({ data: new JsonList(page.data), pagination: page.pagination });

const pageQuery = querySchema(pageParams);
const listServersQuery = querySchema({ ...pageParams, type: enumParam(SERVER_TYPES), health: enumParam(HEALTH_VALUES) });
const listToolCallsQuery = querySchema({ ...pageParams, server_id: stringParam(200), status: enumParam(TOOL_CALL_STATUSES), tool: stringParam(256) });

/**
 * Every route of the HTTP API (docs/http-api.md), each a declaration over the operations. Limits are the contract's defaults
 * (seed: list 100, create 10, update 30, delete 10, health 60; get 100, tool-call list 100); webhooks are held to the
 * same as servers, and the test ping, which sends a request each time, to the create limit.
 */
export function buildRoutes({ servers, tools, toolCalls, webhooks, keys }: Operations): Route[] {
  const specs = [
    // The HTTP contract lists the seed's eight fields of each server (the operation's `summary` shape), and shows them
    // for a created one: the embedder's `fleet.servers` answers details.
    route({ method: 'GET', path: '/servers', name: 'servers.list', limit: 100, scope: 'servers:read', query: listServersQuery, data: z.array(serverSummarySchema), paginated: true, errors: [], view: listedJson,
      args: ({ query }): [Partial<ListServersQuery>, 'summary'] => [query, 'summary'], run: (account: string, q: Partial<ListServersQuery>, shape: 'summary') => servers.list(account, q, shape) }),
    route({ method: 'POST', path: '/servers', name: 'servers.create', limit: 10, scope: 'servers:write', body: servers.bodies.create, args: bodyOnly, run: servers.create,
      status: 201, data: serverSummarySchema, errors: ['SERVER_NAME_EXISTS', 'QUOTA_EXCEEDED'], view: (server) => ({ data: toSummary(server) }) }),
    // An import creates each server through `servers.create`, each counted against its limit (docs/import.md); the
    // request itself counts against the tier alone. Documents may be larger than a create body (`IMPORT_BODY_LIMIT`).
    route({ method: 'POST', path: '/servers/import', name: 'servers.import', scope: 'servers:write', body: importBodySchema, bodyLimit: IMPORT_BODY_LIMIT, charges: 'servers.create',
      args: ({ body, charge }): [unknown, ImportOptions] => [body, charge === undefined ? {} : { charge }], run: servers.import, data: importPlanSchema, errors: ['SERVER_NAME_EXISTS', 'QUOTA_EXCEEDED'],
      view: (plan) => ({ data: { ...plan, created: plan.created.map(({ entry, server }) => ({ entry, server: 'id' in server ? toSummary(server) : server })) } }) }),
    route({ method: 'GET', path: '/servers/:id', name: 'servers.get', limit: 100, scope: 'servers:read', params: serverId, args: id, run: servers.get, data: serverDetailSchema, errors: ['SERVER_NOT_FOUND'] }),
    route({ method: 'PUT', path: '/servers/:id', name: 'servers.update', limit: 30, scope: 'servers:write', params: serverId, body: servers.bodies.update, args: idAndBody, run: servers.update,
      data: serverDetailSchema, errors: ['SERVER_NOT_FOUND', 'SERVER_NAME_EXISTS'] }),
    route({ method: 'DELETE', path: '/servers/:id', name: 'servers.delete', limit: 10, scope: 'servers:write', params: serverId, args: id, run: servers.delete, data: deleted, errors: ['SERVER_NOT_FOUND'] }),
    route({ method: 'GET', path: '/servers/:id/health', name: 'servers.health', limit: 60, scope: 'servers:health', params: serverId, args: id, run: servers.health, data: healthRecordSchema, errors: ['SERVER_NOT_FOUND'] }),
    route({ method: 'GET', path: '/servers/:id/health/history', name: 'servers.health_history', limit: 100, scope: 'servers:read', params: serverId, args: id, run: servers.healthHistory,
      data: healthHistorySchema, errors: ['SERVER_NOT_FOUND'] }),
    // A REST tool listing: only the tools the key's allowlist lets it call, as on `/mcp`.
    route({ method: 'GET', path: '/servers/:id/tools', name: 'tools.list', scope: 'tool_calls:read', params: serverId, data: z.array(toolSchema), errors: ['SERVER_NOT_FOUND', ...UPSTREAM_ERRORS],
      args: ({ params, principal }): [string, readonly string[] | null] => [params.id, principal.tools ?? null], run: tools.list }),
    // A REST tool call: recorded as `via: "http"`, judged by the key's tool allowlist, cancelled upstream when the client
    // goes away before the answer (the request's `signal`: the adapters abort it when the connection closes first).
    route({ method: 'POST', path: '/servers/:id/tools/call', name: 'tools.call', scope: 'tool_calls:write', params: serverId, body: callInputSchema, data: toolCallOutcomeSchema, errors: ['SERVER_NOT_FOUND', 'UPSTREAM_UNAVAILABLE'],
      args: ({ params, body, principal, request }): [string, unknown, InvokeOptions] => [params.id, body, { via: 'http', tools: principal.tools ?? null, signal: request.signal }],
      run: tools.invoke }),
    route({ method: 'GET', path: '/tool-calls', name: 'tool_calls.list', limit: 100, scope: 'tool_calls:read', query: listToolCallsQuery, args: queryOnly, run: toolCalls.list,
      data: z.array(toolCallRecordSchema), paginated: true, errors: [], view: listed }),
    route({ method: 'GET', path: '/tool-calls/:id', name: 'tool_calls.get', scope: 'tool_calls:read', params: idParams('tool call'), args: id, run: toolCalls.get, data: toolCallDetailSchema, errors: ['NOT_FOUND'] }),
  ];
  if (webhooks !== undefined) {
    const webhookId = idParams('webhook');
    specs.push(
      route({ method: 'GET', path: '/webhooks', name: 'webhooks.list', limit: 100, scope: 'webhooks:manage', query: pageQuery, args: queryOnly, run: webhooks.list, data: z.array(webhookViewSchema), paginated: true, errors: [], view: listed }),
      route({ method: 'POST', path: '/webhooks', name: 'webhooks.create', limit: 10, scope: 'webhooks:manage', body: webhooks.bodies.create, args: bodyOnly, run: webhooks.create, status: 201,
        data: createdWebhookSchema, errors: ['QUOTA_EXCEEDED'] }),
      route({ method: 'GET', path: '/webhooks/:id', name: 'webhooks.get', limit: 100, scope: 'webhooks:manage', params: webhookId, args: id, run: webhooks.get, data: webhookViewSchema, errors: ['NOT_FOUND'] }),
      route({ method: 'PUT', path: '/webhooks/:id', name: 'webhooks.update', limit: 30, scope: 'webhooks:manage', params: webhookId, body: webhooks.bodies.update, args: idAndBody, run: webhooks.update,
        data: webhookViewSchema, errors: ['NOT_FOUND'] }),
      route({ method: 'DELETE', path: '/webhooks/:id', name: 'webhooks.delete', limit: 10, scope: 'webhooks:manage', params: webhookId, args: id, run: webhooks.delete, data: deleted, errors: ['NOT_FOUND'] }),
      // The ping takes no input; a body, if any, is not read.
      route({ method: 'POST', path: '/webhooks/:id/test', name: 'webhooks.test', limit: 10, scope: 'webhooks:manage', params: webhookId, args: id, run: webhooks.test, status: 202, data: webhookTestSchema, errors: ['NOT_FOUND'] }),
      route({ method: 'GET', path: '/webhooks/:id/deliveries', name: 'webhooks.deliveries', limit: 100, scope: 'webhooks:manage', params: webhookId, query: pageQuery, run: webhooks.deliveries, view: listed,
        args: ({ params, query }) => [params.id, query] as [string, typeof query], data: z.array(deliveryViewSchema), paginated: true, errors: ['NOT_FOUND'] }),
    );
  }
  // The account's API keys, for a key that holds `keys:manage`: never one with more than the caller holds
  // (`ApiKeys.createFor`); another account's key is 404 as a missing one. Create and revoke at the create limit.
  const keyId = idParams('API key');
  const ownKey = ({ params, principal }: { params: { id: string }; principal: Principal }): [string, { account: string }] => [params.id, { account: principal.account }];
  specs.push(
    route({ method: 'GET', path: '/keys', name: 'keys.list', limit: 100, scope: 'keys:manage', query: pageQuery, args: queryOnly, run: (account: string, query: z.output<typeof pageQuery>) => keys.list(account, query),
      data: z.array(apiKeyViewSchema), paginated: true, errors: [], view: (page) => ({ data: page.data.map(toKeyView), pagination: page.pagination }) }),
    route({ method: 'POST', path: '/keys', name: 'keys.create', limit: 10, scope: 'keys:manage', body: keyRequestSchema, status: 201, data: createdApiKeySchema, errors: [], view: (created) => ({ data: toCreatedKeyView(created) }),
      args: ({ body, principal }): [Principal, unknown] => [principal, body], run: (_account: string, creator: Principal, body: unknown) => keys.createFor(creator, body) }),
    route({ method: 'GET', path: '/keys/:id', name: 'keys.get', limit: 100, scope: 'keys:manage', params: keyId, args: ownKey, run: (_account: string, id: string, lookup: { account: string }) => keys.get(id, lookup),
      data: apiKeyViewSchema, errors: ['NOT_FOUND'], view: (key) => ({ data: toKeyView(key) }) }),
    route({ method: 'DELETE', path: '/keys/:id', name: 'keys.revoke', limit: 10, scope: 'keys:manage', params: keyId, args: ownKey, run: (_account: string, id: string, lookup: { account: string }) => keys.revoke(id, lookup),
      data: revoked, errors: ['NOT_FOUND'], view: (key) => ({ data: { id: key.id, revoked: true as const } }) }),
  );
  return group(specs);
}

/** The per-minute limit of each operation that has one, as the routes declare them: the rate limiter's defaults. */
export function operationLimits(routes: readonly Route[]): Record<string, number> {
  const limits: Record<string, number> = {};
  for (const { methods } of routes) {
    for (const operation of Object.values(methods)) if (operation.limit !== undefined) limits[operation.name] = operation.limit;
  }
  return limits;
}

interface Declared {
  method: Method;
  path: string;
  operation: Operation;
}

/** The codes a route may answer: the handler's, those of the input it reads, and its operation's; each once. */
function routeErrors(spec: { query?: unknown; params?: unknown; body?: unknown; errors: readonly ErrorCode[] }): ErrorCode[] {
  const input: ErrorCode[] = spec.body !== undefined ? [...BODY_ERRORS] : spec.query !== undefined || spec.params !== undefined ? ['INVALID_REQUEST'] : [];
  return [...new Set<ErrorCode>([...HANDLER_ERRORS, ...input, ...spec.errors])];
}

function route<P extends ParamsSchema | undefined, Q extends QuerySchema | undefined, A extends unknown[], T>(spec: RouteSpec<P, Q, A, T>): Declared {
  const view: (value: T) => { data: unknown; pagination?: Pagination } = spec.view ?? ((value) => ({ data: value }));
  const status = spec.status ?? 200;
  const shown = (value: T): Outcome => {
    const { data, pagination } = view(value);
    return pagination === undefined ? { status, data } : { status, data, pagination };
  };
  const { params: paramsSchema, query: querySpec } = spec;
  const schemas: RouteSchemas = {
    params: paramsSchema,
    query: querySpec,
    body: spec.body,
    responses: { [status]: spec.paginated === true ? { data: spec.data, pagination: paginationSchema } : { data: spec.data } },
    errors: routeErrors(spec),
  };
  return {
    method: spec.method,
    path: spec.path,
    operation: {
      name: spec.name,
      method: spec.method,
      path: spec.path,
      limit: spec.limit,
      scope: spec.scope,
      body: spec.body !== undefined,
      bodyLimit: spec.bodyLimit,
      charges: spec.charges,
      schemas,
      run: (input) => {
        // The one parse of the route's own input: params and query (a route without a query refuses any parameter).
        let params: unknown = {};
        if (paramsSchema !== undefined) {
          const parsed = paramsSchema.safeParse(input.params);
          if (!parsed.success) return err(invalidRequest(zodIssues(parsed.error, input.params, 'path')));
          params = parsed.data;
        }
        // A route that declares no query ignores one, as it always has.
        let query: unknown = {};
        if (querySpec !== undefined && input.query !== undefined && input.query.size > 0) {
          const parsed = parseQuery(input.query, querySpec);
          if (parsed.isErr()) return err(parsed.error);
          query = parsed.value;
        }
        const args = spec.args({ principal: input.principal, params: params as Out<P>, query: query as Out<Q>, body: input.body, request: input.request, charge: input.charge });
        const { account } = input.principal;
        return chainMap(spec.run(account, ...args), shown);
      },
    },
  };
}

function group(declared: readonly Declared[]): Route[] {
  const byPath = new Map<string, Route>();
  for (const { method, path, operation } of declared) {
    let entry = byPath.get(path);
    if (entry === undefined) byPath.set(path, (entry = { segments: path.split('/').slice(1), methods: {} }));
    entry.methods[method] = operation;
  }
  return [...byPath.values()];
}

export type RouteMatch =
  | { kind: 'found'; operation: Operation; params: Record<string, string> }
  | { kind: 'method-not-allowed'; allow: Method[] }
  | { kind: 'not-found' };

export function matchRoute(routes: readonly Route[], segments: readonly string[], method: string): RouteMatch {
  for (const route of routes) {
    if (route.segments.length !== segments.length) continue;
    const params: Record<string, string> = {};
    let matches = true;
    for (let i = 0; i < segments.length && matches; i++) {
      const pattern = route.segments[i] as string;
      if (pattern.startsWith(':')) params[pattern.slice(1)] = segments[i] as string;
      else matches = pattern === segments[i];
    }
    if (!matches) continue;
    const operation = route.methods[method as Method];
    if (operation !== undefined) return { kind: 'found', operation, params };
    return { kind: 'method-not-allowed', allow: Object.keys(route.methods) as Method[] };
  }
  return { kind: 'not-found' };
}
