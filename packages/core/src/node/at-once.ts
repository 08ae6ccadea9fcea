import { AT_ONCE, type AtOnceHandler, type FleetHandler } from '../http/handler.js';

/**
 * `fleet.handle` in the form that answers at once: a `Response` when no step had anything to wait for (over the
 * memory stores, a read), else its promise. A `handle` that does not carry that form (a wrapper the embedder made)
 * is called as it is. For an adapter whose framework writes a ready `Response` without a promise turn.
 */
export function atOnce(handle: FleetHandler): AtOnceHandler {
  const own = (handle as FleetHandler & { [AT_ONCE]?: AtOnceHandler })[AT_ONCE];
  return typeof own === 'function' ? own : handle;
}
