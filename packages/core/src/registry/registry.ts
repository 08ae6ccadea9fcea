import { err, errAsync, ok, okAsync, type Result, ResultAsync } from 'neverthrow';
import { FleetError, quotaExceeded, serverNotFound } from '../errors/fleet-error.js';
import type { CommitResult, IndexTransaction, RecordWrite } from '../storage/index-store.js';
import type { IndexCalls } from '../storage/index-calls.js';
import type { RecordStore } from '../storage/records.js';
import { isId, newId } from '../util/ids.js';
import { kept, memoKeys } from '../util/key-memo.js';
import { KeyedMutex } from '../util/keyed-mutex.js';
import { type Page, type PageQuery, pagination } from '../util/pagination.js';
import { REASON_OF, type StateReason } from '../health/states.js';
import { HEALTH_VALUES, type Health, SERVER_TYPES, type ServerConfig, type ServerType, type ServerValidator, type StdioServerConfig } from './schema.js';
import type { ChangeSteps, ChangeWriter } from '../events/change-writer.js';
import type { UpstreamFailure } from '../errors/fleet-error.js';
import { mergeTransactions } from '../storage/index-calls.js';
import { type PageRead, readPage, readRange } from '../storage/read-page.js';
import { SecretBox } from '../util/secret-box.js';
import { hasStaleSecrets, revealConfig, sealConfig } from './secrets.js';
import { type ServerRecord, toDetail } from './views.js';
import { isoTimeOf } from '../util/iso-time.js';
import { namesItsPrefix, prefixesAbove } from '../toolcalls/tool-names.js';
import { okWith, otherwise, type Ran, chain, chainMap, toAsync } from '../util/result.js';

/**
 * How `list` shows each record: it must only read it. `stored`: the record is the stored object itself, never
 * changed while stored, so a value derived from it may be kept for as long as the object lives (`summaryJson`).
 */
export type ListView<V> = (record: ServerRecord, stored: boolean) => V;

/** Counts of the changes of what `list` reads (`ServerRegistry.changeCounts`): the server records, and one listing. */
export interface StoreCounts {
  records: number;
  commits: number;
}

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
  checkStdio?: (account: string, config: StdioServerConfig) => Ran<void, FleetError>;
}

/** Servers per account unless `quotas.serversPerAccount` says otherwise. */
export const DEFAULT_SERVERS_PER_ACCOUNT = 1000;

/** The record key of a server: made here only (`recordKey` keeps those read again and again). */
const SERVER_KEY = 'server:';
const serverKey = (id: string) => `${SERVER_KEY}${id}`;
const recordKey = memoKeys(serverKey);
/** An account as the index's keys spell it (names, listings, prefixes), encoded once per account rather than on every key made of it. */
const accountPart = memoKeys(encodeURIComponent);
/** The account's part of its name keys, `name:{account}:`, one string per account (`memoKeys`). */
const namesOf = memoKeys((account) => ['name:', accountPart(account), ':'].join(''));
/**
 * `+`-ed, not joined: the memory index keeps the key of each name as long as the server lives, and V8 keeps `a + b` as a
 * pair of references to its two parts (a 32-byte cons string, never flattened by a `Map`), where the account's part is
 * one string for all its names and the name is the very string the record keeps: a flat copy of both would be one
 * more string of their length per server. (An id, made afresh, is made flat instead: `newId`.)
 */
const nameKey = (account: string, name: string) => namesOf(account) + name;

function setKey(account: string, filter: { type?: ServerType | undefined; health?: Health | undefined }): string {
  let key = `servers:${accountPart(account)}`;
  if (filter.type !== undefined) key += `:type:${filter.type}`;
  if (filter.health !== undefined) key += `:health:${filter.health}`;
  return key;
}

/** Items of the pages `list` keeps, at most, over all pages (about 5 MB of summaries' texts): then it starts again. */
const MAX_PAGE_ITEMS_KEPT = 20_000;

/** Every server of every account, for the background monitor. Account keys start `servers:`, so no clash. */
const ALL_SERVERS = 'servers-all';

/** Every listing a server appears in: all (the first, which holds the account's quota), by type, by health, by both, and the global one. */
function setsOf(record: ServerRecord): string[] {
  const { account, health } = record;
  const type = record.config.type;
  return [setKey(account, {}), setKey(account, { type }), setKey(account, { health }), setKey(account, { type, health }), ALL_SERVERS];
}

/** `setsOf` by account, type and health, made once (at most 10,000 accounts, then forgotten all at once). */
const listingsKept = new Map<string, Map<string, Map<string, readonly string[]>>>();

/**
 * `setsOf(record)`, the same names kept and handed out again (never to be changed): the index looks each set up by
 * its name, and a name made afresh is a new string that must be flattened and hashed again (see `memoKeys`).
 */
function listingsOf(record: ServerRecord): readonly string[] {
  // By type, then health: no key joined from the two (a new string to hash on every create).
  const byAccount = kept(listingsKept, record.account, () => new Map<string, Map<string, readonly string[]>>());
  const byType = kept(byAccount, record.config.type, () => new Map<string, readonly string[]>());
  return kept(byType, record.health, () => setsOf(record));
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

/**
 * The account's tool namespace (`{prefix}__{tool}`, toolcalls/tool-names.ts) kept unambiguous: no server may be named P
 * while another's name begins with `P__`. A server named `a__b__c` takes, in the commit that names it, the claims of
 * the names above it (`a`, `a__b`) for `BELOW` (one owner for all the servers below, so siblings share them; a server
 * named `a` holds its own claim, so one of the two commits is refused), and enters the sets `prefix-below:{account}:{P}`
 * of those names. A server named `a` takes its name's claim over from `BELOW` only under the limit that nobody is in
 * `prefix-below:…:a`: a claim left by servers since gone is taken over, a live one refuses it. A name with no `__` costs
 * nothing more than its claim; names that are no prefix (the server goes by its id) take no part.
 */
const BELOW = '__below';
const PREFIX_BELOW = 'prefix-below:';
const belowSet = (account: string, prefix: string) => [PREFIX_BELOW, accountPart(account), ':', prefix].join('');
/** The name's place in the namespace, when it is the server's prefix. */
const ownPrefix = (record: ServerRecord) => (namesItsPrefix(record.config.name) ? record.config.name : undefined);
const abovesOf = (record: ServerRecord): string[] => {
  const own = ownPrefix(record);
  return own === undefined ? [] : prefixesAbove(own);
};

/**
 * The namespace's part of the commit that gives `record` its name: the claims of the names above it, its entries below
 * them, and the limit that nobody stands below its own name. `previous`: the record before a rename, which still holds
 * its old name (taken over if the new name is below it) and stands below the names it was below.
 */
function namespaceClaims(record: ServerRecord, at: number, previous?: ServerRecord): Required<Pick<IndexTransaction, 'claims' | 'add' | 'limits'>> {
  const own = ownPrefix(record);
  if (own === undefined) return { claims: [], add: [], limits: [] };
  const { account, id } = record;
  const before = previous === undefined ? undefined : ownPrefix(previous);
  const wasBelow = previous === undefined ? [] : abovesOf(previous);
  const aboves = prefixesAbove(own);
  return {
    claims: aboves.map((above) => ({ key: nameKey(account, above), owner: BELOW, ...(above === before && { replacing: id }) })),
    add: aboves.filter((above) => !wasBelow.includes(above)).map((above) => ({ set: belowSet(account, above), member: id, score: at })),
    // Fewer than `max` before the commit: none, or only itself when it moves up to a name it stood below.
    limits: [{ set: belowSet(account, own), max: wasBelow.includes(own) ? 2 : 1 }],
  };
}

/** `record`'s entries below the names above it, those of `keep` excepted (a rename's new ones). */
function belowRemoves(record: ServerRecord, keep?: ServerRecord): { set: string; member: string }[] {
  const kept = keep === undefined ? [] : abovesOf(keep);
  return abovesOf(record).filter((above) => !kept.includes(above)).map((above) => ({ set: belowSet(record.account, above), member: record.id }));
}

/** Whether `holder` still stands in `prefix-below:…:P` (a member of an earlier name, or of a server gone, does not). */
function standsBelow(set: string, holder: ServerRecord | undefined, account: string): holder is ServerRecord {
  if (holder === undefined || holder.account !== account) return false;
  return abovesOf(holder).includes(set.slice(set.lastIndexOf(':') + 1));
}

/** A name that would make another server's tool names ambiguous: 409, naming that server when it is known. */
function nameClash(record: ServerRecord, other: ServerRecord | undefined): FleetError {
  const name = record.config.name;
  const message =
    other === undefined
      ? `The name "${name}" would make tool names ambiguous with another server of the account ({prefix}__{tool}); choose a name that neither begins with another server's name followed by "__" nor is such a beginning of one.`
      : `The name "${name}" would make tool names ambiguous with the server "${other.config.name}" (${other.id}): tools are named {prefix}__{tool}, and one of the two names begins with the other followed by "__". Choose another name, or rename that server.`;
  return new FleetError('SERVER_NAME_EXISTS', {
    message,
    details: { name, ...(other !== undefined && { clashes_with: { id: other.id, name: other.config.name } }) },
  });
}

/** Members of a full prefix set read to find who holds it. */
const CLASH_READ = 20;

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

/** A commit refused by the set of the servers below the name: the name would make tool names ambiguous. */
interface PrefixTaken {
  prefixSet: string;
}

/** A commit refused by the claim of a name above the record's: held by `holder` since `since`. */
interface AboveTaken {
  key: string;
  holder: string;
  since: number;
}

type ClaimOutcome = FleetError | StaleClaim | PrefixTaken | AboveTaken | undefined;

const isStale = (outcome: ClaimOutcome): outcome is StaleClaim => outcome !== undefined && 'holder' in outcome && !('key' in outcome);
const isPrefixTaken = (outcome: ClaimOutcome): outcome is PrefixTaken => outcome !== undefined && 'prefixSet' in outcome;
const isAboveTaken = (outcome: ClaimOutcome): outcome is AboveTaken => outcome !== undefined && 'key' in outcome && 'holder' in outcome;

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
  /** The last page read at once for each listing, page and size, with the change counts it was read at (`list`). */
  private readonly pages = new Map<string, { changes: number; commits: number; view: ListView<unknown>; page: Page<unknown> }>();
  private pagesItems = 0;
  /** `created_at`'s text of creates at once, made once per millisecond of the clock (`isoTimeOf`). */
  private readonly isoAt = isoTimeOf();
  private readonly deps: RegistryDeps & { secrets: SecretBox };

  constructor(deps: RegistryDeps) {
    this.deps = { ...deps, secrets: deps.secrets ?? new SecretBox() };
  }

  /** The schemas of the create and update bodies, as the route table declares them. */
  get bodies(): { create: ServerValidator['createBody']; update: ServerValidator['updateBody'] } {
    return { create: this.deps.validator.createBody, update: this.deps.validator.updateBody };
  }

  /**
   * Over the memory stores every step answers at once, and so does this (a `Result`): nothing waits, unless a stdio
   * server's host check, a key check still running, or a webhook store elsewhere hands it a promise. The record
   * answered is the one stored, not a copy, over the fleet's own memory: read it (`toDetail`, which shares nothing
   * with it), never change or keep it.
   */
  create(account: string, input: unknown): Ran<ServerRecord, FleetError> {
    const validated = this.deps.validator.config(input);
    if (validated.isErr()) return err(validated.error);
    const ms = this.deps.now();
    const at = this.isoAt(ms);
    const id = newId('server');
    const sealed = chain(this.checkHost(account, validated.value), () => sealConfig(this.deps.secrets, id, validated.value));
    return chain(sealed, (config) => this.insert({ id, account, config, status: 'active', health: 'unknown', created_at: at, updated_at: at }, ms));
  }

  /**
   * What `create` would judge of `input` before writing anything: the configuration, and with `host` the host's
   * check of a stdio one (which gives the account its stdio user the first time: a write). An import's plan
   * (import/importer.ts). The name's claim and the quota are judged only by the create itself.
   */
  check(account: string, input: unknown, host: boolean): Ran<ServerConfig, FleetError> {
    const validated = this.deps.validator.config(input);
    if (validated.isErr()) return err(validated.error);
    if (!host) return ok(validated.value);
    return chainMap(this.checkHost(account, validated.value), () => validated.value);
  }

  /** How many servers the account holds, and how many it may (`maxPerAccount`). */
  quota(account: string): Ran<{ used: number; limit: number }, FleetError> {
    const limit = this.deps.maxPerAccount ?? DEFAULT_SERVERS_PER_ACCOUNT;
    return chainMap(this.deps.index.count(setKey(account, {})), (used) => ({ used, limit }));
  }

  private checkHost(account: string, config: ServerConfig): Ran<void, FleetError> {
    const { checkStdio } = this.deps;
    return config.type === 'stdio' && checkStdio !== undefined ? checkStdio(account, config) : ok(undefined);
  }

  /**
   * Writes a new record, then lists and names it in one commit that also holds the quota and the account's tool
   * namespace (`namespaceClaims`). A full account is refused before anything is written or staged; the limit in the
   * commit holds the quota against creates racing in other processes. A refused or failed commit removes the record,
   * so nothing half-made remains. `ms`: the record's `created_at`, its score in the listings.
   *
   * Over an index kept beside the records (`IndexStore.commitWithRecords`) the record is written by the commit itself:
   * one call, which writes nothing when refused, so neither the count before nor the undo after is needed.
   *
   * The commit is the change's one commit that `ChangeWriter.write(…, true)` asks for: in an account where this process
   * saw no webhook, it carries the precondition that the account lists none instead of a read of its subscribers, and
   * a refusal by it (`stale`) writes the create again with its event staged.
   */
  private insert(record: ServerRecord, ms: number): Ran<ServerRecord, FleetError> {
    const { records, index, maxPerAccount = DEFAULT_SERVERS_PER_ACCOUNT } = this.deps;
    const { account, id } = record;
    const key = serverKey(id);
    const sets = listingsOf(record);
    // Every server of the account, which holds its quota (`setsOf`).
    const quota = sets[0] as string;
    const event = { account, type: 'server.created' as const, data: { server: toDetail(record) }, at: record.created_at, check: { key } };
    const namespace = namespaceClaims(record, ms);
    const add = sets.map((set) => ({ set, member: id, score: ms }));
    for (const entry of namespace.add) add.push(entry);
    const tx: IndexTransaction = { claims: namespace.claims, add, limits: [{ set: quota, max: maxPerAccount }, ...namespace.limits] };
    if (index.joint !== undefined) {
      const writes = [{ key: records.storedKey(key), value: record }];
      return this.deps.changes.write(
        event,
        ({ publish, abandon, stale }) => {
          const claimed = this.landed(this.claimName(record, publish === undefined ? tx : mergeTransactions(tx, publish), 1, writes, stale), record);
          return chainMap(otherwise(claimed, (error) => chain(abandon(), () => err(error))), () => record);
        },
        true,
      );
    }
    return chain(index.count(quota), (count) => {
      if (count >= maxPerAccount) return err(quotaExceeded('servers', maxPerAccount));
      return this.deps.changes.write(
        event,
        ({ publish, abandon, stale }) => {
          // Handed over, not copied: the record and its configuration were made here (the validator's output shares
          // nothing with the input).
          const written = chain(records.setAt(SERVER_KEY, id, record), () =>
            this.landed(this.claimName(record, publish === undefined ? tx : mergeTransactions(tx, publish), 1, undefined, stale), record),
          );
          const undone = otherwise(written, (error) => chain(chain(records.delete(key), abandon), () => err(error)));
          return chainMap(undone, () => record);
        },
        true,
      );
    });
  }

  /**
   * A create's commit that failed for want of the store (`STORAGE_UNAVAILABLE`: its connection cut, its answer lost)
   * may still have landed: PostgreSQL may have committed before the cut. The name's claim says which, before anything
   * is undone or answered: held by the record's id, the commit landed (the claim, the listings, the quota and the
   * event's publication are one commit), and the create succeeded. Unreadable too, the first failure stands.
   */
  private landed(claimed: Ran<void, FleetError>, record: ServerRecord): Ran<void, FleetError> {
    return otherwise(claimed, (error) => {
      if (error.code !== 'STORAGE_UNAVAILABLE') return err(error);
      const claim = otherwise(this.deps.index.claimOf(nameKey(record.account, record.config.name)), () => err(error));
      return chain(claim, (held) => (held?.owner === record.id ? ok(undefined) : err(error)));
    });
  }

  get(account: string, id: string): Ran<ServerRecord, FleetError> {
    // An id of the wrong form is simply unknown: no lookup, the same 404.
    if (!isId('server', id)) return err(serverNotFound(id));
    return chain(this.deps.records.get<ServerRecord>(recordKey(id)), (record) => ownServer(record, account, id));
  }

  /** The server with its secrets opened, to connect to it: only where a secret is used (probes, tool calls). */
  getRevealed(account: string, id: string): Ran<ServerRecord, FleetError> {
    return chain(this.get(account, id), (record) => this.reveal(record));
  }

  /**
   * The account's server named `name`, through the name's claim (one claim read and one record read, whatever the
   * size of the account), or `undefined` when no server of the account holds that name. A claim whose owner no
   * longer carries the name (a rename or delete in flight) is no answer.
   */
  getByName(account: string, name: string): ResultAsync<ServerRecord | undefined, FleetError> {
    return toAsync(
      chain(this.deps.index.claimOf(nameKey(account, name)), (claim) => {
        if (claim === undefined || !isId('server', claim.owner)) return ok(undefined);
        return chainMap(this.deps.records.get<ServerRecord>(recordKey(claim.owner)), (record) =>
          record !== undefined && record.account === account && record.config.name === name ? record : undefined,
        );
      }),
    );
  }

  /** A record just read from this registry (`get`, `list`) with its secrets opened, without reading it again. */
  reveal(record: ServerRecord): Ran<ServerRecord, FleetError> {
    return chainMap(revealConfig(this.deps.secrets, record.id, record.config), (config) => ({ ...record, config }));
  }

  update(account: string, id: string, patch: unknown): ResultAsync<ServerRecord, FleetError> {
    const { secrets } = this.deps;
    return this.mutex.exclusive(id, () =>
      toAsync(this.get(account, id)).andThen((current) =>
        // The patch is judged against the plaintext configuration (a sealed value would break the length limits).
        toAsync(revealConfig(secrets, id, current.config))
          .andThen((plain) => this.deps.validator.update(plain, patch))
          .andThen((config) => chainMap(this.checkHost(account, config), () => config))
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
            return chainMap(this.deps.changes.write(event, (steps) => this.writeUpdate(current, next, steps)), () => next);
          }),
      ),
    );
  }

  /**
   * A rename claims the new name before the record carries it and releases the old one only after. The new name's
   * place in the tool namespace (`namespaceClaims`) is taken in the claim's commit; the old one is left in the last
   * one, with the release of the old name.
   */
  private writeUpdate(current: ServerRecord, next: ServerRecord, { publish, abandon }: ChangeSteps): ResultAsync<void, FleetError> {
    const { account, id } = current;
    const changes = indexChanges(current, next);
    const oldName = current.config.name;
    const newName = next.config.name;
    const { records } = this.deps;
    if (newName === oldName) {
      return toAsync(chain(records.set(recordKey(id), next), () => this.commitQuietly(mergeTransactions(changes, publish))));
    }
    const left = belowRemoves(current, next);
    return toAsync(this.claimName(next, namespaceClaims(next, this.deps.now(), current)))
      .orElse((error) => toAsync(abandon()).andThen(() => errAsync(error)))
      .andThen(() =>
        toAsync(records.set(recordKey(id), next)).orElse((error) =>
          toAsync(this.commitQuietly({ releases: [{ key: nameKey(account, newName), owner: id }] })).andThen(() => errAsync(error)),
        ),
      )
      .andThen(() => this.commitQuietly(mergeTransactions({ ...changes, releases: [{ key: nameKey(account, oldName), owner: id }] }, publish, { remove: left })))
      .andThen(() => this.releaseBelow(account, left));
  }

  /**
   * Releases the claims of the names above a server that left them (`BELOW`), each only when nobody is left below
   * that name: the limit decides in the commit itself. Quietly: a claim left behind is taken over by the next server
   * that wants the name (`namespaceClaims`).
   */
  private releaseBelow(account: string, left: readonly { set: string }[]): ResultAsync<void, FleetError> {
    return left.reduce<ResultAsync<void, FleetError>>((chain, { set }) => {
      const above = set.slice(set.lastIndexOf(':') + 1);
      return chain.andThen(() => this.commitQuietly({ releases: [{ key: nameKey(account, above), owner: BELOW }], limits: [{ set, max: 1 }] }));
    }, okAsync(undefined));
  }

  delete(account: string, id: string): ResultAsync<{ id: string; deleted: true }, FleetError> {
    return this.mutex.exclusive(id, () =>
      toAsync(this.get(account, id)).andThen((record) => {
        const at = new Date(this.deps.now()).toISOString();
        const event = { account, type: 'server.deleted' as const, data: { server: toDetail(record) }, at, check: { key: recordKey(id), absent: true } };
        const left = belowRemoves(record);
        return this.deps.changes.write(event, ({ publish }) =>
          toAsync(this.deps.records.delete(recordKey(id)))
            .andThen(() =>
              this.commitQuietly(
                mergeTransactions(
                  { ...indexChanges(record, undefined), releases: [{ key: nameKey(account, record.config.name), owner: id }] },
                  { remove: left },
                  publish,
                ),
              ),
            )
            .andThen(() => this.releaseBelow(account, left))
            .andThen(okWith(() => ({ id, deleted: true as const }))),
        );
      }),
    );
  }

  /**
   * Where what `list` reads of the account's listing (by `query`'s type and health) stands, as counts of the changes
   * made by anyone to the server records (`RecordStore.memoryChangesOf`) and to that listing (`IndexStore.setRevision`),
   * when both stores keep such counts, as the fleet's own memory stores do (held in this process: whoever shares them
   * writes through the same objects, which count it). Whatever `list` answered of that listing, and `get` of any
   * server, is still what they would answer while neither count has moved (server records carry no expiry); other
   * records and listings (tool calls, sessions, keys) do not move them. `undefined` over any store shared by other
   * processes: nothing is known unchanged there without reading it.
   */
  changeCounts(account: string, query: Pick<ListServersQuery, 'type' | 'health'> = {}): StoreCounts | undefined {
    return this.setCounts(setKey(account, query));
  }

  private setCounts(set: string): StoreCounts | undefined {
    const records = this.deps.records.memoryChangesOf(SERVER_KEY);
    const commits = records === undefined ? undefined : this.deps.index.setRevision(set);
    return records === undefined || commits === undefined ? undefined : { records, commits };
  }

  /**
   * One page of the account's servers. With a `view`, each record is shown through it as read, without a copy of the
   * whole record first: the view must only read the record and build a value of its own from its strings and
   * numbers (`toSummary`), since over the fleet's own memory it is given the stored object. The view's second
   * argument says so (`RecordStore.sharesStoredObjects`): then the record is the stored object, which never changes.
   */
  list(account: string, query: ListServersQuery): Ran<Page<ServerRecord>, FleetError>;
  list<V>(account: string, query: ListServersQuery, view: ListView<V>): Ran<Page<V>, FleetError>;
  list<V>(account: string, query: ListServersQuery, view?: ListView<V>): Ran<Page<V | ServerRecord>, FleetError> {
    const set = setKey(account, query);
    // Over the memory stores, the same page as last time while neither the server records nor this listing have
    // changed since, by anyone: both memories count every change made to them (`setCounts`). Server records carry no
    // expiry.
    const counts = view === undefined ? undefined : this.setCounts(set);
    const cacheKey = counts !== undefined ? `${set}\n${query.page}\n${query.limit}` : '';
    const known = counts !== undefined ? this.pages.get(cacheKey) : undefined;
    if (known !== undefined && known.changes === counts?.records && known.commits === counts.commits && known.view === view) {
      // A page of its own, as the one kept is (the items are the view's values: the summaries' texts are strings), so
      // that whoever holds one cannot change what the next request is given.
      return ok({ data: known.page.data.slice() as V[], pagination: { ...known.page.pagination } });
    }
    const read = readPage<ServerRecord>(this.deps.index, this.deps.records, set, query, recordKey, { shared: view !== undefined, keyPrefix: SERVER_KEY });
    // Kept only when read at once, so that nothing changed between the counts and the read.
    const keep = read instanceof ResultAsync ? undefined : counts;
    return chain(read, (page) => {
      const shown = this.shown(account, set, query, page, view);
      if (shown.repairs.length === 0) {
        if (keep !== undefined) this.keepPage(cacheKey, keep.records, keep.commits, view as ListView<unknown>, shown.page);
        return ok(shown.page);
      }
      return chainMap(this.commitQuietly(mergeTransactions(...shown.repairs)), () => shown.page);
    });
  }

  /** Keeps a page of the view's values when they are texts (`summaryJson`): no one who is given one can change it. */
  private keepPage(cacheKey: string, changes: number, commits: number, view: ListView<unknown>, page: Page<unknown>): void {
    if (!page.data.every((item) => typeof item === 'string')) return;
    if (this.pagesItems + page.data.length > MAX_PAGE_ITEMS_KEPT) {
      this.pages.clear();
      this.pagesItems = 0;
    }
    this.pages.set(cacheKey, { changes, commits, view, page: { data: page.data.slice(), pagination: { ...page.pagination } } });
    this.pagesItems += page.data.length;
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
    return toAsync(readRange<ServerRecord>(this.deps.index, this.deps.records, ALL_SERVERS, { offset, limit }, recordKey)).andThen(okWith(({ found }) =>
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
        toAsync(records.get<ServerRecord>(recordKey(id))).andThen((current) => {
          if (current === undefined || !hasStaleSecrets(secrets, current.config)) return okAsync(false);
          return toAsync(revealConfig(secrets, id, current.config))
            .andThen((plain) => sealConfig(secrets, id, plain))
            .andThen((config) => records.set(recordKey(id), { ...current, config }))
            .andThen(okWith(() => true));
        }),
      );
    const page = (offset: number, done: number): ResultAsync<number, FleetError> =>
      toAsync(readRange<ServerRecord>(this.deps.index, records, ALL_SERVERS, { offset, limit: PAGE }, recordKey)).andThen(({ ids, found }) => {
        const stale = found.filter((server): server is ServerRecord => server !== undefined && hasStaleSecrets(secrets, server.config));
        // One at a time: rotation is an operator's batch, not a burst on the store.
        const rotated = stale.reduce<ResultAsync<number, FleetError>>((sum, server) => sum.andThen((n) => rotateOne(server.id).andThen(okWith((did) => n + (did ? 1 : 0)))), okAsync(0));
        return rotated.andThen((n) => (ids.length < PAGE ? okAsync(done + n) : page(offset + PAGE, done + n)));
      });
    return page(0, 0);
  }

  /**
   * Changes the observed health of a server and moves it between the health listings; a change is the
   * `server.health_changed` event (with the rule that decided it and the probe's `error`), written with it.
   */
  setHealth(account: string, id: string, health: Health, error: UpstreamFailure | null = null, reason: StateReason = REASON_OF[health]): ResultAsync<ServerRecord, FleetError> {
    return this.mutex.exclusive(id, () =>
      toAsync(this.get(account, id)).andThen((current) => {
        if (current.health === health) return okAsync(current);
        const next = { ...current, health };
        const event = {
          account,
          type: 'server.health_changed' as const,
          data: { server: toDetail(next), previous: current.health, current: health, reason, error },
          at: new Date(this.deps.now()).toISOString(),
          check: { key: recordKey(id), match: { health } },
        };
        return this.deps.changes.write(event, ({ publish }) =>
          chainMap(chain(this.deps.records.set(recordKey(id), next), () => this.commitQuietly(mergeTransactions(indexChanges(current, next), publish))), () => next),
        );
      }),
    );
  }

  /**
   * Claims the record's name in the same commit as `tx` (which may hold the claims of the names above it); takes over
   * the name's claim left by servers below it that are gone (`BELOW`, under `tx`'s limit), and a claim left stale by a
   * crash. A commit refused by the set of the servers below the name names one of them; members of it that no longer
   * stand there (a server gone, or renamed, whose last commit did not run) are taken out once and the commit tried
   * again. A commit refused by the claim of a name above names the server that carries it. With `writes` every
   * attempt writes them in its own commit (`IndexStore.commitWithRecords`): a create's record, only if it lands.
   * `refusedBy`: the error of a commit refused by the precondition its change writer put in `tx` (`ChangeSteps.stale`),
   * answered as it is.
   */
  private claimName(
    record: ServerRecord,
    tx: IndexTransaction,
    repairs = 1,
    writes?: readonly RecordWrite[],
    refusedBy: ChangeSteps['stale'] = () => undefined,
  ): Ran<void, FleetError> {
    const key = nameKey(record.account, record.config.name);
    const { index, records } = this.deps;
    const attempt = (replacing: string, above?: AboveTaken) => {
      const claims: { key: string; owner: string; replacing?: string }[] = [{ key, owner: record.id, replacing }];
      for (const claim of tx.claims ?? []) claims.push(above !== undefined && claim.key === above.key ? { ...claim, replacing: above.holder } : claim);
      const claiming = { ...tx, claims };
      return writes === undefined || index.joint === undefined ? index.commit(claiming) : index.joint.commitWithRecords(claiming, writes);
    };
    const settle = (outcome: ClaimOutcome, tookOver: boolean): Ran<void, FleetError> => {
      if (outcome === undefined) return ok(undefined);
      if (isPrefixTaken(outcome)) {
        return chain(this.prefixHolders(record, outcome.prefixSet), ({ holder, stale }) => {
          if (holder !== undefined || stale.length === 0 || repairs === 0) return err(nameClash(record, holder));
          const remove = stale.map((member) => ({ set: outcome.prefixSet, member }));
          return chain(this.commitQuietly({ remove }), () => this.claimName(record, tx, repairs - 1, writes, refusedBy));
        });
      }
      if (isAboveTaken(outcome)) {
        const name = outcome.key.slice(nameKey(record.account, '').length);
        return chain(records.get<ServerRecord>(recordKey(outcome.holder), true), (holder) => {
          if (holder !== undefined && holder.account === record.account && holder.config.name === name) return err(nameClash(record, holder));
          if (tookOver || outcome.since > this.deps.now() - this.deps.claimGraceMs) return err(nameClash(record, undefined));
          return chain(attempt(BELOW, outcome), (retry) => settle(refusedBy(retry) ?? this.claimOutcome(retry, record, true), true));
        });
      }
      if (!isStale(outcome)) return err(outcome);
      return chain(records.get<ServerRecord>(recordKey(outcome.holder), true), (holder) => {
        if (carriesName(holder, record)) return err(nameExists(record.config.name));
        // After a takeover the outcome is never another stale claim (`tookOver`).
        return chain(attempt(outcome.holder), (retry) => settle(refusedBy(retry) ?? this.claimOutcome(retry, record, true), true));
      });
    };
    return chain(attempt(BELOW), (first) => settle(refusedBy(first) ?? this.claimOutcome(first, record, false), false));
  }

  /** Who holds the full `prefix-below` `set` against `record`: the first member that stands there, and the ids that do not. */
  private prefixHolders(record: ServerRecord, set: string): Ran<{ holder: ServerRecord | undefined; stale: string[] }, FleetError> {
    return chain(this.deps.index.range(set, { offset: 0, limit: CLASH_READ }), (ids) => {
      const others = ids.filter((id) => id !== record.id);
      return chainMap(this.deps.records.getMany<ServerRecord>(others.map((id) => recordKey(id)), true), (found) => {
        const stale = others.filter((_, i) => !standsBelow(set, found[i], record.account));
        return { holder: found.find((holder): holder is ServerRecord => standsBelow(set, holder, record.account)), stale };
      });
    });
  }

  /**
   * What a commit claiming `record`'s name answered: `undefined` when the
   * name is claimed; the error when refused for good (a full account, or the name held within the grace, or held
   * still after a takeover); the set or the claim that says the name would make tool names ambiguous; else the holder
   * of a claim older than the grace, to take over unless that server still carries the name.
   */
  private claimOutcome(result: CommitResult, record: ServerRecord, tookOver: boolean): ClaimOutcome {
    if (result.ok) return undefined;
    if (result.full !== undefined) {
      const { set, max } = result.full;
      return set.startsWith(PREFIX_BELOW) ? { prefixSet: set } : quotaExceeded('servers', max);
    }
    const { key, owner, since } = result.conflict;
    if (key !== nameKey(record.account, record.config.name)) return { key, holder: owner, since };
    if (tookOver || since > this.deps.now() - this.deps.claimGraceMs) return nameExists(record.config.name);
    return { holder: owner };
  }

  /** Index bookkeeping after the record write: the record is already the truth, so the change is done either way. */
  private commitQuietly(tx: IndexTransaction): Ran<void, FleetError> {
    const empty = !tx.add?.length && !tx.remove?.length && !tx.claims?.length && !tx.releases?.length;
    if (empty) return ok(undefined);
    return otherwise(chainMap(this.deps.index.commit(tx), () => undefined), () => ok(undefined));
  }

  /** The current time, but strictly after `previous`: `updated_at` always moves, even within one millisecond. */
  private nextTimestamp(previous: string): string {
    return new Date(Math.max(this.deps.now(), Date.parse(previous) + 1)).toISOString();
  }
}
