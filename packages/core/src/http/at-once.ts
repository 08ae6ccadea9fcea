import type { FleetHandler, RequestContext } from './handler.js';

/** `fleet.handle` answering at once when no step had anything to wait for: a `Response`, else its promise. */
export type AtOnceHandler = (request: Request, context?: RequestContext) => Response | Promise<Response>;

/**
 * Where `fleet.handle` carries its form that answers at once (`atOnce`): `Symbol.for`, so that every copy of core
 * agrees on it. A wrapper of `handle` made by anyone else does not carry it. Kept in this module, which imports no
 * code, so that `@mcp-fleet/core/node` (which exports `atOnce`) does not pull the handler into its bundle.
 */
export const AT_ONCE = Symbol.for('mcp-fleet.handleAtOnce');

/**
 * `fleet.handle` in the form that answers at once: a `Response` when no step had anything to wait for (over the
 * memory stores, a read), else its promise. A `handle` that does not carry that form (a wrapper the embedder made)
 * is called as it is. For an adapter whose framework writes a ready `Response` without a promise turn.
 */
export function atOnce(handle: FleetHandler): AtOnceHandler {
  const own = (handle as FleetHandler & { [AT_ONCE]?: AtOnceHandler })[AT_ONCE];
  return typeof own === 'function' ? own : handle;
}
