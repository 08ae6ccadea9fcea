import { err, ok } from 'neverthrow';
import { FleetError } from '../errors/fleet-error.js';
import type { CommitResult, IndexTransaction } from '../storage/index-store.js';
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
  /**
   * For a writer that offered to (`write(…, true)`): the error to answer from `writes` when its commit was refused by
   * `publish`'s precondition (the account gained a recipient before the commit, or this process has not seen it yet);
   * the change is then written again with its event staged. `undefined` for any other answer.
   */
  stale(result: CommitResult): FleetError | undefined;
}

const neverStale = () => undefined;

/** The steps of a change with nothing staged (no recipient, or webhooks off): one object for all of them. */
const NOTHING_STAGED: ChangeSteps = Object.freeze({ publish: undefined, abandon: () => ok(undefined), stale: neverStale });

/**
 * What a guarded change's `writes` answer when their commit was refused by the precondition (`ChangeSteps.stale`):
 * never seen outside `ChangeWriter.write`, which writes the change again with its event staged. Made once: an error's
 * stack, made per create, showed in the CPU profile of creates.
 */
const RECIPIENTS_LISTED = new FleetError('INTERNAL_ERROR', { message: 'The account lists event recipients: the change is written again with its event staged.' });

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
   *
   * `guarded`: the writer's one commit carries `publish` and it answers `stale`'s error when that commit is refused by
   * it (its writes undone, as for any refused commit). Then, unless this process saw recipients in the account lately
   * (`EventOutbox.none`), nothing is read or staged first: `publish` is a precondition that the account has no
   * recipient at all, checked in the change's own commit, and only a refusal by it stages the event (reading the
   * recipients as any change does) and runs `writes` again. A commit that lands under the precondition had no
   * recipient to deliver to: nothing to stage, nothing a crash could lose.
   */
  write<T extends FleetEventType, R>(event: ChangeEvent<T> | undefined, writes: (steps: ChangeSteps) => Ran<R, FleetError>, guarded = false): Ran<R, FleetError> {
    if (event === undefined) return writes(NOTHING_STAGED);
    const none = guarded ? this.outbox?.none(event.account) : undefined;
    const written = none === undefined ? this.staged(event, writes) : this.unstaged(event, writes, none);
    return chainMap(written, (result) => {
      this.bus.emit(event.type, { account: event.account, ...event.data });
      return result;
    });
  }

  private staged<T extends FleetEventType, R>(event: ChangeEvent<T>, writes: (steps: ChangeSteps) => Ran<R, FleetError>): Ran<R, FleetError> {
    const staging = this.outbox === undefined ? ok(undefined) : this.outbox.stage(event.account, event.type, event.data, event.at, event.check);
    return chain(staging, (staged) =>
      chainMap(writes(staged === undefined ? NOTHING_STAGED : { publish: staged.publish, abandon: () => otherwise(staged.abandon(), () => ok(undefined)), stale: neverStale }), (result) => {
        staged?.published();
        return result;
      }),
    );
  }

  private unstaged<T extends FleetEventType, R>(event: ChangeEvent<T>, writes: (steps: ChangeSteps) => Ran<R, FleetError>, none: { set: string; max: number }): Ran<R, FleetError> {
    const tried = writes({
      publish: { limits: [none] },
      abandon: () => ok(undefined),
      stale: (result) => (!result.ok && result.full?.set === none.set ? RECIPIENTS_LISTED : undefined),
    });
    return otherwise(tried, (error) => (error === RECIPIENTS_LISTED ? this.staged(event, writes) : err(error)));
  }
}
