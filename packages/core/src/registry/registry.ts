import { err, errAsync, ok, okAsync, type Result, ResultAsync } from 'neverthrow';
import { FleetError, quotaExceeded, serverNotFound } from '../errors/fleet-error.js';
import type { CommitResult, IndexTransaction } from '../storage/index-store.js';
import type { IndexCalls } from '../storage/index-calls.js';
import { NOT_NOW, type RecordStore } from '../storage/records.js';
import { isId, newId } from '../util/ids.js';
import { kept, memoKeys } from '../util/key-memo.js';
import { KeyedMutex } from '../util/keyed-mutex.js';
import { type Page, type PageQuery, pagination } from '../util/pagination.js';
import { HEALTH_VALUES, type Health, SERVER_TYPES, type ServerConfig, type ServerType, type ServerValidator, type StdioServerConfig } from './schema.js';
import type { ChangeSteps, ChangeWriter } from '../events/change-writer.js';
import type { UpstreamFailure } from '../errors/fleet-error.js';
import { mergeTransactions } from '../storage/index-calls.js';
import { type PageRead, readPage, readPageNow, readRange } from '../storage/read-page.js';
import { SecretBox } from '../util/secret-box.js';
import { hasStaleSecrets, revealConfig, revealConfigNow, sealConfig, sealConfigNow } from './secrets.js';
import { type ServerRecord, toDetail } from './views.js';
import { isoTimeOf } from '../util/iso-time.js';
import { okWith, recover } from '../util/result.js';

/**
 * How `list` shows each record: it must only read it. `stored`: the record is the stored object itself, never
 * changed while stored, so a value derived from it may be kept for as long as the object lives (`summaryJson`).
 */
export type ListView<V> = (record: ServerRecord, stored: boolean) => V;

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
  /** Where each change's event goes: staged before the change is written, published in its own index commit. */
  changes: ChangeWriter;
  /** Seals the configuration's secrets before a record is written; opens them only where they are used. @default no key: stored as they are */
  secrets?: SecretBox;
  /** Servers per account, held by the listing commit itself, so across processes sharing the storage. @default 1000 */
  maxPerAccount?: number;
  /**
   * A check of a stdio configuration that needs the account and the host (its user can reach the files), after the
   * validator's and before anything is written, at create and update. @default none
   */
  checkStdio?: (account: string, config: StdioServerConfig) => ResultAsync<void, FleetError>;
}

/** Servers per account unless `quotas.serversPerAccount` says otherwise. */
export const DEFAULT_SERVERS_PER_ACCOUNT = 1000;

const recordKey = memoKeys((id) => `server:${id}`);
/** Joined, not `+`-ed: the index keeps the key of each name as long as the server lives, and `join` makes one flat string. */
const nameKey = (account: string, name: string) => ['name:', encodeURIComponent(account), ':', name].join('');

function setKey(account: string, filter: { type?: ServerType | undefined; health?: Health | undefined }): string {
  let key = `servers:${encodeURIComponent(account)}`;
  if (filter.type !== undefined) key += `:type:${filter.type}`;
  if (filter.health !== undefined) key += `:health:${filter.health}`;
  return key;
}

/** Items of the pages `listNow` keeps, at most, over all pages (about 5 MB of summaries' texts): then it starts again. */
const MAX_PAGE_ITEMS_KEPT = 20_000;

/** Every server of every account, for the background monitor. Account keys start `servers:`, so no clash. */
const ALL_SERVERS = 'servers-all';

/** Every listing a server appears in: all, by type, by health, by both, and the global one. */
function setsOf(record: ServerRecord): string[] {
  const { account, health } = record;
  const type = record.config.type;
  return [setKey(account, {}), setKey(account, { type }), setKey(account, { health }), setKey(account, { type, health }), ALL_SERVERS];
}

/** `setsOf` by account, type and health, made once (at most 10,000 accounts, then forgotten all at once). */
const listingsKept = new Map<string, Map<string, readonly string[]>>();

/**
 * `setsOf(record)`, the same names kept and handed out again (never to be changed): the index looks each set up by
 * its name, and a name made afresh is a new string that must be flattened and hashed again (see `memoKeys`).
 */
function listingsOf(record: ServerRecord): readonly string[] {
  const byAccount = kept(listingsKept, record.account, () => new Map<string, readonly string[]>());
  return kept(byAccount, `${record.config.type}:${record.health}`, () => setsOf(record));
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
    add: after === undefined ? [] : added(after, [...next].filter((set) => !old.has(set)), id),
  };
}

/** The listing entries of `record` in `sets`, its score read once. */
function added(record: ServerRecord, sets: string[], id: string): { set: string; member: string; score: number }[] {
  const at = score(record);
  return sets.map((set) => ({ set, member: id, score: at }));
}

/** `record` when it is a server of `account`; otherwise (absent, or another account's) the 404 of `id`. */
const ownServer = (record: ServerRecord | undefined, account: string, id: string): Result<ServerRecord, FleetError> =>
  record !== undefined && record.account === account ? ok(record) : err(serverNotFound(id));

const nameExists = (name: string) => new FleetError('SERVER_NAME_EXISTS', { details: { name } });

/** A name claim older than the grace: its holder's id. */
interface StaleClaim {
  holder: string;
}

const isStale = (outcome: FleetError | StaleClaim | undefined): outcome is StaleClaim => outcome !== undefined && !(outcome instanceof FleetError);

/** Whether `holder` (the server holding a claim) is a server of `record`'s account that carries its name. */
const carriesName = (holder: ServerRecord | undefined, record: ServerRecord) =>
  holder !== undefined && holder.account === record.account && holder.config.name === record.config.name;

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
  /** The last page read at once for each listing, page and size, with the change counts it was read at (`listNow`). */
  private readonly pages = new Map<string, { changes: number; commits: number; view: ListView<unknown>; page: Page<unknown> }>();
  private pagesItems = 0;
  /** `created_at`'s text of creates at once, made once per millisecond of the clock (`isoTimeOf`). */
  private readonly isoAt = isoTimeOf();
  private readonly deps: RegistryDeps & { secrets: SecretBox };

  constructor(deps: RegistryDeps) {
    this.deps = { ...deps, secrets: deps.secrets ?? new SecretBox() };
  }

  create(account: string, input: unknown): ResultAsync<ServerRecord, FleetError> {
    const validated = this.deps.validator.config(input);
    if (validated.isErr()) return errAsync(validated.error);
    const now = new Date(this.deps.now()).toISOString();
    const id = newId('server');
    return this.checkHost(account, validated.value)
      .andThen(() => sealConfig(this.deps.secrets, id, validated.value))
      .andThen((config) => this.insert({ id, account, config, status: 'active', health: 'unknown', created_at: now, updated_at: now }));
  }

  /**
   * `create` at once, when the records and the listings are held in this process (the memory stores, whose index
   * applies a commit at once) and nothing waits: no secret to seal before the key check has settled, no webhook to
   * stage the event for. The same checks in the same order and the same writes in the same order as `create`, in one
   * synchronous step, so no other change can come between them. `undefined` otherwise, having written nothing: use
   * `create` then. The record answered is the one stored, not a copy: read it (`toDetail`, which shares nothing with
   * it), never change or keep it.
   */
  createNow(account: string, input: unknown): Result<ServerRecord, FleetError> | undefined {
    const { records, index, changes, maxPerAccount = DEFAULT_SERVERS_PER_ACCOUNT } = this.deps;
    if (!records.sharesStoredObjects || !index.commitsAtOnce) return undefined;
    const validated = this.deps.validator.config(input);
    if (validated.isErr()) return err(validated.error);
    // The host check of a stdio server waits for the store (the account's user): `create` does it.
    if (validated.value.type === 'stdio' && this.deps.checkStdio !== undefined) return undefined;
    const ms = this.deps.now();
    const now = this.isoAt(ms);
    const id = newId('server');
    const config = sealConfigNow(this.deps.secrets, id, validated.value);
    if (config === undefined) return undefined;
    if (config.isErr()) return err(config.error);
    const record: ServerRecord = { id, account, config: config.value, status: 'active', health: 'unknown', created_at: now, updated_at: now };
    const sets = listingsOf(record);
    const all = sets[0] as string;
    const count = index.countNow(all);
    if (count === undefined) return undefined;
    // A full account is refused before anything is written; the limit in the commit holds the quota all the same.
    if (count >= maxPerAccount) return err(quotaExceeded('servers', maxPerAccount));
    // Not through `recordKey`: an id made now was never read, and keeping its key would only push out keys that are.
    const key = `server:${id}`;
    const event = { account, type: 'server.created' as const, data: { server: toDetail(record) }, at: now, check: { key } };
    return changes.writeNow(event, () => {
      // Written before it is listed and named, as `insert` does, and removed when the commit is refused. The score is
      // `created_at`'s own millisecond (`score` would parse it back). Handed over, not copied: the record and its
      // configuration were made here (the validator's output shares nothing with the input).
      records.handOverNow(key, record);
      const claimed = this.claimNameNow(record, { add: sets.map((set) => ({ set, member: id, score: ms })), limits: [{ set: all, max: maxPerAccount }] });
      if (claimed.isErr()) records.deleteNow(key);
      return claimed.map(() => record);
    });
  }

  private checkHost(account: string, config: ServerConfig): ResultAsync<void, FleetError> {
    const { checkStdio } = this.deps;
    return config.type === 'stdio' && checkStdio !== undefined ? checkStdio(account, config) : okAsync(undefined);
  }

  private insert(record: ServerRecord): ResultAsync<ServerRecord, FleetError> {
    const { records, index, maxPerAccount = DEFAULT_SERVERS_PER_ACCOUNT } = this.deps;
    const { account, created_at: now } = record;
    const event = { account, type: 'server.created' as const, data: { server: toDetail(record) }, at: now, check: { key: recordKey(record.id) } };
    const limit = { limits: [{ set: setKey(account, {}), max: maxPerAccount }] };
    // A full account is refused before anything is written or staged; the limit in the listing commit holds the
    // quota against creates racing in other processes.
    return index
      .count(setKey(account, {}))
      .andThen((count) => (count >= maxPerAccount ? errAsync(quotaExceeded('servers', maxPerAccount)) : okAsync(undefined)))
      .andThen(() => this.deps.changes.write(event, ({ publish, abandon }) =>
      recover(
        records.set(recordKey(record.id), record).andThen(() => this.claimName(record, mergeTransactions(indexChanges(undefined, record), publish, limit))),
        (error) =>
          // The record was written but never listed or named: remove it so nothing half-made remains.
          records
            .delete(recordKey(record.id))
            .andThen(abandon)
            .andThen(() => errAsync(error)),
      ).andThen(okWith(() => record)),
    ));
  }

  get(account: string, id: string): ResultAsync<ServerRecord, FleetError> {
    // An id of the wrong form is simply unknown: no lookup, the same 404.
    if (!isId('server', id)) return errAsync(serverNotFound(id));
    return this.deps.records.get<ServerRecord>(recordKey(id)).andThen((record) => ownServer(record, account, id));
  }

  /** The server with its secrets opened, to connect to it: only where a secret is used (probes, tool calls). */
  getRevealed(account: string, id: string): ResultAsync<ServerRecord, FleetError> {
    return this.get(account, id).andThen((record) => this.reveal(record));
  }

  /**
   * The account's server named `name`, through the name's claim (one claim read and one record read, whatever the
   * size of the account), or `undefined` when no server of the account holds that name. A claim whose owner no
   * longer carries the name (a rename or delete in flight) is no answer.
   */
  getByName(account: string, name: string): ResultAsync<ServerRecord | undefined, FleetError> {
    return this.deps.index.claimOf(nameKey(account, name)).andThen((claim) => {
      if (claim === undefined || !isId('server', claim.owner)) return okAsync(undefined);
      return this.deps.records
        .get<ServerRecord>(recordKey(claim.owner))
        .andThen(okWith((record) => (record !== undefined && record.account === account && record.config.name === name ? record : undefined)));
    });
  }

  /**
   * `getRevealed` at once, over the fleet's own memory once the key check has settled: the same lookup, the same 404,
   * the secrets opened. `undefined` otherwise, having read nothing that matters: use `getRevealed` then.
   */
  getRevealedNow(account: string, id: string): Result<ServerRecord, FleetError> | undefined {
    if (!isId('server', id)) return err(serverNotFound(id));
    const record = this.deps.records.getNow<ServerRecord>(recordKey(id));
    if (record === NOT_NOW) return undefined;
    const owned = ownServer(record, account, id);
    return owned.isErr() ? owned : this.revealNow(owned.value);
  }

  /** `reveal` at once (`revealConfigNow`); `undefined` while the key check runs: use `reveal` then. */
  revealNow(record: ServerRecord): Result<ServerRecord, FleetError> | undefined {
    return revealConfigNow(this.deps.secrets, record.id, record.config)?.map((config) => ({ ...record, config }));
  }

  /** A record just read from this registry (`get`, `list`) with its secrets opened, without reading it again. */
  reveal(record: ServerRecord): ResultAsync<ServerRecord, FleetError> {
    return revealConfig(this.deps.secrets, record.id, record.config).andThen(okWith((config) => ({ ...record, config })));
  }

  update(account: string, id: string, patch: unknown): ResultAsync<ServerRecord, FleetError> {
    const { secrets } = this.deps;
    return this.mutex.exclusive(id, () =>
      this.get(account, id).andThen((current) =>
        // The patch is judged against the plaintext configuration (a sealed value would break the length limits).
        revealConfig(secrets, id, current.config)
          .andThen((plain) => this.deps.validator.update(plain, patch))
          .andThen((config) => this.checkHost(account, config).map(() => config))
          .andThen((config) => sealConfig(secrets, id, config))
          .andThen((config) => {
            const next: ServerRecord = { ...current, config, updated_at: this.nextTimestamp(current.updated_at) };
            const event = {
              account,
              type: 'server.updated' as const,
              data: { server: toDetail(next) },
              at: next.updated_at,
              check: { key: recordKey(id), match: { updated_at: next.updated_at } },
            };
            return this.deps.changes.write(event, (steps) => this.writeUpdate(current, next, steps)).andThen(okWith(() => next));
          }),
      ),
    );
  }

  /** A rename claims the new name before the record carries it and releases the old one only after. */
  private writeUpdate(current: ServerRecord, next: ServerRecord, { publish, abandon }: ChangeSteps): ResultAsync<void, FleetError> {
    const { account, id } = current;
    const changes = indexChanges(current, next);
    const oldName = current.config.name;
    const newName = next.config.name;
    const { records } = this.deps;
    if (newName === oldName) {
      return records.set(recordKey(id), next).andThen(() => this.commitQuietly(mergeTransactions(changes, publish)));
    }
    return this.claimName(next, {})
      .orElse((error) => abandon().andThen(() => errAsync(error)))
      .andThen(() =>
        records.set(recordKey(id), next).orElse((error) =>
          this.commitQuietly({ releases: [{ key: nameKey(account, newName), owner: id }] }).andThen(() => errAsync(error)),
        ),
      )
      .andThen(() => this.commitQuietly(mergeTransactions({ ...changes, releases: [{ key: nameKey(account, oldName), owner: id }] }, publish)));
  }

  delete(account: string, id: string): ResultAsync<{ id: string; deleted: true }, FleetError> {
    return this.mutex.exclusive(id, () =>
      this.get(account, id).andThen((record) => {
        const at = new Date(this.deps.now()).toISOString();
        const event = { account, type: 'server.deleted' as const, data: { server: toDetail(record) }, at, check: { key: recordKey(id), absent: true } };
        return this.deps.changes.write(event, ({ publish }) =>
          this.deps.records
            .delete(recordKey(id))
            .andThen(() =>
              this.commitQuietly(
                mergeTransactions({ ...indexChanges(record, undefined), releases: [{ key: nameKey(account, record.config.name), owner: id }] }, publish),
              ),
            )
            .andThen(okWith(() => ({ id, deleted: true as const }))),
        );
      }),
    );
  }

  /**
   * One page of the account's servers. With a `view`, each record is shown through it as read, without a copy of the
   * whole record first: the view must only read the record and build a value of its own from its strings and
   * numbers (`toSummary`), since over the fleet's own memory it is given the stored object. The view's second
   * argument says so (`RecordStore.sharesStoredObjects`): then the record is the stored object, which never changes.
   */
  list(account: string, query: ListServersQuery): ResultAsync<Page<ServerRecord>, FleetError>;
  list<V>(account: string, query: ListServersQuery, view: ListView<V>): ResultAsync<Page<V>, FleetError>;
  list<V>(account: string, query: ListServersQuery, view?: ListView<V>): ResultAsync<Page<V | ServerRecord>, FleetError> {
    const set = setKey(account, query);
    return readPage<ServerRecord>(this.deps.index, this.deps.records, set, query, recordKey, { shared: view !== undefined }).andThen((read) => {
      const { page, repairs } = this.shown(account, set, query, read, view);
      if (repairs.length === 0) return okAsync(page);
      return this.commitQuietly(mergeTransactions(...repairs)).andThen(okWith(() => page));
    });
  }

  /**
   * `list` with a view, answered at once when the listings and records are held in this process (the memory stores)
   * and the page needs no repair; `undefined` otherwise: use `list` then, which repairs.
   */
  listNow<V>(account: string, query: ListServersQuery, view: ListView<V>): Result<Page<V>, FleetError> | undefined {
    const set = setKey(account, query);
    // The same page as last time while neither the records nor the listings have changed since, by anyone: both
    // memories count every change made to them (`changesNow`, `commitsNow`). Server records carry no expiry.
    const changes = this.deps.records.changesNow;
    const commits = this.deps.index.commitsNow();
    const cacheKey = `${set}\n${query.page}\n${query.limit}`;
    const known = changes === undefined || commits === undefined ? undefined : this.pages.get(cacheKey);
    if (known !== undefined && known.changes === changes && known.commits === commits && known.view === view) {
      // A page of its own, as the one kept is (the items are the view's values: the summaries' texts are strings), so
      // that whoever holds one cannot change what the next request is given.
      return ok({ data: known.page.data.slice() as V[], pagination: { ...known.page.pagination } });
    }
    const read = readPageNow<ServerRecord>(this.deps.index, this.deps.records, set, query, recordKey, { shared: true });
    if (read === undefined) return undefined;
    const { page, repairs } = this.shown(account, set, query, read, view);
    if (repairs.length > 0) return undefined;
    if (changes !== undefined && commits !== undefined) {
      if (this.pagesItems + page.data.length > MAX_PAGE_ITEMS_KEPT) {
        this.pages.clear();
        this.pagesItems = 0;
      }
      this.pages.set(cacheKey, { changes, commits, view, page: { data: page.data.slice(), pagination: { ...page.pagination } } });
      this.pagesItems += page.data.length;
    }
    // Given a view, every item is the view's.
    return ok(page as Page<V>);
  }

  /** A page as listed: the records that belong, through the view; the repairs of listing entries that do not. */
  private shown<V>(account: string, set: string, query: ListServersQuery, { ids, found, total }: PageRead<ServerRecord>, view: ListView<V> | undefined) {
    const stored = view !== undefined && this.deps.records.sharesStoredObjects;
    const data: (V | ServerRecord)[] = [];
    const repairs: IndexTransaction[] = [];
    for (let i = 0; i < found.length; i++) {
      const record = found[i];
      const id = ids[i] as string;
      if (record === undefined || record.account !== account) {
        repairs.push({ remove: allSetsOf(account).map((s) => ({ set: s, member: id })) });
      } else if ((query.type ?? record.config.type) !== record.config.type || (query.health ?? record.health) !== record.health) {
        repairs.push({ remove: [{ set, member: id }], add: setsOf(record).map((s) => ({ set: s, member: id, score: score(record) })) });
      } else {
        data.push(view === undefined ? record : view(record, stored));
      }
    }
    return { page: { data, pagination: pagination(query, total - repairs.length) }, repairs };
  }

  /**
   * One page of every account's servers, oldest first: for work over all servers (the health monitor). Entries
   * whose record is gone are skipped; the account listings repair them.
   */
  everyServer(offset: number, limit: number): ResultAsync<ServerRecord[], FleetError> {
    return readRange<ServerRecord>(this.deps.index, this.deps.records, ALL_SERVERS, { offset, limit }, recordKey).andThen(okWith(({ found }) =>
      found.filter((record): record is ServerRecord => record !== undefined)),
    );
  }

  /**
   * Seals again, under the current key, every secret still stored in plaintext or under an older key; answers how
   * many servers were written. The record keeps its `updated_at` (nothing a client sees changed, and kept
   * connections stay), and is read again just before the write so that a change in between is not undone.
   */
  rotateSecrets(): ResultAsync<number, FleetError> {
    const { records, secrets } = this.deps;
    const PAGE = 100;
    const rotateOne = (id: string): ResultAsync<boolean, FleetError> =>
      this.mutex.exclusive(id, () =>
        records.get<ServerRecord>(recordKey(id)).andThen((current) => {
          if (current === undefined || !hasStaleSecrets(secrets, current.config)) return okAsync(false);
          return revealConfig(secrets, id, current.config)
            .andThen((plain) => sealConfig(secrets, id, plain))
            .andThen((config) => records.set(recordKey(id), { ...current, config }))
            .andThen(okWith(() => true));
        }),
      );
    const page = (offset: number, done: number): ResultAsync<number, FleetError> =>
      readRange<ServerRecord>(this.deps.index, records, ALL_SERVERS, { offset, limit: PAGE }, recordKey).andThen(({ ids, found }) => {
        const stale = found.filter((server): server is ServerRecord => server !== undefined && hasStaleSecrets(secrets, server.config));
        // One at a time: rotation is an operator's batch, not a burst on the store.
        const rotated = stale.reduce<ResultAsync<number, FleetError>>((sum, server) => sum.andThen((n) => rotateOne(server.id).andThen(okWith((did) => n + (did ? 1 : 0)))), okAsync(0));
        return rotated.andThen((n) => (ids.length < PAGE ? okAsync(done + n) : page(offset + PAGE, done + n)));
      });
    return page(0, 0);
  }

  /**
   * Changes the observed health of a server and moves it between the health listings; a change is the
   * `server.health_changed` event (with the probe's `error`), written with it.
   */
  setHealth(account: string, id: string, health: Health, error: UpstreamFailure | null = null): ResultAsync<ServerRecord, FleetError> {
    return this.mutex.exclusive(id, () =>
      this.get(account, id).andThen((current) => {
        if (current.health === health) return okAsync(current);
        const next = { ...current, health };
        const event = {
          account,
          type: 'server.health_changed' as const,
          data: { server: toDetail(next), previous: current.health, current: health, error },
          at: new Date(this.deps.now()).toISOString(),
          check: { key: recordKey(id), match: { health } },
        };
        return this.deps.changes.write(event, ({ publish }) =>
          this.deps.records
            .set(recordKey(id), next)
            .andThen(() => this.commitQuietly(mergeTransactions(indexChanges(current, next), publish)))
            .andThen(okWith(() => next)),
        );
      }),
    );
  }

  /** Claims the record's name in the same commit as `tx`; takes over a claim left stale by a crash. */
  private claimName(record: ServerRecord, tx: IndexTransaction): ResultAsync<void, FleetError> {
    const key = nameKey(record.account, record.config.name);
    const attempt = (replacing?: string) =>
      this.deps.index.commit({ ...tx, claims: [{ key, owner: record.id, ...(replacing && { replacing }) }] });
    return attempt().andThen((first) => {
      const outcome = this.claimOutcome(first, record, false);
      if (!isStale(outcome)) return outcome === undefined ? okAsync(undefined) : errAsync(outcome);
      return this.deps.records.get<ServerRecord>(recordKey(outcome.holder)).andThen((holder) => {
        if (carriesName(holder, record)) return errAsync(nameExists(record.config.name));
        return attempt(outcome.holder).andThen((retry) => {
          const again = this.claimOutcome(retry, record, true);
          // After a takeover the outcome is never another stale claim (`tookOver`).
          return again === undefined ? okAsync(undefined) : errAsync(again as FleetError);
        });
      });
    });
  }

  /** `claimName` over an index that commits at once (`createNow`): the same claim, the same takeover of a stale one. */
  private claimNameNow(record: ServerRecord, { add, limits }: Pick<IndexTransaction, 'add' | 'limits'>): Result<void, FleetError> {
    const key = nameKey(record.account, record.config.name);
    const owner = record.id;
    const attempt = (replacing?: string) =>
      this.deps.index.commitNow({ add, limits, claims: [replacing === undefined ? { key, owner } : { key, owner, replacing }] }) as CommitResult;
    const outcome = this.claimOutcome(attempt(), record, false);
    if (!isStale(outcome)) return outcome === undefined ? ok(undefined) : err(outcome);
    const holder = this.deps.records.getNow<ServerRecord>(recordKey(outcome.holder), true);
    if (holder !== NOT_NOW && carriesName(holder, record)) return err(nameExists(record.config.name));
    const again = this.claimOutcome(attempt(outcome.holder), record, true);
    return again === undefined ? ok(undefined) : err(again as FleetError);
  }

  /**
   * What a commit claiming `record`'s name answered, for `claimName` and `claimNameNow` alike: `undefined` when the
   * name is claimed; the error when refused for good (a full account, or the name held within the grace, or held
   * still after a takeover); else the holder of a claim older than the grace, to take over unless that server still
   * carries the name.
   */
  private claimOutcome(result: CommitResult, record: ServerRecord, tookOver: boolean): FleetError | StaleClaim | undefined {
    if (result.ok) return undefined;
    if (result.full !== undefined) return quotaExceeded('servers', result.full.max);
    const { owner, since } = result.conflict;
    if (tookOver || since > this.deps.now() - this.deps.claimGraceMs) return nameExists(record.config.name);
    return { holder: owner };
  }

  /** Index bookkeeping after the record write: the record is already the truth, so the change is done either way. */
  private commitQuietly(tx: IndexTransaction): ResultAsync<void, FleetError> {
    const empty = !tx.add?.length && !tx.remove?.length && !tx.claims?.length && !tx.releases?.length;
    if (empty) return okAsync(undefined);
    return this.deps.index.commit(tx).andThen(okWith(() => undefined)).orElse(() => okAsync(undefined));
  }

  /** Now, but strictly after `previous`: `updated_at` always moves, even within one millisecond. */
  private nextTimestamp(previous: string): string {
    return new Date(Math.max(this.deps.now(), Date.parse(previous) + 1)).toISOString();
  }
}
