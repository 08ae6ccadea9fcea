import { okAsync, type Result, type ResultAsync } from 'neverthrow';
import type { FleetError } from '../errors/fleet-error.js';
import type { IndexTransaction } from '../storage/index-store.js';
import type { EventBus } from './bus.js';
import type { FleetEventData, FleetEventType } from './catalog.js';
import type { ChangeCheck, EventOutbox } from './outbox.js';
import { okWith } from '../util/result.js';

/** The event a change announces once it has landed. */
export interface ChangeEvent<T extends FleetEventType> {
  account: string;
  type: T;
  data: FleetEventData[T];
  /** When the change happened (ISO): the event's `created_at`. */
  at: string;
  /** How recovery tells, after a crash, whether the change landed (see EventOutbox). */
  check: ChangeCheck;
}

/** What a change's writes are handed. */
export interface ChangeSteps {
  /**
   * The index entries that publish the event (undefined: nothing to publish). Put them into the same `index.commit`
   * as the change's own listing writes, so the change and its deliveries land together.
   */
  publish: IndexTransaction | undefined;
  /** For a change that failed having written nothing: forgets the staged event now rather than at recovery. */
  abandon(): ResultAsync<void, never>;
}

/**
 * The one seam between a capability that changes state (servers, tool calls) and whoever follows its events
 * (webhooks through the durable outbox, `fleet.events` listeners in this process). A writer hands its writes and the
 * event; it never learns who receives it.
 */
export class ChangeWriter {
  constructor(
    private readonly bus: EventBus,
    /** Absent: nothing is staged durably (webhooks are off); listeners in this process are still told. */
    private readonly outbox: EventOutbox | undefined,
  ) {}

  /**
   * Stages `event` durably, runs `writes`, and once they succeed publishes the event and tells this process's
   * listeners. `event` may be `undefined` when the change announces nothing after all.
   */
  write<T extends FleetEventType, R>(event: ChangeEvent<T> | undefined, writes: (steps: ChangeSteps) => ResultAsync<R, FleetError>): ResultAsync<R, FleetError> {
    if (event === undefined) return writes({ publish: undefined, abandon: () => okAsync(undefined) });
    const staging = this.outbox === undefined ? okAsync(undefined) : this.outbox.stage(event.account, event.type, event.data, event.at, event.check);
    return staging.andThen((staged) =>
      writes({
        publish: staged?.publish,
        abandon: () => (staged === undefined ? okAsync(undefined) : staged.abandon().orElse(() => okAsync(undefined))),
      }).andThen(okWith((result) => {
        staged?.published();
        this.bus.emit(event.type, { account: event.account, ...event.data });
        return result;
      })),
    );
  }

  /**
   * `write` at once, for a change with nothing to stage (webhooks off, or no recipient of the event in the account,
   * known at once over the memory stores) whose `writes` answer at once: they run, and on success this process's
   * listeners are told, as `write` tells them. `undefined` when staging might be needed: nothing ran; use `write`.
   */
  writeNow<T extends FleetEventType, R>(event: ChangeEvent<T>, writes: () => Result<R, FleetError>): Result<R, FleetError> | undefined {
    if (this.outbox !== undefined && this.outbox.hasRecipientsNow(event.account, event.type) !== false) return undefined;
    const result = writes();
    if (result.isOk()) this.bus.emit(event.type, { account: event.account, ...event.data });
    return result;
  }
}
