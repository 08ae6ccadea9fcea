import { portCall, type Ran } from '../util/result.js';
import { type StoreMessage, storeChannel } from './channels.js';
import { traced } from './traced.js';

/**
 * One call of a storage port's `method` (`portCall`: a value is a `Result` at once, a promise a `ResultAsync`, a throw
 * or a rejection STORAGE_UNAVAILABLE), traced on `mcp-fleet:store` when anyone listens. With no subscriber `call`
 * itself is handed to `portCall`: no closure, no message, nothing else is made for the trace point (the traced call is
 * made in a function of its own, so that this one captures nothing and needs no context of its own either).
 */
export function storeCall<T>(port: StoreMessage['port'], method: string, call: () => T | PromiseLike<T>): Ran<T> {
  return portCall(storeChannel.hasSubscribers ? tracedStoreCall(port, method, call) : call);
}

function tracedStoreCall<T>(port: StoreMessage['port'], method: string, call: () => T | PromiseLike<T>): () => T | PromiseLike<T> {
  return () => traced(storeChannel, { port, method }, call);
}
