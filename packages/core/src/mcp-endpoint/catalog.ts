import type { Prompt, Resource, ResourceTemplateType as ResourceTemplate, Tool } from '@modelcontextprotocol/client';
import type { ServerRegistry } from '../registry/registry.js';
import type { ServerRecord } from '../registry/views.js';
import type { ConnectionPool, ListKind } from '../toolcalls/connection-pool.js';
import { namesItsPrefix, toolPrefix } from '../toolcalls/tool-names.js';
import type { ToolService } from '../toolcalls/tool-service.js';
import { isId } from '../util/ids.js';
import { KeyedLanes } from '../util/keyed-lanes.js';

export interface CatalogDeps {
  registry: ServerRegistry;
  tools: ToolService;
  pool: ConnectionPool;
  now: () => number;
  /** A server that has not answered a listing within this is left out of that answer, in ms. @default 5000 */
  listTimeoutMs?: number;
  /** How long a listing is kept when the upstream gave no `ttlMs`, in ms. @default 60000 */
  defaultTtlMs?: number;
}

interface Lists {
  tools: Tool[];
  prompts: Prompt[];
  resources: Resource[];
  resourceTemplates: ResourceTemplate[];
}

/** What the catalog keeps per server: the pool's list kinds, and `resources/templates/list`. */
export type CatalogKind = ListKind | 'resourceTemplates';

interface Cached<T> {
  /** `id@updated_at`: a changed configuration never reads the old listing. */
  key: string;
  value: T;
  expires: number;
}

/** Pages followed at most for prompts and resources (tools: the tool service's own bound). */
const MAX_PAGES = 100;
/** The servers of one account read at most for one answer (pages of 100). */
const MAX_SERVERS = 10_000;

/** The longest an upstream's `ttlMs` keeps a listing. */
const MAX_TTL_MS = 3_600_000;
/**
 * Upstream listings one account runs at once in this process. A `tools/list` with cold caches would otherwise open a
 * listing to every server of the account together; beyond the lanes they wait, and whatever is not listed within
 * the answer's 5 s is left out of it (and cached for the next).
 */
const LISTINGS_PER_ACCOUNT = 8;

const keyOf = (server: ServerRecord) => `${server.id}@${server.updated_at}`;

/**
 * The upstream lists the MCP endpoint aggregates, per server: `tools/list`, `prompts/list`, `resources/list`, each
 * kept for the `ttlMs` the upstream's list answer carried (2026-07-28; else `defaultTtlMs`) and dropped when the upstream sends its `list_changed`.
 * A server that is `unhealthy`, fails, or does not answer within `listTimeoutMs` is left out of an answer; a listing
 * still running when that answer goes keeps running and fills the cache for the next one.
 */
export class UpstreamCatalog {
  private readonly cache = new Map<string, Map<CatalogKind, Cached<unknown>>>();
  private readonly running = new Map<string, Promise<unknown>>();
  private readonly listTimeoutMs: number;
  private readonly defaultTtlMs: number;
  private readonly lanes = new KeyedLanes(LISTINGS_PER_ACCOUNT);
  private readonly watchers = new Set<(serverId: string, list: ListKind, account: string | undefined) => void>();
  /** The account of each server listed here, for telling a `list_changed` to the right account. */
  private readonly accounts = new Map<string, string>();
  private readonly unwatch: () => void;

  constructor(private readonly deps: CatalogDeps) {
    this.listTimeoutMs = deps.listTimeoutMs ?? 5000;
    this.defaultTtlMs = deps.defaultTtlMs ?? 60_000;
    this.unwatch = deps.pool.onListChanged((serverId, list) => {
      this.cache.get(serverId)?.delete(list);
      // A resource list that changed may come with other templates.
      if (list === 'resources') this.cache.get(serverId)?.delete('resourceTemplates');
      for (const watcher of this.watchers) watcher(serverId, list, this.accounts.get(serverId));
    });
  }

  /** Told after an upstream's `list_changed` emptied that list's cache entry. */
  onChange(watcher: (serverId: string, list: ListKind, account: string | undefined) => void): () => void {
    this.watchers.add(watcher);
    return () => this.watchers.delete(watcher);
  }

  /** Forgets what is cached of a server (changed or deleted). */
  forget(serverId: string): void {
    this.cache.delete(serverId);
    this.accounts.delete(serverId);
  }

  /** Drops one cached list of a server, so the next `list` asks the upstream. */
  forgetList(serverId: string, kind: CatalogKind): void {
    this.cache.get(serverId)?.delete(kind);
  }

  close(): void {
    this.unwatch();
    this.watchers.clear();
    this.cache.clear();
    this.accounts.clear();
  }

  /** The account's servers that may be listed (not `unhealthy`): every one, or only `serverId`. Throws a `FleetError`. */
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

  /** `server`'s list of `kind`, or `undefined` when it is unhealthy, failed or was too slow for this answer. */
  list<K extends CatalogKind>(server: ServerRecord, kind: K): Promise<Lists[K] | undefined> {
    if (server.health === 'unhealthy') return Promise.resolve(undefined);
    this.accounts.set(server.id, server.account);
    const cached = this.cache.get(server.id)?.get(kind);
    if (cached !== undefined && cached.key === keyOf(server) && cached.expires > this.deps.now()) return Promise.resolve(cached.value as Lists[K]);
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
  known<K extends CatalogKind>(server: ServerRecord, kind: K): Lists[K] | undefined {
    const cached = this.cache.get(server.id)?.get(kind);
    return cached !== undefined && cached.key === keyOf(server) ? (cached.value as Lists[K]) : undefined;
  }

  /**
   * How long a listing is kept: the upstream's `ttlMs` when it gave a positive one (at most an hour), else the
   * default. A `ttlMs` of 0 is what SDK servers send unless told otherwise; taken literally it would send every
   * client's `tools/list` to every upstream, so it gets the default too, and `list_changed` still drops the entry.
   */
  private ttlOf(ttlMs: number | undefined): number {
    return ttlMs !== undefined && ttlMs > 0 ? Math.min(ttlMs, MAX_TTL_MS) : this.defaultTtlMs;
  }

  /** One listing per server and kind at a time; the answer fills the cache. */
  private fetch<K extends CatalogKind>(server: ServerRecord, kind: K): Promise<Lists[K]> {
    const runKey = `${keyOf(server)}:${kind}`;
    const running = this.running.get(runKey);
    if (running !== undefined) return running as Promise<Lists[K]>;
    // Within the account's lanes: a tenant with many cold servers lists a few at a time, not all of them at once.
    const started = this.lanes.run(server.account, () => this.load(server, kind)).then(
      ({ value, ttlMs }) => {
        let lists = this.cache.get(server.id);
        if (lists === undefined) this.cache.set(server.id, (lists = new Map()));
        lists.set(kind, { key: keyOf(server), value, expires: this.deps.now() + this.ttlOf(ttlMs) });
        return value;
      },
    );
    this.running.set(runKey, started);
    void started.finally(() => this.running.delete(runKey)).catch(() => {});
    return started;
  }

  private async load<K extends CatalogKind>(server: ServerRecord, kind: K): Promise<{ value: Lists[K]; ttlMs?: number | undefined }> {
    const timeoutMs = server.config.timeout;
    if (kind === 'tools') {
      const { tools, ttlMs } = await this.deps.tools.listing(server, timeoutMs);
      return { value: tools as Lists[K], ttlMs };
    }
    return this.deps.tools.upstream(server, timeoutMs, async ({ client }) => {
      const items: unknown[] = [];
      let cursor: string | undefined;
      let ttlMs: number | undefined;
      for (let page = 0; page < MAX_PAGES; page++) {
        const params = cursor === undefined ? {} : { cursor };
        let answer: { nextCursor?: string | undefined };
        if (kind === 'prompts') {
          const prompts = await client.listPrompts(params, { timeout: timeoutMs });
          items.push(...prompts.prompts);
          answer = prompts;
        } else if (kind === 'resources') {
          const resources = await client.listResources(params, { timeout: timeoutMs });
          items.push(...resources.resources);
          answer = resources;
        } else {
          const templates = await client.listResourceTemplates(params, { timeout: timeoutMs });
          items.push(...templates.resourceTemplates);
          answer = templates;
        }
        // 2026-07-28 (SEP-2549): every list answer carries its own `ttlMs`; the first page's is the listing's.
        const ttl = (answer as { ttlMs?: unknown }).ttlMs;
        if (page === 0 && typeof ttl === 'number' && Number.isFinite(ttl) && ttl >= 0) ttlMs = ttl;
        cursor = answer.nextCursor;
        if (cursor === undefined) break;
      }
      return { value: items as Lists[K], ttlMs };
    });
  }
}
