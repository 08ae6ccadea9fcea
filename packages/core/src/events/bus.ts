import type { FleetEvent, FleetEventType } from './catalog.js';

export type FleetEventListener<T extends FleetEventType> = (event: FleetEvent<T>) => void | Promise<void>;

/** Who may listen: what `fleet.events` exposes, and what a capability needs to follow another's changes. */
export interface EventSource {
  /** Subscribes; returns the unsubscribe function. */
  on<T extends FleetEventType>(type: T, listener: FleetEventListener<T>): () => void;
}

/** Synchronous fan-out in this process; a listener that throws or rejects is reported, never allowed to fail the change. */
export class EventBus implements EventSource {
  private readonly listeners = new Map<FleetEventType, Set<FleetEventListener<never>>>();

  constructor(private readonly onListenerError: (error: unknown, type: FleetEventType) => void) {}

  on<T extends FleetEventType>(type: T, listener: FleetEventListener<T>): () => void {
    let set = this.listeners.get(type);
    if (set === undefined) this.listeners.set(type, (set = new Set()));
    set.add(listener as FleetEventListener<never>);
    return () => {
      set.delete(listener as FleetEventListener<never>);
    };
  }

  emit<T extends FleetEventType>(type: T, event: FleetEvent<T>): void {
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
