import { type JSONRPCMessage, parseJSONRPCMessage, type Transport, type TransportSendOptions } from '@modelcontextprotocol/client';
import { FleetError, isFleetError } from '../errors/fleet-error.js';
import type { EventSource } from '../events/bus.js';
import type { StdioChannel, StdioProcessConfig, StdioSupervisor } from './supervisor.js';

export interface StdioChannelTransportOptions {
  /**
   * Longest line accepted from the server, in bytes (`maxUpstreamBytes`). A longer one ends the connection at once
   * with `UPSTREAM_RESPONSE_TOO_LARGE` (`failure`): the requests in flight fail with it instead of waiting for their
   * timeout, and `onOversize` is called. @default 10485760 (10 MiB, as the MCP SDK's own stdio transport)
   */
  maxLineBytes?: number;
  /**
   * Called once when a line past `maxLineBytes` ended the connection. The rest of that line is still on its way
   * through the process's stdout, so the next user must not read from the middle of it: the fleet stops the process
   * here (the next call starts a fresh one). @default none
   */
  onOversize?: () => void;
  /** Aborting it while `start()` waits for the channel (another transport holds it) rejects `start()`. @default none */
  signal?: AbortSignal;
}

const NEWLINE = 0x0a;

/** Who may talk over a channel: one transport at a time, the others wait in arrival order. */
interface Lease {
  holder: StdioChannelTransport | undefined;
  waiting: StdioChannelTransport[];
}
const leases = new WeakMap<StdioChannel, Lease>();

/**
 * The MCP client `Transport` over a supervised process: newline-delimited JSON-RPC on stdin/stdout, one message per
 * line. The supervisor owns the process: `close()` only detaches this transport, and the process's exit closes it.
 *
 * One transport talks over a channel at a time: a second one's `start()` waits until the first is closed. Two MCP
 * clients on one process would both hear every line, and their request ids (each counting from 0) would collide.
 * Sharing one connected client per live process avoids the wait and the repeated `initialize`.
 */
export class StdioChannelTransport implements Transport {
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onmessage?: Transport['onmessage'];
  /**
   * Why the connection ended, when this transport knows better than "connection closed" (a line past `maxLineBytes`,
   * the process's own exit); read by `toUpstreamError`.
   */
  failure: FleetError | undefined;

  private readonly maxLineBytes: number;
  private readonly onOversize: (() => void) | undefined;
  private readonly signal: AbortSignal | undefined;
  private state: 'new' | 'waiting' | 'open' | 'closed' = 'new';
  private wake: (() => void) | undefined;
  private unsubscribe: (() => void)[] = [];
  /** The start of a line whose newline has not come yet. */
  private pending: Buffer[] = [];
  private pendingBytes = 0;

  constructor(
    private readonly channel: StdioChannel,
    options: StdioChannelTransportOptions = {},
  ) {
    this.maxLineBytes = options.maxLineBytes ?? 10 * 1024 * 1024;
    this.signal = options.signal;
    this.onOversize = options.onOversize;
  }

  async start(): Promise<void> {
    if (this.state !== 'new') throw new Error('StdioChannelTransport already started; a transport starts once.');
    if (!this.channel.alive) throw new FleetError('UPSTREAM_UNREACHABLE', { message: 'The stdio server is not running.' });
    this.state = 'waiting';
    const abort = () => this.finish();
    this.signal?.addEventListener('abort', abort, { once: true });
    if (this.signal?.aborted === true) this.finish();
    else await this.takeLease();
    this.signal?.removeEventListener('abort', abort);
    if (this.closed) {
      if (this.signal?.aborted === true) throw this.signal.reason;
      throw new FleetError('UPSTREAM_UNREACHABLE', { message: 'The stdio transport was closed before it started.' });
    }
    if (!this.channel.alive) {
      this.finish();
      throw new FleetError('UPSTREAM_UNREACHABLE', { message: 'The stdio server is not running.' });
    }
    this.state = 'open';
    this.unsubscribe.push(
      this.channel.onData((chunk) => this.receive(chunk)),
      this.channel.onExit((exit) => {
        // A server that ended on its own says how: the requests in flight fail with its exit code and last stderr
        // lines, not a bare "connection closed" (`toUpstreamError` reads `failure`).
        if (exit.reason === 'exited') {
          this.failure ??= new FleetError('UPSTREAM_UNREACHABLE', { message: `The stdio server ended: ${this.channel.exitSummary() ?? 'it exited'}.` });
        }
        this.finish();
      }),
    );
  }

  async send(message: JSONRPCMessage, _options?: TransportSendOptions): Promise<void> {
    if (this.state !== 'open') throw new FleetError('UPSTREAM_UNREACHABLE', { message: 'The stdio transport is not connected.' });
    await this.channel.write(`${JSON.stringify(message)}\n`);
  }

  /** Detaches from the process and fires `onclose`; the process keeps running for its next user. */
  async close(): Promise<void> {
    this.finish();
  }

  /** A getter, not `this.state === 'closed'` inline: TypeScript would keep the state narrowed across the await. */
  private get closed(): boolean {
    return this.state === 'closed';
  }

  private finish(): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.releaseLease();
    for (const off of this.unsubscribe.splice(0)) off();
    this.pending = [];
    this.pendingBytes = 0;
    this.onclose?.();
  }

  private takeLease(): Promise<void> {
    let lease = leases.get(this.channel);
    if (lease === undefined) {
      lease = { holder: undefined, waiting: [] };
      leases.set(this.channel, lease);
    }
    if (lease.holder === undefined) {
      lease.holder = this;
      return Promise.resolve();
    }
    const { waiting } = lease;
    return new Promise((resolve) => {
      this.wake = resolve;
      waiting.push(this);
    });
  }

  /** Gives the channel to the next waiting transport, or leaves the queue if this one was still waiting. */
  private releaseLease(): void {
    const lease = leases.get(this.channel);
    if (lease === undefined) return;
    const queued = lease.waiting.indexOf(this);
    if (queued !== -1) {
      lease.waiting.splice(queued, 1);
      this.resume();
      return;
    }
    if (lease.holder !== this) return;
    const next = lease.waiting.shift();
    lease.holder = next;
    next?.resume();
  }

  private resume(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  private receive(chunk: Buffer): void {
    let start = 0;
    for (let newline = chunk.indexOf(NEWLINE); newline !== -1; newline = chunk.indexOf(NEWLINE, start)) {
      const piece = chunk.subarray(start, newline);
      start = newline + 1;
      if (this.pendingBytes + piece.length > this.maxLineBytes) {
        this.tooLong();
        return;
      }
      // Split on bytes, decode whole lines: a multi-byte character cut between chunks stays intact.
      const line = this.pendingBytes === 0 ? piece : Buffer.concat([...this.pending, piece]);
      this.resetPending();
      this.line(line);
      if (this.state !== 'open') return;
    }
    const rest = chunk.subarray(start);
    if (rest.length === 0) return;
    if (this.pendingBytes + rest.length > this.maxLineBytes) {
      this.tooLong();
      return;
    }
    this.pending.push(rest);
    this.pendingBytes += rest.length;
  }

  private line(bytes: Buffer): void {
    const text = bytes.toString('utf8').replace(/\r$/, '');
    if (text.trim() === '') return;
    let message: JSONRPCMessage;
    try {
      message = parseJSONRPCMessage(JSON.parse(text));
    } catch {
      // No cause attached: JSON.parse and zod quote the input, and the contract never echoes what a server sent.
      this.onerror?.(new FleetError('UPSTREAM_PROTOCOL_ERROR', { message: 'The stdio server wrote a line that is not a JSON-RPC message.' }));
      return;
    }
    try {
      this.onmessage?.(message);
    } catch (error) {
      this.onerror?.(error instanceof Error ? error : new Error('onmessage threw a non-Error value.'));
    }
  }

  /**
   * A line past the bound: the connection ends now, so the SDK fails what is in flight at once (with this failure,
   * through `toUpstreamError`), and the process is handed back to be stopped (the rest of the line is still coming).
   */
  private tooLong(): void {
    this.resetPending();
    this.failure = new FleetError('UPSTREAM_RESPONSE_TOO_LARGE', { message: `The stdio server wrote a line longer than ${this.maxLineBytes} bytes (maxUpstreamBytes).` });
    this.onerror?.(this.failure);
    this.finish();
    this.onOversize?.();
  }

  private resetPending(): void {
    this.pending = [];
    this.pendingBytes = 0;
  }
}

/** A process never outlives its server, nor the configuration it was started with. */
export function stopWithServers(supervisor: Pick<StdioSupervisor, 'stop'>, events: EventSource): void {
  const stop = ({ server }: { server: { id: string } }) => void supervisor.stop(server.id);
  events.on('server.updated', stop);
  events.on('server.deleted', stop);
}

/**
 * How probes and tool calls reach a stdio server: a transport over the supervisor's live process for that server.
 * A refusal of the per-account cap reaches them as `UPSTREAM_UNREACHABLE` (the server could not be reached now);
 * the supervisor's other refusals already carry an upstream code.
 */
export function stdioTransportFor(
  supervisor: Pick<StdioSupervisor, 'acquire' | 'stop'>,
  server: { account: string; id: string },
  maxLineBytes?: number,
): (config: StdioProcessConfig, options: { signal: AbortSignal }) => Promise<StdioChannelTransport> {
  return async (config, { signal }) => {
    const channel = await supervisor.acquire(server.account, server.id, config).catch((error: unknown) => {
      throw isFleetError(error) && error.code === 'STDIO_CAPACITY'
        ? new FleetError('UPSTREAM_UNREACHABLE', { message: error.message, cause: error })
        : error;
    });
    return new StdioChannelTransport(channel, {
      signal,
      ...(maxLineBytes !== undefined && { maxLineBytes }),
      // The process is stopped, not reused mid-line: the next call starts a fresh one.
      onOversize: () => void supervisor.stop(server.id).catch(() => {}),
    });
  };
}
