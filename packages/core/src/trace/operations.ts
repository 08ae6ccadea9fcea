import type { Operations } from '../operations/index.js';
import { type OperationDoor, type OperationMessage, operationChannel } from './channels.js';
import { traced } from './traced.js';

/** The operation names of the API (`servers.health_history`), by group and method of `Operations`. */
const GROUPS = { servers: 'servers', tools: 'tools', toolCalls: 'tool_calls', webhooks: 'webhooks' } as const;

/** Operations whose second argument is the server they are about. */
const ABOUT_A_SERVER = /^(servers\.(get|update|delete|health|health_history)|tools\.(call|list))$/;

/**
 * The operations as a door other than HTTP calls them (the MCP endpoint, the embedder's `fleet.*`), each run traced
 * on `mcp-fleet:operation` when anyone listens (the HTTP handler traces its routes' runs itself). `invoke` is named
 * `tools.call`, as the route it serves; what is not a function (the servers' body schemas) passes through.
 */
export function tracedOperations(operations: Operations, via: OperationDoor): Operations {
  // The keys pass as they are: `fleet.keys` is the ApiKeys object itself (its verification runs on every request).
  const out: Record<string, unknown> = { keys: operations.keys };
  for (const [group, name] of Object.entries(GROUPS)) {
    const methods = (operations as unknown as Record<string, Record<string, unknown> | undefined>)[group];
    if (methods === undefined) {
      out[group] = undefined;
      continue;
    }
    const wrapped: Record<string, unknown> = {};
    for (const [method, fn] of Object.entries(methods)) {
      wrapped[method] = typeof fn === 'function' ? tracedMethod(methods, fn as Method, operationName(name, method), via) : fn;
    }
    out[group] = wrapped;
  }
  return out as unknown as Operations;
}

type Method = (...args: unknown[]) => unknown;

function operationName(group: string, method: string): string {
  if (group === 'tools' && method === 'invoke') return 'tools.call';
  return `${group}.${method.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`)}`;
}

/**
 * `fn` as the door calls it: with no subscriber, `fn` itself on the same arguments. The traced run is a function of its
 * own, so that this wrapper captures nothing per call (no context, no closure) on the road with no subscriber.
 */
function tracedMethod(group: object, fn: Method, operation: string, via: OperationDoor): Method {
  const aboutServer = ABOUT_A_SERVER.test(operation);
  return (...args) => (operationChannel.hasSubscribers ? tracedRun(group, fn, operation, via, aboutServer, args) : fn.apply(group, args));
}

function tracedRun(group: object, fn: Method, operation: string, via: OperationDoor, aboutServer: boolean, args: unknown[]): unknown {
  const message: OperationMessage = { operation, account: String(args[0]), via };
  if (aboutServer && typeof args[1] === 'string') message.server_id = args[1];
  if (operation === 'tools.call') {
    // `call(account, server, name, args)`, or `invoke(account, server, { name, arguments })`.
    const tool = typeof args[2] === 'string' ? args[2] : (args[2] as { name?: unknown } | null | undefined)?.name;
    if (typeof tool === 'string') message.tool_name = tool;
  }
  return traced(operationChannel, message, () => fn.apply(group, args));
}
