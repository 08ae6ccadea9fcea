import { ok } from 'neverthrow';
import type { FleetError } from '../errors/fleet-error.js';
import type { IndexTransaction } from '../storage/index-store.js';
import type { EventBus } from './bus.js';
import type { FleetEventData, FleetEventType } from './catalog.js';
import type { ChangeCheck, EventOutbox } from './outbox.js';
import { otherwise, type Ran, chain, chainMap } from '../util/result.js';

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
  abandon(): Ran<void, never>;
}

/** The steps of a change with nothing staged (no recipient, or webhooks off): one object for all of them. */
const NOTHING_STAGED: ChangeSteps = Object.freeze({ publish: undefined, abandon: () => ok(undefined) });

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
   * listeners. `event` may be `undefined` when the change announces nothing after all. At once when every step is:
   * nothing to stage (no recipient of the event in the account, known at once over the memory stores) and writes
   * that answer at once.
   */
  write<T extends FleetEventType, R>(event: ChangeEvent<T> | undefined, writes: (steps: ChangeSteps) => Ran<R, FleetError>): Ran<R, FleetError> {
    if (event === undefined) return writes(NOTHING_STAGED);
    const staging = this.outbox === undefined ? ok(undefined) : this.outbox.stage(event.account, event.type, event.data, event.at, event.check);
    return chain(staging, (staged) =>
      chainMap(writes(staged === undefined ? NOTHING_STAGED : { publish: staged.publish, abandon: () => otherwise(staged.abandon(), () => ok(undefined)) }), (result) => {
        staged?.published();
        this.bus.emit(event.type, { account: event.account, ...event.data });
        return result;
      }),
    );
  }
}
