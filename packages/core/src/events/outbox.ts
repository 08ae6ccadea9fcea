import { ok, okAsync, ResultAsync } from 'neverthrow';
import type { FleetError } from '../errors/fleet-error.js';
import { type IndexCalls, mergeTransactions } from '../storage/index-calls.js';
import type { IndexTransaction } from '../storage/index-store.js';
import type { RecordStore } from '../storage/records.js';
import { newId } from '../util/ids.js';
import { all, okWith, type Ran, chain, chainMap, toAsync } from '../util/result.js';

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
  abandon(): Ran<void, FleetError>;
}

/**
 * Who receives events, and the pending work written for each: the port the webhooks capability implements, so that
 * the outbox (and every writer of changes) never imports it.
 */
export interface EventRecipients {
  /** Ids of the recipients of `type` in `account` (at once over stores held in this process); none: nothing is staged. */
  of(account: string, type: string): Ran<string[], FleetError>;
  /**
   * A limit that a change's own commit may carry instead of reading `of` first: it holds only while `account` has no
   * recipient of any event, and every commit that gives the account a recipient takes the same set's lock, so the two
   * commits are ordered. `undefined` where recipients are likely (this process saw some there): read them (`of`).
   */
  none(account: string): { set: string; max: number } | undefined;
  /** The id of the delivery of `eventId` to `recipient`: derived, so a recovering process names it the same. */
  deliveryId(eventId: string, recipient: string): string;
  /** Writes the pending deliveries of a new event, before it is published. */
  prepare(event: EventRecord): Ran<void, FleetError>;
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
  stage(account: string, type: string, data: unknown, createdAt: string, check: ChangeCheck): Ran<StagedEvent | undefined, FleetError> {
    return chain(this.deps.recipients.of(account, type), (recipients) => {
      if (recipients.length === 0) return ok(undefined);
      return chain(this.write(account, type, data, createdAt, check, recipients), (staged) =>
        chainMap(this.deps.index.commit({ add: [{ set: INTENT_SET, member: intentMember(Date.parse(createdAt), staged.event.id), score: Date.parse(createdAt) }] }), () => staged),
      );
    });
  }

  /** `EventRecipients.none`: a limit under which a change may commit without staging, or `undefined`. */
  none(account: string): { set: string; max: number } | undefined {
    return this.deps.recipients.none(account);
  }

  /** An event that needs no change (the test ping): written and due at once for these recipients. */
  emit(account: string, type: string, data: unknown, recipients: string[]): ResultAsync<EventRecord, FleetError> {
    const createdAt = new Date(this.deps.now()).toISOString();
    return toAsync(
      chain(this.write(account, type, data, createdAt, null, recipients), (staged) =>
        chainMap(this.deps.index.commit(staged.publish), () => {
          staged.published();
          return staged.event;
        }),
      ),
    );
  }

  /**
   * Publishes or drops intents older than the grace. Safe to run in several processes at once: publishing twice adds
   * the same members, and an attempt checks the delivery record before it sends.
   */
  recover(limit = 100): ResultAsync<number, FleetError> {
    const { index, records } = this.deps;
    const cutoff = this.deps.now() - this.deps.graceMs;
    return toAsync(index.range(INTENT_SET, { offset: 0, limit })).andThen((members) => {
      const old = members.filter((member) => Number(member.slice(0, member.indexOf(':'))) <= cutoff);
      return ResultAsync.combine(
        old.map((member) => {
          const id = member.slice(member.indexOf(':') + 1);
          const forget: IndexTransaction = { remove: [{ set: INTENT_SET, member }] };
          return toAsync(
            chain(records.get<EventRecord>(eventKey(id)), (event) => {
              if (event === undefined) return chainMap(index.commit(forget), () => 0);
              return chain(this.landed(event.check), (landed) => {
                if (landed) return chainMap(index.commit(mergeTransactions(forget, this.publishOf(event))), () => 1);
                return chainMap(chain(this.erase(event), () => index.commit(forget)), () => 0);
              });
            }),
          );
        }),
      ).andThen(okWith((published) => {
        const count = published.reduce<number>((sum, n) => sum + n, 0);
        if (count > 0) this.deps.wake();
        return count;
      }));
    });
  }

  private landed(check: ChangeCheck | null): Ran<boolean, FleetError> {
    if (check === null) return ok(true);
    return chainMap(this.deps.records.get<Record<string, unknown>>(check.key, true), (record) => {
      if (check.absent === true) return record === undefined;
      if (record === undefined) return false;
      return Object.entries(check.match ?? {}).every(([field, value]) => record[field] === value);
    });
  }

  private write(
    account: string,
    type: string,
    data: unknown,
    createdAt: string,
    check: ChangeCheck | null,
    recipients: string[],
  ): Ran<StagedEvent, FleetError> {
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
    const written = chain(this.deps.recipients.prepare(event), () => this.deps.records.set(eventKey(id), event, this.deps.retentionMs));
    return chainMap(written, () => ({
      event,
      publish: this.publishOf(event),
      published: () => this.deps.wake(),
      abandon: () => chain(this.deps.index.commit({ remove: [{ set: INTENT_SET, member: intentMember(Date.parse(createdAt), id) }] }), () => this.erase(event)),
    }));
  }

  private publishOf(event: EventRecord): IndexTransaction {
    return mergeTransactions({ remove: [{ set: INTENT_SET, member: intentMember(Date.parse(event.created_at), event.id) }] }, this.deps.recipients.due(event));
  }

  private erase(event: EventRecord): Ran<void, FleetError> {
    return this.deps.records.deleteMany([eventKey(event.id), ...this.deps.recipients.keysOf(event)]);
  }
}
