import type { Client, Prompt, Resource, ResourceTemplateType as ResourceTemplate, Tool } from '@modelcontextprotocol/client';
import { FleetError } from '../errors/fleet-error.js';
import type { EventSource } from '../events/bus.js';
import { ByAccount } from '../util/by-account.js';
import type { ServerRecord } from '../registry/views.js';
import { checkOption, positiveInteger } from '../util/options.js';

/** The upstream lists the fleet reads and keeps, per server. */
export type ListingKind = 'tools' | 'prompts' | 'resources' | 'resourceTemplates';

export interface ListingItems {
  tools: Tool;
  prompts: Prompt;
  resources: Resource;
  resourceTemplates: ResourceTemplate;
}

/** One server's list of one kind, every page of it, with its weight. */
export interface Listing<T> {
  items: T[];
  /** Bytes of the items as JSON (UTF-8): what a listing weighs in the cache and in an answer. */
  bytes: number;
  /** The `ttlMs` the upstream's first page carried (2026-07-28), if any. */
  ttlMs?: number | undefined;
}

/** Bounds of the upstream listings (`tools/list`, `prompts/list`, `resources/list`, `resources/templates/list`). */
export interface ListingsOptions {
  /**
   * Largest listing of one server, every page together (its items as JSON), in bytes. Past it the listing is refused
   * whole with 502 `UPSTREAM_RESPONSE_TOO_LARGE`: `GET /servers/{id}/tools` answers that, and the MCP endpoint leaves
   * the server out of its answers. No page past the bound is read. @default maxUpstreamBytes (4194304, 4 MiB)
   */
  maxBytes?: number;
  /** Most items in one server's listing, every page together; past it the listing is refused as for `maxBytes`. @default 10000 */
  maxItems?: number;
  /**
   * Bytes of listings kept per account (least recently used out first). Also the bound of one aggregated answer on
   * `/mcp` (`tools/list`, `prompts/list`, …): servers past it are left out of that answer. At least `maxBytes`.
   * @default 16777216 (16 MiB), or 4 × maxBytes when that is more
   */
  cacheBytesPerAccount?: number;
  /** Bytes of listings kept over every account (least recently used out first). At least `cacheBytesPerAccount`. @default 134217728 (128 MiB), or 4 × cacheBytesPerAccount when that is more */
  cacheBytes?: number;
  /**
   * After an upstream's `notifications/…/list_changed`, that list is dropped and its account's MCP sessions told at
   * most once per this interval per server; notifications within it are folded into one at its end, in ms. @default 1000
   */
  relistIntervalMs?: number;
  /**
   * `list_changed` notifications heeded per upstream connection per minute (tools, prompts and resources together).
   * One more closes that connection: a flood is not even parsed past it. The next call or listing of the server
   * opens a new connection, heard again from zero. @default 60
   */
  maxListChangedPerMinute?: number;
}

export type ResolvedListings = Required<ListingsOptions>;

const MIB = 1024 * 1024;

/** The listing options with their defaults; a misconfiguration throws here, at start, naming the option. */
export function resolveListings(options: ListingsOptions = {}, maxUpstreamBytes = 4 * MIB): ResolvedListings {
  const maxBytes = checkOption('listings.maxBytes', options.maxBytes ?? maxUpstreamBytes, positiveInteger);
  const maxItems = checkOption('listings.maxItems', options.maxItems ?? 10_000, positiveInteger);
  const cacheBytesPerAccount = checkOption('listings.cacheBytesPerAccount', options.cacheBytesPerAccount ?? Math.max(16 * MIB, 4 * maxBytes), positiveInteger);
  const cacheBytes = checkOption('listings.cacheBytes', options.cacheBytes ?? Math.max(128 * MIB, 4 * cacheBytesPerAccount), positiveInteger);
  if (cacheBytesPerAccount < maxBytes) throw new TypeError('mcp-fleet: listings.cacheBytesPerAccount must be at least listings.maxBytes (one listing must fit)');
  if (cacheBytes < cacheBytesPerAccount) throw new TypeError('mcp-fleet: listings.cacheBytes must be at least listings.cacheBytesPerAccount');
  return {
    maxBytes,
    maxItems,
    cacheBytesPerAccount,
    cacheBytes,
    relistIntervalMs: checkOption('listings.relistIntervalMs', options.relistIntervalMs ?? 1000, positiveInteger),
    maxListChangedPerMinute: checkOption('listings.maxListChangedPerMinute', options.maxListChangedPerMinute ?? 60, positiveInteger),
  };
}

/** Pages followed at most, whatever the bounds: a server answering empty pages with a cursor cannot hold a request forever. */
const MAX_PAGES = 100;

const METHOD: Record<ListingKind, string> = {
  tools: 'tools/list',
  prompts: 'prompts/list',
  resources: 'resources/list',
  resourceTemplates: 'resources/templates/list',
};

/** A listing past one of its bounds: `details` name the bound (`limit_bytes`, as a single answer's, or `limit_items`) and its option. */
function tooLarge(kind: ListingKind, option: 'listings.maxBytes' | 'listings.maxItems', limit: number): FleetError {
  const bytes = option === 'listings.maxBytes';
  return new FleetError('UPSTREAM_RESPONSE_TOO_LARGE', {
    message: `The server's ${METHOD[kind]} is larger than the fleet reads: more than ${limit} ${bytes ? 'bytes' : 'items'} over its pages (option ${option}). Raise that option, or have the server list less.`,
    details: bytes ? { limit_bytes: limit, option } : { limit_items: limit, option },
  });
}

/** The SDK client's own exclusion of tools whose `x-mcp-header` declarations are invalid (SEP-2243), per page. */
interface HeaderScreening {
  _excludeInvalidXMcpHeaderTools?: (page: { tools: unknown[] }) => void;
}

/**
 * Every page of the server's list of `kind`, within the bounds: the running total of items and of their JSON bytes
 * is checked after each page, and past either bound the listing is refused whole (`UPSTREAM_RESPONSE_TOO_LARGE`)
 * before the next page is asked for. Each page is itself bounded by `maxUpstreamBytes` where it is read.
 *
 * Page by page through `client.request`, not the SDK's `listTools()`: without a cursor that walks every page (up to
 * 64) before answering and keeps the whole aggregate in the client's own response cache, a copy per connection. The
 * fleet's listing cache is the one copy; a call hands the SDK the tool's definition from it (`toolDefinition`), for
 * `Mcp-Param-*` mirroring and output validation. Tools whose `x-mcp-header` declarations are invalid are left out of
 * each page as the SDK's public path leaves them out (the spec forbids calling them).
 */
export async function readListing<K extends ListingKind>(
  client: Client,
  kind: K,
  timeoutMs: number,
  bounds: Pick<ResolvedListings, 'maxBytes' | 'maxItems'>,
): Promise<Listing<ListingItems[K]>> {
  const items: unknown[] = [];
  let bytes = 0;
  let cursor: string | undefined;
  let ttlMs: number | undefined;
  const method = METHOD[kind];
  for (let page = 0; page < MAX_PAGES; page++) {
    const params = cursor === undefined ? {} : { cursor };
    const answer = (await client.request({ method: method as 'tools/list', params }, { timeout: timeoutMs })) as Record<string, unknown> & { nextCursor?: string };
    const key = kind === 'resourceTemplates' ? 'resourceTemplates' : kind;
    if (kind === 'tools') (client as unknown as HeaderScreening)._excludeInvalidXMcpHeaderTools?.(answer as { tools: unknown[] });
    const found = Array.isArray(answer[key]) ? (answer[key] as unknown[]) : [];
    bytes += Buffer.byteLength(JSON.stringify(found));
    if (bytes > bounds.maxBytes) throw tooLarge(kind, 'listings.maxBytes', bounds.maxBytes);
    if (items.length + found.length > bounds.maxItems) throw tooLarge(kind, 'listings.maxItems', bounds.maxItems);
    for (const item of found) items.push(item);
    // 2026-07-28 (SEP-2549): every list answer carries its own `ttlMs`; the first page's is the listing's.
    const ttl = answer['ttlMs'];
    if (page === 0 && typeof ttl === 'number' && Number.isFinite(ttl) && ttl >= 0) ttlMs = ttl;
    cursor = typeof answer.nextCursor === 'string' ? answer.nextCursor : undefined;
    if (cursor === undefined) break;
  }
  return { items: items as ListingItems[K][], bytes, ttlMs };
}

/** A kept listing, or a refused one (kept for its TTL, so an aggregate does not read a too-large server each time). */
interface Entry {
  serverId: string;
  account: string;
  kind: ListingKind;
  /** `id@updated_at`: a changed configuration never reads the old listing. */
  config: string;
  listing: Listing<unknown> | undefined;
  refused: FleetError | undefined;
  expires: number;
  /** Tools by name, built when first asked (retries and `x-mcp-header` checks look tools up by name). */
  byName?: Map<string, Tool>;
}

/** What the cache holds for a server's list: the listing (or its refusal), and whether it is still within its TTL. */
export interface Cached<T> {
  listing: Listing<T> | undefined;
  refused: FleetError | undefined;
  fresh: boolean;
  /** Until when (the cache's clock, Unix ms) it is within its TTL. */
  expires: number;
}

const configOf = (server: ServerRecord) => `${server.id}@${server.updated_at}`;
const keyOf = (serverId: string, kind: ListingKind) => `${serverId}:${kind}`;
const KINDS: readonly ListingKind[] = ['tools', 'prompts', 'resources', 'resourceTemplates'];

/** The longest an upstream's `ttlMs` keeps a listing. */
const MAX_TTL_MS = 3_600_000;

export interface ListingCacheDeps {
  now: () => number;
  limits: ResolvedListings;
  /** How long a listing is kept when the upstream gave no `ttlMs`, in ms. @default 60000 */
  defaultTtlMs?: number;
}

/**
 * The one cache of upstream listings, per server and kind: the MCP endpoint's answers read it, and so do tool calls
 * (a tool's annotations decide retries; over 2026-07-28 HTTP a tool missing from it is not called). Bounded in bytes
 * per account and over all, least recently used out first; a server's entries go when it is updated or deleted
 * (`follow`), and an entry of an older configuration is never read.
 */
export class ListingCache {
  /** In least-recently-used order, overall and per account (a read moves an entry to the end). */
  private readonly entries = new ByAccount<Entry>((entry) => entry.account);
  private readonly accountBytes = new Map<string, number>();
  private totalBytes = 0;
  private readonly defaultTtlMs: number;
  private changes = 0;

  constructor(private readonly deps: ListingCacheDeps) {
    this.defaultTtlMs = deps.defaultTtlMs ?? 60_000;
  }

  get limits(): ResolvedListings {
    return this.deps.limits;
  }

  /**
   * How many times what the cache holds has changed (an entry kept, dropped, or all cleared): every `get` answers
   * as before while this has not moved, but for `fresh`, which the clock decides (`expires`).
   */
  get revision(): number {
    return this.changes;
  }

  /** The cache's clock (Unix ms): what `fresh` is decided against. */
  now(): number {
    return this.deps.now();
  }

  /** A server's entries never outlive its configuration. */
  follow(events: EventSource): void {
    const forget = ({ server }: { server: { id: string } }) => this.forget(server.id);
    events.on('server.updated', forget);
    events.on('server.deleted', forget);
  }

  /** The kept list of `kind` for this configuration of `server`, however old (`fresh` says whether within its TTL). */
  get<K extends ListingKind>(server: ServerRecord, kind: K): Cached<ListingItems[K]> | undefined {
    const key = keyOf(server.id, kind);
    const entry = this.entries.get(key);
    if (entry === undefined || entry.config !== configOf(server)) return undefined;
    // Most recently used now: to the end of both orders.
    this.entries.delete(key);
    this.entries.set(key, entry);
    return { listing: entry.listing as Listing<ListingItems[K]> | undefined, refused: entry.refused, fresh: entry.expires > this.deps.now(), expires: entry.expires };
  }

  /**
   * Marks a server's kept list of `kind` used now, as a `get` does, without reading it: what a `tools/list` answer
   * taken as kept (`ToolsAnswers.current`) was built from is in use, and must not be the first to go. Changes nothing
   * a `get` answers (not `revision`).
   */
  touch(serverId: string, kind: ListingKind): void {
    const key = keyOf(serverId, kind);
    const entry = this.entries.get(key);
    if (entry === undefined) return;
    this.entries.delete(key);
    this.entries.set(key, entry);
  }

  /** The server's tools by name, from its kept `tools/list` (any age), or `undefined` when none is kept. */
  tools(server: ServerRecord): Map<string, Tool> | undefined {
    const entry = this.entries.get(keyOf(server.id, 'tools'));
    if (entry?.listing === undefined || entry.config !== configOf(server)) return undefined;
    entry.byName ??= new Map((entry.listing.items as Tool[]).map((tool) => [tool.name, tool]));
    return entry.byName;
  }

  /** Keeps a listing just read; past the account's or the process's bound, the least recently used ones go. */
  store(server: ServerRecord, kind: ListingKind, listing: Listing<unknown>): void {
    this.put({ serverId: server.id, account: server.account, kind, config: configOf(server), listing, refused: undefined, expires: this.deps.now() + this.ttlOf(listing.ttlMs) });
  }

  /** Remembers for the default TTL that the server's list was refused (too large): nothing of it is kept. */
  refuse(server: ServerRecord, kind: ListingKind, error: FleetError): void {
    this.put({ serverId: server.id, account: server.account, kind, config: configOf(server), listing: undefined, refused: error, expires: this.deps.now() + this.defaultTtlMs });
  }

  /** Drops one list of a server, so the next read asks the upstream. */
  forgetList(serverId: string, kind: ListingKind): void {
    this.remove(keyOf(serverId, kind));
  }

  /** Drops everything kept of a server (updated or deleted). */
  forget(serverId: string): void {
    if (this.entries.size === 0) return;
    for (const kind of KINDS) this.remove(keyOf(serverId, kind));
  }

  clear(): void {
    this.changes++;
    this.entries.clear();
    this.accountBytes.clear();
    this.totalBytes = 0;
  }

  /** Bytes kept, of one account or of all (tests, diagnostics). */
  bytes(account?: string): number {
    return account === undefined ? this.totalBytes : (this.accountBytes.get(account) ?? 0);
  }

  /** Entries kept (tests, diagnostics). */
  get size(): number {
    return this.entries.size;
  }

  /**
   * How long a listing is kept: the upstream's `ttlMs` when it gave a positive one (at most an hour), else the
   * default. A `ttlMs` of 0 is what SDK servers send unless told otherwise; taken literally it would send every
   * client's `tools/list` to every upstream, so it gets the default too, and `list_changed` still drops the entry.
   */
  private ttlOf(ttlMs: number | undefined): number {
    return ttlMs !== undefined && ttlMs > 0 ? Math.min(ttlMs, MAX_TTL_MS) : this.defaultTtlMs;
  }

  private put(entry: Entry): void {
    const key = keyOf(entry.serverId, entry.kind);
    this.changes++;
    this.remove(key);
    const bytes = entry.listing?.bytes ?? 0;
    this.entries.set(key, entry);
    this.accountBytes.set(entry.account, (this.accountBytes.get(entry.account) ?? 0) + bytes);
    this.totalBytes += bytes;
    const { cacheBytesPerAccount, cacheBytes } = this.deps.limits;
    // The entry just kept is the most recent, so it goes last; one listing alone fits (maxBytes ≤ both bounds).
    while ((this.accountBytes.get(entry.account) ?? 0) > cacheBytesPerAccount) {
      const oldest = this.entries.of(entry.account).keys().next().value;
      if (oldest === undefined || oldest === key) break;
      this.remove(oldest);
    }
    while (this.totalBytes > cacheBytes) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined || oldest === key) break;
      this.remove(oldest);
    }
  }

  private remove(key: string): void {
    const entry = this.entries.get(key);
    if (entry === undefined) return;
    this.changes++;
    this.entries.delete(key);
    const bytes = entry.listing?.bytes ?? 0;
    const left = (this.accountBytes.get(entry.account) ?? 0) - bytes;
    if (left <= 0 && this.entries.of(entry.account).size === 0) this.accountBytes.delete(entry.account);
    else this.accountBytes.set(entry.account, left);
    this.totalBytes -= bytes;
  }
}
