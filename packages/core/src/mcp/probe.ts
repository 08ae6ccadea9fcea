import type { ServerConfig } from '../registry/schema.js';
import { closeClient, connectClient, type ConnectedClient, type McpClientDeps, type McpEra } from './connect.js';
import type { UpstreamFailure } from '../errors/fleet-error.js';
import { timeoutError, toUpstreamError } from './errors.js';

/** The outcome of one probe. `responseTimeMs` is whole milliseconds from the start to the answer or the failure. */
export type ProbeResult =
  | { ok: true; era: McpEra; responseTimeMs: number }
  | { ok: false; error: UpstreamFailure; responseTimeMs: number };

export interface ProbeOptions {
  /** The era the server answered at its last probe; it is tried first. @default undefined: 2026-07-28 first, then 2025 */
  era?: McpEra;
}

/**
 * Probes a server now with a real MCP exchange over its transport and authentication, bounded by its `timeout`:
 * 2026-07-28 `server/discover` (stateless: one request, no session), or the 2025 `initialize` →
 * `notifications/initialized` → `ping`. Never throws: every failure is a result with a code of docs/http-api.md
 * "Health" and a message that quotes nothing the server sent. Remember `era` of a success for the next probe.
 */
export async function probeServer(config: ServerConfig, deps: McpClientDeps = {}, options: ProbeOptions = {}): Promise<ProbeResult> {
  const timeoutMs = config.timeout;
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  const { signal } = controller;

  let connected;
  try {
    connected = await connectClient(config, deps, { signal, timeoutMs, ...(options.era === undefined ? {} : { era: options.era }) });
  } catch (error) {
    clearTimeout(timer);
    return { ok: false, error: toUpstreamError(error, timeoutMs).toJSON(), responseTimeMs: elapsed() };
  }

  const { client, transport, era } = connected;
  try {
    // 2026-07-28 has no ping: the answered `server/discover` was the whole exchange.
    if (era !== '2026-07-28') await client.ping({ timeout: Math.max(1, Math.round(timeoutMs - (performance.now() - started))), signal });
    return { ok: true, era, responseTimeMs: elapsed() };
  } catch (error) {
    const failure = signal.aborted ? timeoutError(timeoutMs) : toUpstreamError(error, timeoutMs, transport);
    return { ok: false, error: failure.toJSON(), responseTimeMs: elapsed() };
  } finally {
    // Deleting a 2025 session may use what is left of the timeout, never more.
    await closeClient(client, transport, Math.max(0, Math.min(1000, Math.round(timeoutMs - (performance.now() - started)))));
    clearTimeout(timer);
  }
}

/**
 * Probes over a connection that is already open (a stdio server's one client, kept by the connection pool): `ping` in
 * the 2025 era (and legacy HTTP+SSE), `server/discover` in 2026-07-28, which has no ping. Never throws.
 */
export async function probeConnected(connected: Pick<ConnectedClient, 'client' | 'era'> & { transport?: unknown }, timeoutMs: number): Promise<ProbeResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  try {
    if (connected.era !== '2026-07-28') await connected.client.ping({ timeout: timeoutMs });
    else await connected.client.discover({ timeout: timeoutMs });
    return { ok: true, era: connected.era, responseTimeMs: elapsed() };
  } catch (error) {
    return { ok: false, error: toUpstreamError(error, timeoutMs, connected.transport).toJSON(), responseTimeMs: elapsed() };
  }
}
