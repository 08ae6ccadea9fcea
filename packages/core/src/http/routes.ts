import { err, ok, type Result, type ResultAsync } from 'neverthrow';
import type { Principal, Scope } from '../auth/scopes.js';
import type { FleetError } from '../errors/fleet-error.js';
import type { Operations } from '../operations/index.js';
import { HEALTH_VALUES, SERVER_TYPES } from '../registry/schema.js';
import type { ListServersQuery } from '../registry/registry.js';
import { type ServerSummary, toSummary } from '../registry/views.js';
import { TOOL_CALL_STATUSES } from '../toolcalls/tool-call-log.js';
import type { InvokeOptions } from '../toolcalls/tool-service.js';
import { type JsonText, JsonList } from '../util/json-text.js';
import type { Page, Pagination } from '../util/pagination.js';
import { enumParam, pageParams, parseQuery, stringParam } from './query.js';
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
  query: URLSearchParams;
  body: unknown;
  /**
   * The request itself, for what only some operations read: a tool call, its `signal`, so that a client gone before
   * the answer cancels the upstream call (read there only: on `@hono/node-server` a `signal` costs an `AbortController`
   * and its listeners).
   */
  request: Request;
}

/** A route as the handler runs it. */
export interface Operation {
  /** Stable name, used for per-operation rate limits and logs: `servers.list`. */
  name: string;
  /** The route's template below the mount, for logs: `/servers/:id`. */
  path: string;
  /** Requests per minute per account; `undefined`: the tier limit alone (docs/rate-limits.md). */
  limit: number | undefined;
  scope: Scope;
  /** Reads a JSON body before running. */
  body: boolean;
  /** A `Result` when the operation could answer at once (over the memory stores), else a `ResultAsync` to wait for. */
  run(input: OperationInput): ResultAsync<Outcome, FleetError> | Result<Outcome, FleetError>;
}

export interface Route {
  /** Path segments; `:name` captures one. */
  segments: string[];
  methods: Partial<Record<Method, Operation>>;
}

/** One route: which operation a method and path run, under which scope and limit, and how its answer is shown. */
interface RouteSpec<A extends unknown[], T> {
  method: Method;
  /** Below the mount: `/servers/:id`. */
  path: string;
  name: string;
  limit?: number;
  scope: Scope;
  /** The operation's arguments after the account, from the request (parsed once, here or by the operation). */
  input: (request: OperationInput) => Result<A, FleetError>;
  /** Whether `input` needs the JSON body. @default false */
  body?: boolean;
  /** The operation: a `Result` when it answered at once (the memory stores), else a `ResultAsync` to wait for. */
  run: (account: string, ...args: A) => Ran<T, FleetError>;
  /** @default 200 */
  status?: number;
  /** The HTTP view of the operation's value. @default the value itself */
  view?: (value: T) => { data: unknown; pagination?: Pagination };
}

const id = ({ params }: OperationInput): Result<[string], FleetError> => ok([params.id as string]);
const idAndBody = ({ params, body }: OperationInput): Result<[string, unknown], FleetError> => ok([params.id as string, body]);
/**
 * A REST tool call: recorded as `via: "http"`, judged by the key's tool allowlist, cancelled upstream when the client
 * goes away before the answer (the request's `signal`: the adapters abort it when the connection closes first).
 */
const toolCall = ({ params, body, principal, request }: OperationInput): Result<[string, unknown, InvokeOptions], FleetError> =>
  ok([params.id as string, body, { via: 'http', tools: principal.tools ?? null, signal: request.signal }]);
/** A REST tool listing: only the tools the key's allowlist lets it call, as on `/mcp`. */
const toolList = ({ params, principal }: OperationInput): Result<[string, readonly string[] | null], FleetError> => ok([params.id as string, principal.tools ?? null]);
const bodyOnly = ({ body }: OperationInput): Result<[unknown], FleetError> => ok([body]);
const query =
  <S extends Parameters<typeof parseQuery>[1]>(spec: S) =>
  ({ query: params }: OperationInput) =>
    parseQuery(params, spec).map((parsed) => [parsed] as [typeof parsed]);
const listed = <T>(page: Page<T>) => ({ data: page.data, pagination: page.pagination });
/** Summaries as JSON text, joined by the envelope as they are. */
const listedJson = (page: Page<JsonText<ServerSummary>>) => ({ data: new JsonList(page.data), pagination: page.pagination });

const listServersQuery = { ...pageParams, type: enumParam(SERVER_TYPES), health: enumParam(HEALTH_VALUES) };
const listServersInput = ({ query: params }: OperationInput): Result<[Partial<ListServersQuery>, 'summary'], FleetError> =>
  parseQuery(params, listServersQuery).map((q) => [q, 'summary']);
const listToolCallsQuery = { ...pageParams, server_id: stringParam(200), status: enumParam(TOOL_CALL_STATUSES), tool: stringParam(256) };

/**
 * Every route of the HTTP API (docs/http-api.md), each a declaration over the operations. Limits are the contract's defaults
 * (seed: list 100, create 10, update 30, delete 10, health 60; get 100, tool-call list 100); webhooks are held to the
 * same as servers, and the test ping, which sends a request each time, to the create limit.
 */
export function buildRoutes({ servers, tools, toolCalls, webhooks }: Operations): Route[] {
  const specs = [
    // The HTTP contract lists the seed's eight fields of each server (the operation's `summary` shape), and shows them
    // for a created one: the embedder's `fleet.servers` answers details.
    route({ method: 'GET', path: '/servers', name: 'servers.list', limit: 100, scope: 'servers:read', view: listedJson, input: listServersInput,
      run: (account: string, q: Partial<ListServersQuery>, shape: 'summary') => servers.list(account, q, shape) }),
    route({ method: 'POST', path: '/servers', name: 'servers.create', limit: 10, scope: 'servers:write', body: true, input: bodyOnly, run: servers.create,
      status: 201, view: (server) => ({ data: toSummary(server) }) }),
    route({ method: 'GET', path: '/servers/:id', name: 'servers.get', limit: 100, scope: 'servers:read', input: id, run: servers.get }),
    route({ method: 'PUT', path: '/servers/:id', name: 'servers.update', limit: 30, scope: 'servers:write', body: true, input: idAndBody, run: servers.update }),
    route({ method: 'DELETE', path: '/servers/:id', name: 'servers.delete', limit: 10, scope: 'servers:write', input: id, run: servers.delete }),
    route({ method: 'GET', path: '/servers/:id/health', name: 'servers.health', limit: 60, scope: 'servers:health', input: id, run: servers.health }),
    route({ method: 'GET', path: '/servers/:id/health/history', name: 'servers.health_history', limit: 100, scope: 'servers:read', input: id, run: servers.healthHistory }),
    route({ method: 'GET', path: '/servers/:id/tools', name: 'tools.list', scope: 'tool_calls:read', input: toolList, run: tools.list }),
    route({ method: 'POST', path: '/servers/:id/tools/call', name: 'tools.call', scope: 'tool_calls:write', body: true, input: toolCall, run: tools.invoke }),
    route({ method: 'GET', path: '/tool-calls', name: 'tool_calls.list', limit: 100, scope: 'tool_calls:read', input: query(listToolCallsQuery), run: toolCalls.list, view: listed }),
    route({ method: 'GET', path: '/tool-calls/:id', name: 'tool_calls.get', scope: 'tool_calls:read', input: id, run: toolCalls.get }),
  ];
  if (webhooks !== undefined) {
    specs.push(
      route({ method: 'GET', path: '/webhooks', name: 'webhooks.list', limit: 100, scope: 'webhooks:manage', input: query(pageParams), run: webhooks.list, view: listed }),
      route({ method: 'POST', path: '/webhooks', name: 'webhooks.create', limit: 10, scope: 'webhooks:manage', body: true, input: bodyOnly, run: webhooks.create, status: 201 }),
      route({ method: 'GET', path: '/webhooks/:id', name: 'webhooks.get', limit: 100, scope: 'webhooks:manage', input: id, run: webhooks.get }),
      route({ method: 'PUT', path: '/webhooks/:id', name: 'webhooks.update', limit: 30, scope: 'webhooks:manage', body: true, input: idAndBody, run: webhooks.update }),
      route({ method: 'DELETE', path: '/webhooks/:id', name: 'webhooks.delete', limit: 10, scope: 'webhooks:manage', input: id, run: webhooks.delete }),
      // The ping takes no input; a body, if any, is not read.
      route({ method: 'POST', path: '/webhooks/:id/test', name: 'webhooks.test', limit: 10, scope: 'webhooks:manage', input: id, run: webhooks.test, status: 202 }),
      route({ method: 'GET', path: '/webhooks/:id/deliveries', name: 'webhooks.deliveries', limit: 100, scope: 'webhooks:manage', run: webhooks.deliveries, view: listed,
        input: (request) => parseQuery(request.query, pageParams).map((q) => [request.params.id as string, q] as [string, typeof q]) }),
    );
  }
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

function route<A extends unknown[], T>(spec: RouteSpec<A, T>): Declared {
  const view: (value: T) => { data: unknown; pagination?: Pagination } = spec.view ?? ((value) => ({ data: value }));
  const status = spec.status ?? 200;
  const shown = (value: T): Outcome => {
    const { data, pagination } = view(value);
    return pagination === undefined ? { status, data } : { status, data, pagination };
  };
  return {
    method: spec.method,
    path: spec.path,
    operation: {
      name: spec.name,
      path: spec.path,
      limit: spec.limit,
      scope: spec.scope,
      body: spec.body ?? false,
      run: (input) => {
        const args = spec.input(input);
        if (args.isErr()) return err(args.error);
        const { account } = input.principal;
        return chainMap(spec.run(account, ...args.value), shown);
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
