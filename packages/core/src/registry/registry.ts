import { errAsync, okAsync, ResultAsync, safeTry, ok } from 'neverthrow';
import { FleetError, serverNotFound } from '../errors/fleet-error.js';
import type { IndexTransaction } from '../storage/index-store.js';
import type { IndexCalls } from '../storage/index-calls.js';
import type { RecordStore } from '../storage/records.js';
import { isId, newId } from '../util/ids.js';
import { KeyedMutex } from '../util/keyed-mutex.js';
import { type Page, type PageQuery, pagination } from '../util/pagination.js';
import { HEALTH_VALUES, type Health, SERVER_TYPES, type ServerType, type ServerValidator } from './schema.js';
import type { EventBus } from '../events/bus.js';
import type { UpstreamFailure } from '../health/health-log.js';
import { type ChangeCheck, type EventOutbox, mergeTransactions, type StagedEvent } from '../webhooks/outbox.js';
import type { WebhookEventType } from '../webhooks/schema.js';
import { type ServerRecord, toDetail } from './views.js';

export interface ListServersQuery extends PageQuery {
  type?: ServerType;
  health?: Health;
}

export interface RegistryDeps {
  records: RecordStore;
  index: IndexCalls;
  validator: ServerValidator;
  now: () => number;
  /**
   * How old a name claim must be before it may be found stale (its server gone or renamed after a crash between
   * two storage writes). Longer than any write sequence takes; shorter than anyone would wait for a freed name.
   */
  claimGraceMs: number;
  /** Told of every change that landed. */
  events: EventBus;
  /**
   * Where webhook events are staged before the change is written and published in the change's own index commit
   * (see EventOutbox). Absent: webhooks are off.
   */
  outbox?: EventOutbox;
}

const recordKey = (id: string) => `server:${id}`;
const nameKey = (account: string, name: string) => `name:${encodeURIComponent(account)}:${name}`;

function setKey(account: string, filter: { type?: ServerType | undefined; health?: Health | undefined }): string {
  let key = `servers:${encodeURIComponent(account)}`;
  if (filter.type !== undefined) key += `:type:${filter.type}`;
  if (filter.health !== undefined) key += `:health:${filter.health}`;
  return key;
}

/** Every server of every account, for the background monitor. Account keys start `servers:`, so no clash. */
const ALL_SERVERS = 'servers-all';

/** Every listing a server appears in: all, by type, by health, by both, and the global one. */
function setsOf(record: ServerRecord): string[] {
  const { account, health } = record;
  const type = record.config.type;
  return [setKey(account, {}), setKey(account, { type }), setKey(account, { health }), setKey(account, { type, health }), ALL_SERVERS];
}

/** Every listing any server of the account could appear in: where an orphaned id must be removed from. */
function allSetsOf(account: string): string[] {
  const sets = [setKey(account, {}), ALL_SERVERS];
  for (const type of SERVER_TYPES) sets.push(setKey(account, { type }));
  for (const health of HEALTH_VALUES) {
    sets.push(setKey(account, { health }));
    for (const type of SERVER_TYPES) sets.push(setKey(account, { type, health }));
  }
  return sets;
}

const score = (record: ServerRecord) => Date.parse(record.created_at);

function indexChanges(before: ServerRecord | undefined, after: ServerRecord | undefined): IndexTransaction {
  const old = new Set(before ? setsOf(before) : []);
  const next = new Set(after ? setsOf(after) : []);
  const id = (after ?? before)?.id ?? '';
  return {
    remove: [...old].filter((set) => !next.has(set)).map((set) => ({ set, member: id })),
    add: after ? [...next].filter((set) => !old.has(set)).map((set) => ({ set, member: id, score: score(after) })) : [],
  };
}

const nameExists = (name: string) => new FleetError('SERVER_NAME_EXISTS', { details: { name } });

/**
 * The servers of every account. The keyv record is the truth; name claims and listings live in the IndexStore.
 *
 * Writes are ordered so that a crash between two storage calls never loses a server nor lets two servers share a
 * name: a record is written before it is listed, a new name is claimed before a record carries it, and a name is
 * released only after no record carries it. What a crash can leave behind (an orphaned listing entry, a claim whose
 * server is gone) is repaired when it is next met. See docs/architecture.md.
 */
export class ServerRegistry {
  private readonly mutex = new KeyedMutex();

  constructor(private readonly deps: RegistryDeps) {}

  create(account: string, input: unknown): ResultAsync<ServerRecord, FleetError> {
    const validated = this.deps.validator.config(input);
    if (validated.isErr()) return errAsync(validated.error);
    const now = new Date(this.deps.now()).toISOString();
    const record: ServerRecord = {
      id: newId('server'),
      account,
      config: validated.value,
      status: 'active',
      health: 'unknown',
      created_at: now,
      updated_at: now,
    };
    const { records } = this.deps;
    return this.stage(account, 'server.created', { server: toDetail(record) }, now, { key: recordKey(record.id) }).andThen((staged) =>
      records
        .set(recordKey(record.id), record)
        .andThen(() => this.claimName(record, mergeTransactions(indexChanges(undefined, record), staged?.publish)))
        .orElse((error) =>
          // The record was written but never listed or named: remove it so nothing half-made remains.
          records
            .delete(recordKey(record.id))
            .andThen(() => (staged === undefined ? okAsync(undefined) : staged.abandon().orElse(() => okAsync(undefined))))
            .andThen(() => errAsync(error)),
        )
        .map(() => {
          staged?.published();
          this.deps.events.emit('server.created', { account, server: toDetail(record) });
          return record;
        }),
    );
  }

  get(account: string, id: string): ResultAsync<ServerRecord, FleetError> {
    // An id of the wrong form is simply unknown: no lookup, the same 404.
    if (!isId('server', id)) return errAsync(serverNotFound(id));
    return this.deps.records.get<ServerRecord>(recordKey(id)).andThen((record) =>
      record !== undefined && record.account === account ? okAsync(record) : errAsync(serverNotFound(id)),
    );
  }

  update(account: string, id: string, patch: unknown): ResultAsync<ServerRecord, FleetError> {
    return this.exclusive(id, () => {
      const self = this;
      return safeTry(async function* () {
        const current = yield* self.get(account, id);
        const config = yield* self.deps.validator.update(current.config, patch);
        const next: ServerRecord = { ...current, config, updated_at: self.nextTimestamp(current.updated_at) };
        const changes = indexChanges(current, next);
        const oldName = current.config.name;
        const newName = next.config.name;
        const staged = yield* self.stage(account, 'server.updated', { server: toDetail(next) }, next.updated_at, {
          key: recordKey(id),
          match: { updated_at: next.updated_at },
        });
        if (newName === oldName) {
          yield* self.deps.records.set(recordKey(id), next);
          yield* self.commitQuietly(mergeTransactions(changes, staged?.publish));
          staged?.published();
          self.deps.events.emit('server.updated', { account, server: toDetail(next) });
          return ok(next);
        }
        yield* self.claimName(next, {}).orElse((error) =>
          (staged === undefined ? okAsync(undefined) : staged.abandon().orElse(() => okAsync(undefined))).andThen(() => errAsync(error)),
        );
        yield* self.deps.records.set(recordKey(id), next).orElse((error) =>
          self.commitQuietly({ releases: [{ key: nameKey(account, newName), owner: id }] }).andThen(() => errAsync(error)),
        );
        yield* self.commitQuietly(mergeTransactions({ ...changes, releases: [{ key: nameKey(account, oldName), owner: id }] }, staged?.publish));
        staged?.published();
        self.deps.events.emit('server.updated', { account, server: toDetail(next) });
        return ok(next);
      });
    });
  }

  delete(account: string, id: string): ResultAsync<{ id: string; deleted: true }, FleetError> {
    return this.exclusive(id, () =>
      this.get(account, id).andThen((record) =>
        this.stage(account, 'server.deleted', { server: toDetail(record) }, new Date(this.deps.now()).toISOString(), { key: recordKey(id), absent: true }).andThen((staged) =>
        this.deps.records
          .delete(recordKey(id))
          .andThen(() =>
            this.commitQuietly(
              mergeTransactions(
                { ...indexChanges(record, undefined), releases: [{ key: nameKey(account, record.config.name), owner: id }] },
                staged?.publish,
              ),
            ),
          )
          .map(() => {
            staged?.published();
            this.deps.events.emit('server.deleted', { account, server: toDetail(record) });
            return { id, deleted: true as const };
          }),
        ),
      ),
    );
  }

  list(account: string, query: ListServersQuery): ResultAsync<Page<ServerRecord>, FleetError> {
    const set = setKey(account, query);
    const { index, records } = this.deps;
    const range = { offset: (query.page - 1) * query.limit, limit: query.limit };
    return ResultAsync.combine([index.count(set), index.range(set, range)]).andThen(([total, ids]) =>
      records.getMany<ServerRecord>(ids.map(recordKey)).andThen((found) => {
        const data: ServerRecord[] = [];
        const repairs: IndexTransaction[] = [];
        found.forEach((record, i) => {
          const id = ids[i] as string;
          if (record === undefined || record.account !== account) {
            repairs.push({ remove: allSetsOf(account).map((s) => ({ set: s, member: id })) });
          } else if ((query.type ?? record.config.type) !== record.config.type || (query.health ?? record.health) !== record.health) {
            repairs.push({ remove: [{ set, member: id }], add: setsOf(record).map((s) => ({ set: s, member: id, score: score(record) })) });
          } else {
            data.push(record);
          }
        });
        const result = { data, pagination: pagination(query, total - repairs.length) };
        if (repairs.length === 0) return okAsync(result);
        return this.commitQuietly({ remove: repairs.flatMap((r) => r.remove ?? []), add: repairs.flatMap((r) => r.add ?? []) }).map(() => result);
      }),
    );
  }

  /**
   * One page of every account's servers, oldest first: for work over all servers (the health monitor). Entries
   * whose record is gone are skipped; the account listings repair them.
   */
  everyServer(offset: number, limit: number): ResultAsync<ServerRecord[], FleetError> {
    return this.deps.index
      .range(ALL_SERVERS, { offset, limit })
      .andThen((ids) => this.deps.records.getMany<ServerRecord>(ids.map(recordKey)))
      .map((found) => found.filter((record): record is ServerRecord => record !== undefined));
  }

  /**
   * Changes the observed health of a server and moves it between the health listings; a change is staged as the
   * `server.health_changed` webhook event (with the probe's `error`) in the same steps.
   */
  setHealth(account: string, id: string, health: Health, error: UpstreamFailure | null = null): ResultAsync<ServerRecord, FleetError> {
    return this.exclusive(id, () =>
      this.get(account, id).andThen((current) => {
        if (current.health === health) return okAsync(current);
        const next = { ...current, health };
        const data = { server: toDetail(next), previous: current.health, current: health, error };
        return this.stage(account, 'server.health_changed', data, new Date(this.deps.now()).toISOString(), {
          key: recordKey(id),
          match: { health },
        }).andThen((staged) =>
          this.deps.records
            .set(recordKey(id), next)
            .andThen(() => this.commitQuietly(mergeTransactions(indexChanges(current, next), staged?.publish)))
            .map(() => {
              staged?.published();
              return next;
            }),
        );
      }),
    );
  }

  /** Stages a webhook event before the change is written; `undefined` when webhooks are off or none subscribes. */
  private stage(account: string, type: WebhookEventType, data: unknown, createdAt: string, check: ChangeCheck): ResultAsync<StagedEvent | undefined, FleetError> {
    return this.deps.outbox === undefined ? okAsync(undefined) : this.deps.outbox.stage(account, type, data, createdAt, check);
  }

  /** Claims the record's name in the same commit as `tx`; takes over a claim left stale by a crash. */
  private claimName(record: ServerRecord, tx: IndexTransaction): ResultAsync<void, FleetError> {
    const key = nameKey(record.account, record.config.name);
    const attempt = (replacing?: string) =>
      this.deps.index.commit({ ...tx, claims: [{ key, owner: record.id, ...(replacing && { replacing }) }] });
    return attempt().andThen((result) => {
      if (result.ok) return okAsync(undefined);
      const { owner, since } = result.conflict;
      if (since > this.deps.now() - this.deps.claimGraceMs) return errAsync(nameExists(record.config.name));
      return this.deps.records.get<ServerRecord>(recordKey(owner)).andThen((holder) => {
        const live = holder !== undefined && holder.account === record.account && holder.config.name === record.config.name;
        if (live) return errAsync(nameExists(record.config.name));
        return attempt(owner).andThen((retry) => (retry.ok ? okAsync(undefined) : errAsync(nameExists(record.config.name))));
      });
    });
  }

  /** Index bookkeeping after the record write: the record is already the truth, so the change is done either way. */
  private commitQuietly(tx: IndexTransaction): ResultAsync<void, FleetError> {
    const empty = !tx.add?.length && !tx.remove?.length && !tx.claims?.length && !tx.releases?.length;
    if (empty) return okAsync(undefined);
    return this.deps.index.commit(tx).map(() => undefined).orElse(() => okAsync(undefined));
  }

  /** Serializes changes to one server within this process, so concurrent updates never lose one another. */
  private exclusive<T>(id: string, task: () => ResultAsync<T, FleetError>): ResultAsync<T, FleetError> {
    return new ResultAsync(this.mutex.run(id, async () => await task()));
  }

  /** Now, but strictly after `previous`: `updated_at` always moves, even within one millisecond. */
  private nextTimestamp(previous: string): string {
    return new Date(Math.max(this.deps.now(), Date.parse(previous) + 1)).toISOString();
  }
}
