import { type StoreMessage, storeChannel } from './channels.js';
import { traced } from './traced.js';

/** Any method of a port. */
type PortMethod = (...args: any[]) => any;

/**
 * Calls `target[method](...args)`, a storage port's method, traced on `mcp-fleet:store` when anyone listens: the one
 * line each place a port is called puts around its call. Its answer (a value or a promise) is handed back as it came.
 */
export function storeCall<T extends Record<K, PortMethod>, K extends keyof T & string>(
  port: StoreMessage['port'],
  target: T,
  method: K,
  ...args: Parameters<T[K]>
): ReturnType<T[K]> {
  if (!storeChannel.hasSubscribers) return target[method](...args);
  return traced(storeChannel, { port, method }, () => target[method](...args));
}
