import type { ServerRegistry } from '../registry/registry.js';
import type { ServerRecord } from '../registry/views.js';
import type { ConnectionPool, ListKind } from '../toolcalls/connection-pool.js';
import type { Listing, ListingCache, ListingItems, ListingKind } from '../toolcalls/listings.js';
import { namesItsPrefix, toolPrefix } from '../toolcalls/tool-names.js';
import type { ToolService } from '../toolcalls/tool-service.js';
import { isId } from '../util/ids.js';
import { KeyedLanes } from '../util/keyed-lanes.js';

export interface CatalogDeps {
  registry: ServerRegistry;
  tools: ToolService;
  pool: ConnectionPool;
  /** The one cache of listings, shared with the tool service (`fleet.ts` makes it and has it follow the registry). */
  listings: ListingCache;
  /** A server that has not answered a listing within this is left out of that answer, in ms. @default 5000 */
  listTimeoutMs?: number;
}

/** Where the catalog's sources stood at `at` (`UpstreamCatalog.revision`). */
export interface CatalogRevision {
  records: number;
  commits: number;
  listings: number;
  at: number;
}

/** Whether nothing `servers` and `listed` read changed between two revisions (the clock aside). */
export const sameSources = (a: CatalogRevision, b: CatalogRevision): boolean =>
  a.records === b.records && a.commits === b.commits && a.listings === b.listings;

/** What the catalog keeps per server: the pool's list kinds, and `resources/templates/list`. */
export type CatalogKind = ListingKind;

/** The servers of one account read at most for one answer (pages of 100). */
const MAX_SERVERS = 10_000;

/**
 * Upstream listings one account runs at once in this process. A `tools/list` with cold caches would otherwise open a
 * listing to every server of the account together; beyond the lanes they wait, and whatever is not listed within
 * the answer's 5 s is left out of it (and cached for the next).
 */
const LISTINGS_PER_ACCOUNT = 8;

const runKeyOf = (server: ServerRecord, kind: CatalogKind) => `${server.id}@${server.updated_at}:${kind}`;

/** Where a server's re-lists stand after a `list_changed`: one now, then at most one at the end of each interval. */
interface Relist {
  timer: NodeJS.Timeout;
  /** A notification came within the interval: the list is dropped and the account told once more at its end. */
  pending: boolean;
}

/**
 * The upstream lists the MCP endpoint aggregates, per server: `tools/list`, `prompts/list`, `resources/list`,
 * `resources/templates/list`, read through the tool service (bounded whole: `listings.maxBytes`, `listings.maxItems`)
 * into the one listing cache, kept for the `ttlMs` the upstream's answer carried (2026-07-28; else the default) and
 * dropped when the upstream sends its `list_changed` (at most once per `listings.relistIntervalMs` per server).
 * A server that is `unhealthy` or `auth_failed`, fails, is refused as too large, or does not answer within `listTimeoutMs` is left out
 * of an answer; a listing still running when that answer goes keeps running and fills the cache for the next one.
 */
export class UpstreamCatalog {
  private readonly running = new Map<string, Promise<Listing<unknown>>>();
  private readonly listTimeoutMs: number;
  private readonly lanes = new KeyedLanes(LISTINGS_PER_ACCOUNT);
  private readonly watchers = new Set<(serverId: string, list: ListKind, account: string) => void>();
  private readonly relists = new Map<string, Relist>();
  private readonly unwatch: () => void;

  constructor(private readonly deps: CatalogDeps) {
    this.listTimeoutMs = deps.listTimeoutMs ?? 5000;
    this.unwatch = deps.pool.onListChanged((serverId, list, account) => this.changed(serverId, list, account));
  }

  /** Told after an upstream's `list_changed` emptied that list's cache entry, with the server's account (never another's). */
  onChange(watcher: (serverId: string, list: ListKind, account: string) => void): () => void {
    this.watchers.add(watcher);
    return () => this.watchers.delete(watcher);
  }

  /** The bound of one aggregated answer, in bytes of items: the account's share of the listing cache. */
  get answerBytes(): number {
    return this.deps.listings.limits.cacheBytesPerAccount;
  }

  /** Forgets what is kept of a server (changed or deleted), and its pending re-lists. */
  forget(serverId: string): void {
    this.deps.listings.forget(serverId);
    if (this.relists.size === 0) return;
    for (const kind of ['tools', 'prompts', 'resources'] as const) {
      const relist = this.relists.get(`${serverId}:${kind}`);
      if (relist === undefined) continue;
      clearTimeout(relist.timer);
      this.relists.delete(`${serverId}:${kind}`);
    }
  }

  /** Marks the servers' cached lists of `kind` used now (`ListingCache.touch`): an answer built from them was reused. */
  touch(serverIds: readonly string[], kind: CatalogKind): void {
    for (const id of serverIds) this.deps.listings.touch(id, kind);
  }

  /** Drops one cached list of a server, so the next `list` asks the upstream. */
  forgetList(serverId: string, kind: CatalogKind): void {
    this.deps.listings.forgetList(serverId, kind);
  }

  close(): void {
    this.unwatch();
    this.watchers.clear();
    for (const relist of this.relists.values()) clearTimeout(relist.timer);
    this.relists.clear();
  }

  /**
   * An upstream said one of its lists changed: the first notification drops the list and tells the server's account
   * at once; the ones within the next `relistIntervalMs` are folded into one at its end. A flood thus costs one
   * re-list per interval, and only the sessions of the server's own account look.
   */
  private changed(serverId: string, list: ListKind, account: string): void {
    const key = `${serverId}:${list}`;
    const relist = this.relists.get(key);
    if (relist !== undefined) {
      relist.pending = true;
      return;
    }
    this.tell(serverId, list, account);
    this.arm(key, serverId, list, account);
  }

  private arm(key: string, serverId: string, list: ListKind, account: string): void {
    const relist: Relist = {
      pending: false,
      timer: setTimeout(() => {
        this.relists.delete(key);
        if (!relist.pending) return;
        this.tell(serverId, list, account);
        this.arm(key, serverId, list, account);
      }, this.deps.listings.limits.relistIntervalMs),
    };
    relist.timer.unref();
    this.relists.set(key, relist);
  }

  private tell(serverId: string, list: ListKind, account: string): void {
    this.deps.listings.forgetList(serverId, list);
    // A resource list that changed may come with other templates.
    if (list === 'resources') this.deps.listings.forgetList(serverId, 'resourceTemplates');
    for (const watcher of this.watchers) watcher(serverId, list, account);
  }

  /** The account's servers that may be listed (not `unhealthy` nor `auth_failed`): every one, or only `serverId`. Throws a `FleetError`. */
  async servers(account: string, serverId?: string): Promise<ServerRecord[]> {
    if (serverId !== undefined) {
      const one = await this.deps.registry.get(account, serverId);
      if (one.isErr()) throw one.error;
      return [one.value];
    }
    const found: ServerRecord[] = [];
    for (let page = 1; found.length < MAX_SERVERS; page++) {
      const listed = await this.deps.registry.list(account, { page, limit: 100 });
      if (listed.isErr()) throw listed.error;
      found.push(...listed.value.data);
      if (page >= listed.value.pagination.pages) break;
    }
    return found;
  }

  /**
   * The account's server whose items are exposed under `prefix`: the one named `prefix` when that name is its prefix,
   * else the one whose id is `prefix` when its name is not usable as one; `undefined` for neither. At most two reads
   * (a name claim and a record, or a record), however many servers the account has. Throws a `FleetError`.
   */
  async serverOfPrefix(account: string, prefix: string): Promise<ServerRecord | undefined> {
    const { registry } = this.deps;
    if (namesItsPrefix(prefix)) {
      const named = await registry.getByName(account, prefix);
      if (named.isErr()) throw named.error;
      if (named.value !== undefined) return named.value;
    }
    if (!isId('server', prefix)) return undefined;
    const found = await registry.get(account, prefix);
    if (found.isErr()) {
      if (found.error.code === 'SERVER_NOT_FOUND') return undefined;
      throw found.error;
    }
    return toolPrefix({ id: found.value.id, name: found.value.config.name }) === prefix ? found.value : undefined;
  }

  /**
   * `server`'s list of `kind` with its weight, or `undefined` when it is unhealthy, failed, was refused as too large,
   * or was too slow for this answer.
   */
  list<K extends CatalogKind>(server: ServerRecord, kind: K): Promise<Listing<ListingItems[K]> | undefined> {
    const kept = this.listed(server, kind);
    return kept === undefined ? this.fetched(server, kind) : Promise.resolve(kept.listing);
  }

  /**
   * What `list` answers without asking the upstream, and until when (the listing cache's clock) that holds while the
   * cache does not change (`revision`): the server left out (unhealthy or `auth_failed`: until its record changes), or
   * its listing (or refusal) kept within its TTL. `undefined` when `list` must ask the upstream (`fetched`).
   */
  listed<K extends CatalogKind>(server: ServerRecord, kind: K): { listing: Listing<ListingItems[K]> | undefined; until: number } | undefined {
    if (server.health === 'unhealthy' || server.health === 'auth_failed') return { listing: undefined, until: Infinity };
    const cached = this.deps.listings.get(server, kind);
    return cached?.fresh === true ? { listing: cached.listing, until: cached.expires } : undefined;
  }

  /**
   * Where what the answers of `servers(account)` and `list` are made of stands: the server records and the account's
   * listing (`ServerRegistry.changeCounts`), the listing cache's `revision`, and the cache's clock (`at`). While a later
   * one is the `same`, and its `at` is before the `until` of every `listed` answer, `servers(account)` and `listed`
   * answer as they did. `undefined` when a store does not count its changes (a store shared by other processes).
   */
  revision(account: string): CatalogRevision | undefined {
    const counts = this.deps.registry.changeCounts(account);
    if (counts === undefined) return undefined;
    return { records: counts.records, commits: counts.commits, listings: this.deps.listings.revision, at: this.deps.listings.now() };
  }

  /** `list` past what is kept: the upstream asked, within the answer's time. */
  private fetched<K extends CatalogKind>(server: ServerRecord, kind: K): Promise<Listing<ListingItems[K]> | undefined> {
    const fetching = this.fetch(server, kind);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), this.listTimeoutMs);
    });
    return Promise.race([fetching.catch(() => undefined), late]).finally(() => clearTimeout(timer));
  }

  /**
   * The last listing of `kind` known for this configuration of `server`, however old: for a call, which only needs
   * to know the tool exists (a tool missing from it is looked up again before the call is refused).
   */
  known<K extends CatalogKind>(server: ServerRecord, kind: K): ListingItems[K][] | undefined {
    return this.deps.listings.get(server, kind)?.listing?.items;
  }

  /** One listing per server and kind at a time; the tool service keeps it in the listing cache. */
  private fetch<K extends CatalogKind>(server: ServerRecord, kind: K): Promise<Listing<ListingItems[K]>> {
    const runKey = runKeyOf(server, kind);
    const running = this.running.get(runKey);
    if (running !== undefined) return running as Promise<Listing<ListingItems[K]>>;
    // Within the account's lanes: a tenant with many cold servers lists a few at a time, not all of them at once.
    const started = this.lanes.run(server.account, () => this.deps.tools.listing(server, server.config.timeout, kind));
    this.running.set(runKey, started);
    void started.finally(() => this.running.delete(runKey)).catch(() => {});
    return started;
  }
}
