import type { Health } from '../registry/schema.js';
import type { ServerDetail } from '../registry/views.js';
import type { UpstreamFailure } from '../errors/fleet-error.js';
import type { ToolCallRecord } from '../toolcalls/tool-call-log.js';

/**
 * What happened, as the webhooks of CONTRACT "Webhooks" will tell it. Payloads carry redacted views only:
 * a listener can forward them anywhere without leaking a secret.
 */
export interface FleetEventMap {
  'server.created': { account: string; server: ServerDetail };
  'server.updated': { account: string; server: ServerDetail };
  'server.deleted': { account: string; server: ServerDetail };
  'server.health_changed': { account: string; server: ServerDetail; previous: Health; current: Health; error: UpstreamFailure | null };
  /** A tool call that ended `error` or `timeout`; the record never carries arguments or results. */
  'tool_call.failed': { account: string; call: ToolCallRecord };
}

export type FleetEventType = keyof FleetEventMap;
export type FleetEventListener<T extends FleetEventType> = (event: FleetEventMap[T]) => void | Promise<void>;

/** Synchronous fan-out; a listener that throws or rejects is reported, never allowed to fail the change. */
export class EventBus {
  private readonly listeners = new Map<FleetEventType, Set<FleetEventListener<never>>>();

  constructor(private readonly onListenerError: (error: unknown, type: FleetEventType) => void) {}

  /** Subscribes; returns the unsubscribe function. */
  on<T extends FleetEventType>(type: T, listener: FleetEventListener<T>): () => void {
    let set = this.listeners.get(type);
    if (set === undefined) this.listeners.set(type, (set = new Set()));
    set.add(listener as FleetEventListener<never>);
    return () => {
      set.delete(listener as FleetEventListener<never>);
    };
  }

  emit<T extends FleetEventType>(type: T, event: FleetEventMap[T]): void {
    for (const listener of this.listeners.get(type) ?? []) {
      try {
        const result = (listener as FleetEventListener<T>)(event);
        if (result instanceof Promise) result.catch((error: unknown) => this.onListenerError(error, type));
      } catch (error) {
        this.onListenerError(error, type);
      }
    }
  }
}
