import { ok } from 'neverthrow';
import type { Principal } from '../auth/scopes.js';
import { FleetError } from '../errors/fleet-error.js';
import type { Scope } from '../auth/scopes.js';
import { type RateLimitDecision, RateLimiter } from '../ratelimit/limiter.js';
import { chainMap } from '../util/result.js';
import type { McpEndpoint } from './endpoint.js';

const NO_LIMIT = ok(null);

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
  // The headers every answer carries, as on the REST routes: the request id and the binding limit's headers as they
  // stand when asked (the endpoint asks once the body's one decision was taken). The endpoint hands them to whatever
  // makes the answer, so each answer is made with them once.
  const answerHeaders = (): Record<string, string> => ({ 'x-request-id': x.requestId, ...x.limitHeaders });
  return endpoint.handle(
    x.request,
    {
      principal,
      serverId: target.serverId,
      stepUp: x.stepUp === undefined ? undefined : (scope) => x.fail(insufficientScope(scope, x.stepUp!(scope))),
      readBody: x.context.bodyWithinLength === true ? x.context.readBody : undefined,
      answerHeaders,
      // Limits off: no decision, no headers of one (`limitHeaders` stays empty), nothing to wait for.
      admit: (batch) =>
        limiter === undefined
          ? NO_LIMIT
          : chainMap(limiter.admit(principal, batch.ofOperation > 0 ? 'tools.call' : undefined, batch), (decision) => {
              x.limitHeaders = RateLimiter.headers(decision, deps.now);
              return decision;
            }),
    },
    (decision) => refusedMessages(decision, answerHeaders()),
  );
}

/** The 403 of a method an access token lacks the scope of: the step-up challenge names the scope to ask for. */
export const insufficientScope = (scope: Scope, challenge: string) =>
  new FleetError('FORBIDDEN', {
    message: `This access token lacks the "${scope}" scope.`,
    details: { required_scope: scope },
    headers: { 'www-authenticate': challenge },
  });

/** The 429 of a body of JSON-RPC messages the limiter refused: one JSON-RPC error naming the fleet's code. */
function refusedMessages(decision: RateLimitDecision, headers: Record<string, string>): Response {
  const refusal = RateLimiter.refusal(decision);
  return Response.json(
    { jsonrpc: '2.0', error: { code: -32000, message: `${refusal.code}: ${refusal.message}`, data: refusal.details }, id: null },
    { status: 429, headers: { ...refusal.headers, ...headers } },
  );
}
