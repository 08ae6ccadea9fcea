import { okAsync, ResultAsync } from 'neverthrow';
import type { FleetError } from '../errors/fleet-error.js';
import { type IndexCalls, mergeTransactions } from '../storage/index-calls.js';
import type { IndexTransaction } from '../storage/index-store.js';
import type { RecordStore } from '../storage/records.js';
import { newId } from '../util/ids.js';
import { okWith } from '../util/result.js';

/**
 * How recovery tells whether the change behind an event landed: the record at `key` (a RecordStore key, e.g.
 * `server:srv_…`) is absent (`absent: true`, a delete) or present with these top-level field values.
 */
export interface ChangeCheck {
  key: string;
  absent?: boolean;
  match?: Record<string, unknown>;
}

/** An event as stored in the outbox, with the deliveries it fans out to (one per recipient). */
export interface EventRecord {
  id: string;
  account: string;
  type: string;
  created_at: string;
  data: unknown;
  check: ChangeCheck | null;
  deliveries: { id: string; webhook_id: string }[];
}

/** An event staged for a change that is about to be written. */
export interface StagedEvent {
  readonly event: EventRecord;
  /**
   * Makes the deliveries due. Merge it (with `mergeTransactions`) into the same `index.commit` as the change's own
   * listing writes: then the change and its deliveries land together, or recovery decides later.
   */
  readonly publish: IndexTransaction;
  /** Tell the outbox the publish landed: the local worker starts at once instead of at its next poll. */
  published(): void;
  /** The change failed and wrote nothing: forget the event. */
  abandon(): ResultAsync<void, FleetError>;
}

/**
 * Who receives events, and the pending work written for each: the port the webhooks capability implements, so that
 * the outbox (and every writer of changes) never imports it.
 */
export interface EventRecipients {
  /** Ids of the recipients of `type` in `account`; none: nothing is staged. */
  of(account: string, type: string): ResultAsync<string[], FleetError>;
  /** `of` answered at once, over stores held in this process; `undefined` otherwise. Optional. */
  ofNow?(account: string, type: string): string[] | undefined;
  /** The id of the delivery of `eventId` to `recipient`: derived, so a recovering process names it the same. */
  deliveryId(eventId: string, recipient: string): string;
  /** Writes the pending deliveries of a new event, before it is published. */
  prepare(event: EventRecord): ResultAsync<void, FleetError>;
  /** The index entries that make the event's deliveries due. */
  due(event: EventRecord): IndexTransaction;
  /** Record keys of the event's deliveries, erased with an event whose change never landed. */
  keysOf(event: EventRecord): string[];
}

export const eventKey = (id: string) => `webhook-event:${id}`;
/** Events whose change may or may not have landed yet: members `{created ms, zero-padded}:{evt}`. */
export const INTENT_SET = 'webhook-intents';

const intentMember = (createdMs: number, id: string) => `${String(Math.max(0, Math.floor(createdMs))).padStart(15, '0')}:${id}`;

export interface EventOutboxDeps {
  records: RecordStore;
  index: IndexCalls;
  recipients: EventRecipients;
  now: () => number;
  /** Intents younger than this are left alone by recovery: their change may still be on its way. */
  graceMs: number;
  /** Settled events expire this long after they are written. */
  retentionMs: number;
  /** Called when deliveries became due in this process. */
  wake: () => void;
}

/**
 * The durable outbox. A change that has recipients is written in three steps, so that no event is lost if the
 * process dies anywhere between them:
 *
 * 1. `stage` writes the event and its pending deliveries and records an intent (before the change's own write);
 * 2. the change writes its record;
 * 3. the change's index commit carries `publish`, which removes the intent and makes the deliveries due.
 *
 * A crash after 1 leaves an intent; `recover` finds it once it is older than the grace, looks at the change's record
 * (`check`) and publishes the event if the change landed, or drops it if not. Writers use it through `ChangeWriter`.
 */
export class EventOutbox {
  constructor(private readonly deps: EventOutboxDeps) {}

  /** Stages `type` for the recipients of `account`. `undefined` when there are none (nothing written). */
  stage(account: string, type: string, data: unknown, createdAt: string, check: ChangeCheck): ResultAsync<StagedEvent | undefined, FleetError> {
    return this.deps.recipients.of(account, type).andThen((recipients) => {
      if (recipients.length === 0) return okAsync(undefined);
      return this.write(account, type, data, createdAt, check, recipients).andThen((staged) =>
        this.deps.index
          .commit({ add: [{ set: INTENT_SET, member: intentMember(Date.parse(createdAt), staged.event.id), score: Date.parse(createdAt) }] })
          .andThen(okWith(() => staged)),
      );
    });
  }

  /**
   * Whether `stage` would stage anything for `type` in `account`, when that is known at once (the memory stores):
   * `false` when the account has no recipient of it, so a change may be written without staging; `undefined` otherwise.
   */
  hasRecipientsNow(account: string, type: string): boolean | undefined {
    const recipients = this.deps.recipients.ofNow?.(account, type);
    return recipients === undefined ? undefined : recipients.length > 0;
  }

  /** An event that needs no change (the test ping): written and due at once for these recipients. */
  emitNow(account: string, type: string, data: unknown, recipients: string[]): ResultAsync<EventRecord, FleetError> {
    const createdAt = new Date(this.deps.now()).toISOString();
    return this.write(account, type, data, createdAt, null, recipients).andThen((staged) =>
      this.deps.index.commit(staged.publish).andThen(okWith(() => {
        staged.published();
        return staged.event;
      })),
    );
  }

  /**
   * Publishes or drops intents older than the grace. Safe to run in several processes at once: publishing twice adds
   * the same members, and an attempt checks the delivery record before it sends.
   */
  recover(limit = 100): ResultAsync<number, FleetError> {
    const { index, records } = this.deps;
    const cutoff = this.deps.now() - this.deps.graceMs;
    return index.range(INTENT_SET, { offset: 0, limit }).andThen((members) => {
      const old = members.filter((member) => Number(member.slice(0, member.indexOf(':'))) <= cutoff);
      return ResultAsync.combine(
        old.map((member) => {
          const id = member.slice(member.indexOf(':') + 1);
          const forget: IndexTransaction = { remove: [{ set: INTENT_SET, member }] };
          return records.get<EventRecord>(eventKey(id)).andThen((event) => {
            if (event === undefined) return index.commit(forget).andThen(okWith(() => 0));
            return this.landed(event.check).andThen((landed) => {
              if (landed) return index.commit(mergeTransactions(forget, this.publishOf(event))).andThen(okWith(() => 1));
              return this.erase(event).andThen(() => index.commit(forget)).andThen(okWith(() => 0));
            });
          });
        }),
      ).andThen(okWith((published) => {
        const count = published.reduce<number>((sum, n) => sum + n, 0);
        if (count > 0) this.deps.wake();
        return count;
      }));
    });
  }

  private landed(check: ChangeCheck | null): ResultAsync<boolean, FleetError> {
    if (check === null) return okAsync(true);
    return this.deps.records.get<Record<string, unknown>>(check.key).andThen(okWith((record) => {
      if (check.absent === true) return record === undefined;
      if (record === undefined) return false;
      return Object.entries(check.match ?? {}).every(([field, value]) => record[field] === value);
    }));
  }

  private write(
    account: string,
    type: string,
    data: unknown,
    createdAt: string,
    check: ChangeCheck | null,
    recipients: string[],
  ): ResultAsync<StagedEvent, FleetError> {
    const id = newId('event');
    const event: EventRecord = {
      id,
      account,
      type,
      created_at: createdAt,
      data,
      check,
      deliveries: recipients.map((recipient) => ({ id: this.deps.recipients.deliveryId(id, recipient), webhook_id: recipient })),
    };
    return this.deps.recipients
      .prepare(event)
      .andThen(() => this.deps.records.set(eventKey(id), event, this.deps.retentionMs))
      .andThen(okWith(() => ({
        event,
        publish: this.publishOf(event),
        published: () => this.deps.wake(),
        abandon: () =>
          this.deps.index
            .commit({ remove: [{ set: INTENT_SET, member: intentMember(Date.parse(createdAt), id) }] })
            .andThen(() => this.erase(event)),
      })));
  }

  private publishOf(event: EventRecord): IndexTransaction {
    return mergeTransactions({ remove: [{ set: INTENT_SET, member: intentMember(Date.parse(event.created_at), event.id) }] }, this.deps.recipients.due(event));
  }

  private erase(event: EventRecord): ResultAsync<void, FleetError> {
    return this.deps.records.deleteMany([eventKey(event.id), ...this.deps.recipients.keysOf(event)]);
  }
}
