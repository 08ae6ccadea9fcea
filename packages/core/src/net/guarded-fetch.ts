import { Request as UndiciRequest, fetch as undiciFetch, type Agent, type RequestInit as UndiciRequestInit } from 'undici';
import { badPortRefusal } from './bad-ports.js';
import { createGuardedAgent, isGuardedAgent, type GuardedAgentOptions } from './guarded-agent.js';

/**
 * A `fetch` whose connections all pass the guard and which never follows a redirect. Its shape is the standard
 * `fetch` (what the MCP SDK transports take as their `fetch` option); `dispatcher` is the guarded agent behind it,
 * for undici's `WebSocket` (`new WebSocket(url, { dispatcher })`) and anything else that takes a dispatcher.
 */
export interface GuardedFetch {
  (input: string | URL | Request, init?: RequestInit): Promise<Response>;
  readonly dispatcher: Agent;
}

export interface GuardedFetchOptions extends GuardedAgentOptions {
  /**
   * An agent made by `createGuardedAgent` to share (one connection pool for HTTP and WebSocket). Any other
   * dispatcher is refused, since it would bypass the guard. When given, the agent options above must be absent.
   * @default a new guarded agent from the other options
   */
  agent?: Agent;
}

/** A `Request` from another copy of undici (Node's global one) is not an instance of ours: carry its parts over. */
function toUndiciInput(input: string | URL | Request): string | URL | UndiciRequest {
  if (typeof input === 'string' || input instanceof URL || input instanceof UndiciRequest) return input;
  const init: UndiciRequestInit = {
    method: input.method,
    headers: [...input.headers],
    signal: input.signal,
    keepalive: input.keepalive,
    ...(input.body === null ? {} : { body: input.body, duplex: 'half' }),
  };
  return new UndiciRequest(input.url, init);
}

/**
 * undici's `fetch` on a guarded agent, with `redirect: 'manual'` forced whatever the caller asks: a 3xx comes back
 * as the response it is (status and `Location` readable), so a public URL cannot redirect the library into a
 * private network. Refusals and network failures reject as undici's `TypeError('fetch failed')` with the cause
 * attached; `classifyUndiciError` turns them into upstream error codes.
 */
export function createGuardedFetch(options: GuardedFetchOptions = {}): GuardedFetch {
  const { agent: given, ...agentOptions } = options;
  if (given !== undefined) {
    if (!isGuardedAgent(given)) throw new TypeError('createGuardedFetch: agent must come from createGuardedAgent.');
    if (Object.values(agentOptions).some((value) => value !== undefined)) {
      throw new TypeError('createGuardedFetch: give either agent or the options of a new agent, not both.');
    }
  }
  const agent = given ?? createGuardedAgent(agentOptions);

  const guardedFetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    // As undici's own failures reject: `TypeError('fetch failed')` with the cause.
    const refused = await badPortRefusal(agent, new URL(typeof input === 'string' || input instanceof URL ? input : input.url));
    if (refused !== undefined) throw new TypeError('fetch failed', { cause: refused });
    const response = await undiciFetch(toUndiciInput(input), {
      ...(init as UndiciRequestInit | undefined),
      dispatcher: agent,
      redirect: 'manual',
    });
    // undici's Response is the same Fetch-standard class as the global one, from a newer copy of undici.
    return response as unknown as Response;
  };
  return Object.assign(guardedFetch, { dispatcher: agent });
}
