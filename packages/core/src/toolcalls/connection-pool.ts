import type { Client, FetchLike, Transport } from '@modelcontextprotocol/client';
import {
  closeClient,
  connectClient,
  type ConnectedClient,
  type McpClientDeps,
  type McpEra,
  type StdioTransportFactory,
} from '../mcp/connect.js';
import { FleetError } from '../errors/fleet-error.js';
import { toUpstreamError } from '../mcp/errors.js';
import { probeConnected, type ProbeResult } from '../mcp/probe.js';
import type { EventSource } from '../events/bus.js';
import type { ServerRecord } from '../registry/views.js';
import { parseRetryAfter } from './retry.js';
import type { ExchangeInit, PlainAnswer } from '../net/dispatch-fetch.js';

/** The client layer's dependencies; stdio transports are opened per server (the supervisor keys processes by id). */
export interface ConnectionPoolDeps extends Omit<McpClientDeps, 'stdioTransport'> {
  stdioTransportFor?: (server: ServerRecord) => StdioTransportFactory;
}

export interface ConnectionPoolOptions {
  /** An http connection (or a websocket one without heartbeat) unused this long is closed, in ms. @default 60000 */
  idleMs?: number;
  /** Sees a heartbeat that failed (the connection is reopened). @default ignores it */
  onHeartbeatFailure?: (serverId: string, error: unknown) => void;
  /**
   * `list_changed` notifications heeded per connection per minute (`listings.maxListChangedPerMinute`); one more
   * closes the connection (the next call or listing opens a new one). @default 60
   */
  maxListChangedPerMinute?: number;
}

/** Which of a server's lists an upstream `notifications/{list}/list_changed` said changed. */
export type ListKind = 'tools' | 'prompts' | 'resources';


/** A connection lent to one call; give it back with `release`, or `discard` it when it proved dead. */
export interface Lease {
  client: Client;
  /** The connection's transport: `toUpstreamError` asks it whether it ended the connection itself, and why. */
  transport: Transport;
  era: McpEra;
  /** Whether the connection served an earlier call (a failure may then mean it died in between). */
  reused: boolean;
  /** The `Retry-After` of the latest 429 or 503 this connection received, in ms, then forgotten. */
  takeRetryAfter(): number | undefined;
  /** Whether `tools/list` was answered on this connection (its tools are then in the listing cache, for this configuration). */
  readonly listed: boolean;
  markListed(): void;
  release(): void;
  discard(): Promise<void>;
}

interface Entry {
  key: string;
  serverId: string;
  /** Aborting it closes the transport: the connection's lifetime. */
  lifetime: AbortController;
  ready: Promise<ConnectedClient>;
  connected?: ConnectedClient;
  closed: boolean;
  busy: number;
  used: boolean;
  listed: boolean;
  heartbeat?: NodeJS.Timeout;
  /** Armed while the connection is idle; when it fires it looks at `lastUsed`, so a call does not re-arm it. */
  idle?: NodeJS.Timeout | undefined;
  /** When the latest lease was released (`performance.now()`). */
  lastUsed?: number;
  retryAfterMs?: number | undefined;
  /** When the current minute of `list_changed` notifications began (`performance.now()`), and how many came in it. */
  noticesSince: number;
  notices: number;
}

/** A connection belongs to one configuration: an update changes `updated_at`, so the old one is never reused. */
const keyOf = (server: ServerRecord) => `${server.id}@${server.updated_at}`;

/**
 * Kept MCP connections, one per server, so that a call does not pay for a handshake each time:
 * - http, and websocket without heartbeat: closed after `idleMs` without a call;
 * - websocket with `heartbeat.enabled`: pinged every `heartbeat.interval` (MCP `ping`; `server/discover` on 2026-07-28,
 *   which has no ping) and reopened when a ping fails;
 * - stdio: one initialised client over the supervisor's live process of the server, shared by calls and probes
 *   (`probe`); the process's exit closes it.
 * `drop` closes a server's connection (on update and delete); `close` closes all.
 */
export class ConnectionPool {
  private readonly entries = new Map<string, Entry>();
  /** The era each server answered in last, per configuration: a new connection tries it first (no `server/discover` → 400 each time). */
  private readonly eras = new Map<string, { key: string; era: McpEra }>();
  private readonly idleMs: number;
  private closing = false;
  /** Told when a kept connection's server says one of its lists changed (the MCP endpoint's caches listen). */
  private readonly listWatchers = new Set<(serverId: string, list: ListKind, account: string) => void>();
  private readonly maxNotices: number;

  constructor(
    private readonly deps: ConnectionPoolDeps,
    private readonly options: ConnectionPoolOptions = {},
  ) {
    this.idleMs = options.idleMs ?? 60_000;
    this.maxNotices = options.maxListChangedPerMinute ?? 60;
  }

  /**
   * Calls `watcher` whenever an upstream says its tools, prompts or resources changed, with the server's account;
   * returns the unsubscribe. At most `maxListChangedPerMinute` times a minute per connection; past that the connection
   * is closed.
   */
  onListChanged(watcher: (serverId: string, list: ListKind, account: string) => void): () => void {
    this.listWatchers.add(watcher);
    return () => this.listWatchers.delete(watcher);
  }

  /**
   * A connection to `server`, opened within `timeoutMs` when there is none. The kept connection, when it is open and
   * ready for this configuration, is leased at once, without a promise; otherwise a promise of it. Throws (or
   * rejects with) an upstream `FleetError`.
   */
  acquire(server: ServerRecord, timeoutMs: number): Lease | Promise<Lease> {
    if (this.closing) throw new FleetError('UPSTREAM_UNREACHABLE', { message: 'The service is shutting down.' });
    const entry = this.entries.get(server.id);
    if (entry?.connected !== undefined && !entry.closed && entry.key === keyOf(server)) {
      entry.busy += 1;
      return this.leaseOf(entry, entry.connected, server);
    }
    return this.connect(server, timeoutMs);
  }

  private async connect(server: ServerRecord, timeoutMs: number): Promise<Lease> {
    let entry = this.entries.get(server.id);
    if (entry !== undefined && (entry.key !== keyOf(server) || entry.closed)) {
      await this.drop(server.id);
      entry = undefined;
    }
    entry ??= this.open(server, timeoutMs, this.rememberedEra(server));
    const current = entry;
    current.busy += 1;
    let connected: ConnectedClient;
    try {
      connected = await current.ready;
    } catch (error) {
      current.busy -= 1;
      throw error;
    }
    return this.leaseOf(current, connected, server);
  }

  /** A lease of `current` (its `busy` already counted), given back by `release` or `discard`. */
  private leaseOf(current: Entry, connected: ConnectedClient, server: ServerRecord): Lease {
    const reused = current.used;
    current.used = true;
    let settled = false;
    return {
      client: connected.client,
      transport: connected.transport,
      era: connected.era,
      reused,
      takeRetryAfter: () => {
        const value = current.retryAfterMs;
        current.retryAfterMs = undefined;
        return value;
      },
      get listed() {
        return current.listed;
      },
      markListed: () => {
        current.listed = true;
      },
      release: () => {
        if (settled) return;
        settled = true;
        current.busy -= 1;
        this.scheduleIdle(current, server);
      },
      discard: async () => {
        if (!settled) {
          settled = true;
          current.busy -= 1;
        }
        if (this.entries.get(server.id) === current) await this.drop(server.id);
      },
    };
  }

  /**
   * Probes a server over its kept connection (opened within its `timeout` when there is none), so that a stdio
   * process is initialised once and shared by probes and calls. Never throws; a failed probe closes the connection.
   */
  async probe(server: ServerRecord): Promise<ProbeResult> {
    const timeoutMs = server.config.timeout;
    const started = performance.now();
    let lease: Lease;
    try {
      lease = await this.acquire(server, timeoutMs);
    } catch (error) {
      return { ok: false, error: toUpstreamError(error, timeoutMs).toJSON(), responseTimeMs: Math.round(performance.now() - started) };
    }
    const result = await probeConnected(lease, Math.max(1, Math.round(timeoutMs - (performance.now() - started))));
    if (result.ok) lease.release();
    else void lease.discard();
    return { ...result, responseTimeMs: Math.round(performance.now() - started) };
  }

  /** A connection never outlives its server, nor the configuration it was opened with. */
  follow(events: EventSource): void {
    const drop = ({ server }: { server: { id: string } }) => void this.drop(server.id);
    events.on('server.updated', drop);
    events.on('server.deleted', ({ server }) => {
      this.eras.delete(server.id);
      void this.drop(server.id);
    });
  }

  private rememberedEra(server: ServerRecord): McpEra | undefined {
    const remembered = this.eras.get(server.id);
    return remembered?.key === keyOf(server) ? remembered.era : undefined;
  }

  /** Closes the connection of a server, if any. */
  async drop(serverId: string): Promise<void> {
    const entry = this.entries.get(serverId);
    if (entry === undefined) return;
    this.entries.delete(serverId);
    await this.shut(entry);
  }

  /** Closes every connection; later acquires fail. Safe to call twice. */
  async close(): Promise<void> {
    this.closing = true;
    const all = [...this.entries.values()];
    this.entries.clear();
    await Promise.all(all.map((entry) => this.shut(entry)));
  }

  /** How many connections are open or opening (tests, diagnostics). */
  get size(): number {
    return this.entries.size;
  }

  private open(server: ServerRecord, timeoutMs: number, era?: McpEra): Entry {
    const lifetime = new AbortController();
    const entry: Entry = {
      key: keyOf(server),
      serverId: server.id,
      lifetime,
      ready: undefined as unknown as Promise<ConnectedClient>,
      closed: false,
      busy: 0,
      used: false,
      listed: false,
      noticesSince: 0,
      notices: 0,
    };
    // Remembers a Retry-After for the retry policy: the SDK's HTTP error carries the status only. (A plain answer of
    // the lean exchange is a 200.)
    const noteRetryAfter = <T extends Response | PlainAnswer>(answer: T): T => {
      if (answer instanceof Response && (answer.status === 429 || answer.status === 503)) entry.retryAfterMs = parseRetryAfter(answer.headers.get('retry-after'));
      return answer;
    };
    const watching =
      (fetch: FetchLike): FetchLike =>
      async (url, init) =>
        noteRetryAfter(await fetch(url, init));
    const fetch = this.deps.fetch ?? globalThis.fetch;
    const { mcpFetch, mcpExchange } = this.deps;
    const watched = {
      fetch: watching(fetch),
      ...(mcpFetch === undefined ? {} : { mcpFetch: watching(mcpFetch) }),
      ...(mcpExchange === undefined ? {} : { mcpExchange: (url: URL, init: ExchangeInit) => mcpExchange(url, init).then(noteRetryAfter) }),
    };
    const timer = setTimeout(() => lifetime.abort(), timeoutMs);
    entry.ready = connectClient(server.config, this.clientDeps(server, watched), { signal: lifetime.signal, timeoutMs, serverId: server.id, ...(era === undefined ? {} : { era }) }).then(
      (connected) => {
        clearTimeout(timer);
        entry.connected = connected;
        this.eras.set(server.id, { key: entry.key, era: connected.era });
        if (entry.closed) {
          void closeClient(connected.client, connected.transport, 0);
          throw new FleetError('UPSTREAM_UNREACHABLE', { message: 'The connection was closed while it opened.' });
        }
        const previous = connected.client.onclose;
        connected.client.onclose = () => {
          previous?.();
          entry.closed = true;
          if (this.entries.get(server.id) === entry) this.entries.delete(server.id);
          clearInterval(entry.heartbeat);
          clearTimeout(entry.idle);
        };
        this.startHeartbeat(entry, server, connected);
        for (const list of ['tools', 'prompts', 'resources'] as const) {
          connected.client.setNotificationHandler(`notifications/${list}/list_changed`, () => {
            // A connection is heard `maxListChangedPerMinute` times a minute. One past that is closed: ignoring a flood
            // would still parse every message of it, so the connection goes, and the next call or listing opens a new one.
            const now = performance.now();
            if (now - entry.noticesSince >= 60_000) {
              entry.noticesSince = now;
              entry.notices = 0;
            }
            if (++entry.notices > this.maxNotices) {
              if (this.entries.get(server.id) === entry) void this.drop(server.id);
              return;
            }
            for (const watcher of this.listWatchers) watcher(server.id, list, server.account);
          });
        }
        return connected;
      },
      (error: unknown) => {
        clearTimeout(timer);
        entry.closed = true;
        if (this.entries.get(server.id) === entry) this.entries.delete(server.id);
        throw error;
      },
    );
    entry.ready.catch(() => {});
    this.entries.set(server.id, entry);
    return entry;
  }

  private clientDeps(server: ServerRecord, watched: Pick<McpClientDeps, 'fetch' | 'mcpFetch' | 'mcpExchange'>): McpClientDeps {
    const { stdioTransportFor, ...deps } = this.deps;
    const stdioTransport = stdioTransportFor?.(server);
    return { ...deps, ...watched, ...(stdioTransport === undefined ? {} : { stdioTransport }) };
  }

  private startHeartbeat(entry: Entry, server: ServerRecord, connected: ConnectedClient): void {
    const config = server.config;
    if (config.type !== 'websocket' || config.heartbeat?.enabled !== true) return;
    const interval = config.heartbeat.interval ?? 30_000;
    let pinging = false;
    entry.heartbeat = setInterval(() => {
      if (pinging || entry.closed) return;
      pinging = true;
      const options = { timeout: Math.min(interval, config.timeout) };
      // 2026-07-28 has no `ping`: its liveness request is the stateless `server/discover`.
      const beat = connected.era === '2026-07-28' ? connected.client.discover(options) : connected.client.ping(options);
      beat
        .catch(async (error: unknown) => {
          this.options.onHeartbeatFailure?.(server.id, error);
          if (this.entries.get(server.id) !== entry) return;
          await this.drop(server.id);
          if (this.closing) return;
          // Reopened at once, so the next call (and the next ping) finds a live connection.
          this.open(server, config.timeout, connected.era).ready.catch(() => {});
        })
        .finally(() => {
          pinging = false;
        });
    }, interval);
    entry.heartbeat.unref();
  }

  /**
   * Closes the connection `idleMs` after its last call. One timer per idle period, not one per call: a call only
   * notes when it ended, and a timer that fires early waits out the rest.
   */
  private scheduleIdle(entry: Entry, server: ServerRecord): void {
    // A stdio client lives as long as its process: the supervisor's idle timeout ends both.
    if (entry.closed || entry.heartbeat !== undefined || server.config.type === 'stdio') return;
    entry.lastUsed = performance.now();
    if (entry.busy > 0 || entry.idle !== undefined) return;
    this.armIdle(entry, server, this.idleMs);
  }

  private armIdle(entry: Entry, server: ServerRecord, ms: number): void {
    entry.idle = setTimeout(() => {
      entry.idle = undefined;
      // Busy: the release of the last lease arms it again.
      if (entry.busy > 0 || entry.closed || this.entries.get(server.id) !== entry) return;
      const quiet = performance.now() - (entry.lastUsed ?? 0);
      if (quiet >= this.idleMs) void this.drop(server.id);
      else this.armIdle(entry, server, this.idleMs - quiet);
    }, ms);
    entry.idle.unref();
  }

  private async shut(entry: Entry): Promise<void> {
    entry.closed = true;
    clearInterval(entry.heartbeat);
    clearTimeout(entry.idle);
    // Still connecting: abort at once rather than wait out the handshake.
    if (entry.connected === undefined) entry.lifetime.abort();
    const connected = entry.connected ?? (await entry.ready.catch(() => undefined));
    if (connected !== undefined) await closeClient(connected.client, connected.transport, 500);
    entry.lifetime.abort();
  }
}
