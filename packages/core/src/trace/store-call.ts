import { type StoreMessage, storeChannel } from './channels.js';
import { traced } from './traced.js';

/**
 * Runs `call`, one call of a storage port's `method`, traced on `mcp-fleet:store` when anyone listens: the one line
 * each place a port is called puts around its call. Its answer (a value or a promise) is handed back as it came.
 */
export function storeCall<T>(port: StoreMessage['port'], method: string, call: () => T): T {
  if (!storeChannel.hasSubscribers) return call();
  return traced(storeChannel, { port, method }, call);
}
