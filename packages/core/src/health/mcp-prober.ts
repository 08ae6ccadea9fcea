import type { McpEra } from '../mcp/connect.js';
import type { TokenCache } from '../mcp/oauth.js';
import { probeServer, type ProbeResult } from '../mcp/probe.js';
import type { GuardedFetch } from '../net/guarded-fetch.js';
import { stdioTransportFor } from '../stdio/stdio-transport.js';
import type { StdioSupervisor } from '../stdio/supervisor.js';
import type { ServerRecord } from '../registry/views.js';
import type { Prober } from './health-service.js';

export interface McpProberDeps {
  /** Every HTTP request and WebSocket handshake goes through it (the outgoing-connection guard). */
  fetch: GuardedFetch;
  /** Owns the processes of stdio servers. */
  supervisor: StdioSupervisor;
  /** One per fleet, so oauth2 tokens are reused until shortly before they expire. */
  tokens: TokenCache;
  now: () => number;
  /**
   * Probes a stdio server over the one initialised client its live process keeps (the connection pool's), so that
   * probes and calls never initialise the same process again. @default a client of its own per probe
   */
  probeStdio?: (server: ServerRecord) => Promise<ProbeResult>;
}

const ERAS: readonly string[] = ['2024-11-05', '2025', '2026-07-28'] satisfies McpEra[];

/** Probes with a real MCP exchange over the server's transport: the prober `createFleet` uses. */
export function createMcpProber(deps: McpProberDeps): Prober {
  return async (server, rememberedEra) => {
    const probeStdio = deps.probeStdio;
    const result =
      server.config.type === 'stdio' && probeStdio !== undefined
        ? await probeStdio(server)
        : await probeServer(
            server.config,
            {
              fetch: deps.fetch,
              mcpFetch: deps.fetch.direct,
              dispatcher: deps.fetch.dispatcher,
              maxMessageBytes: deps.fetch.maxResponseBytes,
              tokens: deps.tokens,
              now: deps.now,
              stdioTransport: stdioTransportFor(deps.supervisor, server),
            },
            rememberedEra !== undefined && ERAS.includes(rememberedEra) ? { era: rememberedEra as McpEra } : {},
          );
    return result.ok
      ? { ok: true, era: result.era, responseTimeMs: result.responseTimeMs, error: null }
      : { ok: false, era: undefined, responseTimeMs: result.responseTimeMs, error: result.error };
  };
}
