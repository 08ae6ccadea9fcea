import type { ResultAsync } from 'neverthrow';
import type { Principal, Scope } from '../auth/scopes.js';
import type { FleetError } from '../errors/fleet-error.js';
import type { HealthService } from '../health/health-service.js';
import type { ServerRegistry } from '../registry/registry.js';
import { HEALTH_VALUES, SERVER_TYPES } from '../registry/schema.js';
import { toDetail, toSummary } from '../registry/views.js';
import { TOOL_CALL_STATUSES, type ToolCallLog } from '../toolcalls/tool-call-log.js';
import type { ToolService } from '../toolcalls/tool-service.js';
import type { Pagination } from '../util/pagination.js';
import { withPageDefaults } from '../util/pagination.js';
import { enumParam, pageParams, parseQuery, stringParam } from './query.js';

export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** What an operation answers on success. */
export interface Outcome {
  status: number;
  data: unknown;
  pagination?: Pagination;
}

export interface OperationInput {
  principal: Principal;
  params: Record<string, string>;
  query: URLSearchParams;
  body: unknown;
}

export interface Operation {
  /** Stable name, used for per-operation rate limits and logs: `servers.list`. */
  name: string;
  scope: Scope;
  /** Reads a JSON body before running. */
  body: boolean;
  run(input: OperationInput): ResultAsync<Outcome, FleetError>;
}

export interface Route {
  /** Path segments; `:name` captures one. */
  segments: string[];
  methods: Partial<Record<Method, Operation>>;
}

export interface RouteServices {
  registry: ServerRegistry;
  toolCalls: ToolCallLog;
  tools: ToolService;
  health: HealthService;
}

const idOf = (params: Record<string, string>) => params.id as string;

const listServersQuery = { ...pageParams, type: enumParam(SERVER_TYPES), health: enumParam(HEALTH_VALUES) };

const listToolCallsQuery = { ...pageParams, server_id: stringParam(200), status: enumParam(TOOL_CALL_STATUSES), tool: stringParam(256) };

export function buildRoutes({ registry, toolCalls, tools, health }: RouteServices): Route[] {
  return [
    {
      segments: ['servers'],
      methods: {
        GET: {
          name: 'servers.list',
          scope: 'servers:read',
          body: false,
          run: ({ principal, query }) =>
            parseQuery(query, listServersQuery)
              .asyncAndThen((q) => registry.list(principal.account, withPageDefaults(q)))
              .map((page) => ({ status: 200, data: page.data.map(toSummary), pagination: page.pagination })),
        },
        POST: {
          name: 'servers.create',
          scope: 'servers:write',
          body: true,
          run: ({ principal, body }) => registry.create(principal.account, body).map((r) => ({ status: 201, data: toSummary(r) })),
        },
      },
    },
    {
      segments: ['servers', ':id'],
      methods: {
        GET: {
          name: 'servers.get',
          scope: 'servers:read',
          body: false,
          run: ({ principal, params }) =>
            registry.get(principal.account, idOf(params)).map((r) => ({ status: 200, data: toDetail(r) })),
        },
        PUT: {
          name: 'servers.update',
          scope: 'servers:write',
          body: true,
          run: ({ principal, params, body }) =>
            registry.update(principal.account, idOf(params), body).map((r) => ({ status: 200, data: toDetail(r) })),
        },
        DELETE: {
          name: 'servers.delete',
          scope: 'servers:write',
          body: false,
          run: ({ principal, params }) =>
            registry.delete(principal.account, idOf(params)).map((data) => ({ status: 200, data })),
        },
      },
    },
    {
      segments: ['servers', ':id', 'health'],
      methods: {
        GET: {
          name: 'servers.health',
          scope: 'servers:health',
          body: false,
          run: ({ principal, params }) =>
            health.check(principal.account, idOf(params)).map((record) => ({ status: 200, data: record })),
        },
      },
    },
    {
      segments: ['servers', ':id', 'tools'],
      methods: {
        GET: {
          name: 'tools.list',
          scope: 'tool_calls:read',
          body: false,
          run: ({ principal, params }) => tools.list(principal.account, idOf(params)).map((list) => ({ status: 200, data: list })),
        },
      },
    },
    {
      segments: ['servers', ':id', 'tools', 'call'],
      methods: {
        POST: {
          name: 'tools.call',
          scope: 'tool_calls:write',
          body: true,
          run: ({ principal, params, body }) =>
            tools.invoke(principal.account, idOf(params), body).map((outcome) => ({ status: 200, data: outcome })),
        },
      },
    },
    {
      segments: ['tool-calls'],
      methods: {
        GET: {
          name: 'tool_calls.list',
          scope: 'tool_calls:read',
          body: false,
          run: ({ principal, query }) =>
            parseQuery(query, listToolCallsQuery)
              .asyncAndThen((q) => toolCalls.list(principal.account, { ...q, ...withPageDefaults(q) }))
              .map((page) => ({ status: 200, data: page.data, pagination: page.pagination })),
        },
      },
    },
    {
      segments: ['tool-calls', ':id'],
      methods: {
        GET: {
          name: 'tool_calls.get',
          scope: 'tool_calls:read',
          body: false,
          run: ({ principal, params }) => toolCalls.get(principal.account, idOf(params)).map((call) => ({ status: 200, data: call })),
        },
      },
    },
  ];
}

export type RouteMatch =
  | { kind: 'found'; operation: Operation; params: Record<string, string> }
  | { kind: 'method-not-allowed'; allow: Method[] }
  | { kind: 'not-found' };

export function matchRoute(routes: readonly Route[], segments: readonly string[], method: string): RouteMatch {
  for (const route of routes) {
    if (route.segments.length !== segments.length) continue;
    const params: Record<string, string> = {};
    const matches = route.segments.every((pattern, i) => {
      const segment = segments[i] as string;
      if (pattern.startsWith(':')) {
        params[pattern.slice(1)] = segment;
        return true;
      }
      return pattern === segment;
    });
    if (!matches) continue;
    const operation = route.methods[method as Method];
    if (operation !== undefined) return { kind: 'found', operation, params };
    return { kind: 'method-not-allowed', allow: Object.keys(route.methods) as Method[] };
  }
  return { kind: 'not-found' };
}
