import { ok } from 'neverthrow';
import type { Principal } from '../auth/scopes.js';
import { FleetError } from '../errors/fleet-error.js';
import type { Scope } from '../auth/scopes.js';
import { type RateLimitDecision, RateLimiter } from '../ratelimit/limiter.js';
import { toAsync, okWith } from '../util/result.js';
import type { McpEndpoint } from './endpoint.js';
import { stampedAnswers } from './lean-road.js';

/** `/mcp` (every server of the account) or `/servers/{id}/mcp` (one server). */
export interface McpTarget {
  serverId?: string;
}

/** What `/mcp` and `/servers/{id}/mcp` answer (the `Allow` of a keyless `OPTIONS`). */
export const MCP_METHODS = 'GET, POST, DELETE';

/** The target of a path's segments when it is an MCP endpoint's path; `undefined` otherwise. */
export function mcpTargetOf(segments: readonly string[]): McpTarget | undefined {
  if (segments.length === 1 && segments[0] === 'mcp') return {};
  if (segments.length === 3 && segments[0] === 'servers' && segments[2] === 'mcp' && segments[1] !== undefined) return { serverId: segments[1] };
  return undefined;
}

/** The route template of a target, for logs and traces. */
export const mcpRouteOf = (target: McpTarget): string => (target.serverId === undefined ? '/mcp' : '/servers/:id/mcp');

/** What the HTTP handler lends the MCP door for one authenticated request. */
export interface McpDoorExchange {
  readonly request: Request;
  readonly requestId: string;
  /** The rate-limit headers of the binding limit: set by each decision, sent on every answer. */
  limitHeaders: Record<string, string>;
  /**
   * Set when the principal came from an OAuth access token: the `WWW-Authenticate` of the 403 `insufficient_scope`
   * for a scope it lacks (step-up authorization).
   */
  readonly stepUp: ((missing: Scope) => string) | undefined;
  /** Where the adapter's server holds the body to its length, a reader of it whole (`RequestContext`). */
  readonly context: { readonly bodyWithinLength?: boolean | undefined; readonly readBody?: (() => Promise<Uint8Array> | undefined) | undefined };
  /** The fleet's error answer (an API envelope) for what fails before any MCP is spoken. */
  fail(error: FleetError): Response;
  /** Applies a limiter decision: its headers from now on, and the 429 when it refuses. */
  limited(decision: RateLimitDecision | null): Response | undefined;
}

export interface McpDoorDeps {
  endpoint: McpEndpoint;
  /** `undefined`: rate limits are off. */
  limiter: RateLimiter | undefined;
  now: () => number;
}

/**
 * Answers `/mcp` and `/servers/{id}/mcp` for an authenticated principal: a server the account does not have is a 404
 * (counted as any authenticated request is, like a REST 404); otherwise the endpoint serves the request and counts
 * each JSON-RPC message through `admit`, refusing a body past the limit with a JSON-RPC error and HTTP 429.
 */
export async function answerMcp(deps: McpDoorDeps, x: McpDoorExchange, principal: Principal, target: McpTarget): Promise<Response> {
  const { endpoint, limiter } = deps;
  if (target.serverId !== undefined) {
    const missing = await endpoint.missingServer(principal.account, target.serverId);
    if (missing !== undefined) {
      if (limiter !== undefined) {
        const decision = await limiter.admit(principal, undefined);
        if (decision.isErr()) return x.fail(decision.error);
        const refused = x.limited(decision.value);
        if (refused !== undefined) return refused;
      }
      return x.fail(missing);
    }
  }
  const response = await endpoint.handle(
    x.request,
    {
      principal,
      serverId: target.serverId,
      stepUp: x.stepUp === undefined ? undefined : (scope) => x.fail(insufficientScope(scope, x.stepUp!(scope))),
      readBody: x.context.bodyWithinLength === true ? x.context.readBody : undefined,
      answerHeaders: () => ({ 'x-request-id': x.requestId, ...x.limitHeaders }),
      admit: (batch) =>
        toAsync(limiter === undefined ? ok(null) : limiter.admit(principal, batch.ofOperation > 0 ? 'tools.call' : undefined, batch)).andThen(
          okWith((decision) => {
            x.limitHeaders = RateLimiter.headers(decision, deps.now);
            return decision;
          }),
        ),
    },
    (decision) => refusedMessages(decision, x.limitHeaders),
  );
  // The request id and rate-limit headers on every answer, as on the REST routes; an SSE body streams through. The
  // SDK's answers are its own `new Response`s, whose headers can be set in place (no copy of the body's stream, and
  // an answer made of text stays text for the server adapter); one whose headers are immutable is copied. The lean
  // road's answers were made with them (`answerHeaders`).
  if (stampedAnswers.has(response)) return response;
  try {
    stamp(response.headers, x);
    return response;
  } catch {
    const headers = new Headers(response.headers);
    stamp(headers, x);
    return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
  }
}

function stamp(headers: Headers, x: McpDoorExchange): void {
  headers.set('x-request-id', x.requestId);
  for (const [name, value] of Object.entries(x.limitHeaders)) headers.set(name, value);
}

/** The 403 of a method an access token lacks the scope of: the step-up challenge names the scope to ask for. */
export const insufficientScope = (scope: Scope, challenge: string) =>
  new FleetError('FORBIDDEN', {
    message: `This access token lacks the "${scope}" scope.`,
    details: { required_scope: scope },
    headers: { 'www-authenticate': challenge },
  });

/** The 429 of a body of JSON-RPC messages the limiter refused: one JSON-RPC error naming the fleet's code. */
function refusedMessages(decision: RateLimitDecision, limitHeaders: Record<string, string>): Response {
  const refusal = RateLimiter.refusal(decision);
  return Response.json(
    { jsonrpc: '2.0', error: { code: -32000, message: `${refusal.code}: ${refusal.message}`, data: refusal.details }, id: null },
    { status: 429, headers: { ...refusal.headers, ...limitHeaders } },
  );
}
