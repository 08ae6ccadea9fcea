import { statSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { serve } from '@hono/node-server';
import type { IncomingMessage } from 'node:http';
import { createFleet, SCOPES } from '@mcp-fleet/core';
import { answerClientError, clientAddressBehindProxies } from '@mcp-fleet/core/node';
import { createFleetApp, createFleetWellKnownApp } from '@mcp-fleet/hono';
import { type Context, Hono } from 'hono';
import { ConfigError, type ServerConfig } from './config.js';
import { encryptionOptions } from './encryption.js';
import { openStore } from './store.js';
import { createLog, otlpWanted, serveMetrics, startOpenTelemetry } from './telemetry.js';

/**
 * The start banner: where the API (and the dashboard, once the fleet has one) answers, and the first key. The
 * dashboard line appears only when the fleet says it serves one (`fleet.dashboard`), so it lights up when that lands.
 */
function banner(origin: string, fleet: { prefix: string }, storeLabel: string, config: ServerConfig, otlp: boolean, firstKey: string | undefined): string {
  const api = `${origin}${fleet.prefix}`;
  const lines = [`mcp-fleet listening on ${api} (store: ${storeLabel})`, '', `  API        ${api}`];
  // On below (`dashboard: true`): sign in there with the key.
  lines.push(`  Dashboard  ${api}/dashboard/`);
  lines.push(`  Liveness   ${origin}/healthz, ${origin}/readyz`);
  if (config.metrics) lines.push(`  Metrics    ${origin}/metrics${config.metricsToken === undefined ? '' : '   (bearer token: MCP_FLEET_METRICS_TOKEN)'}`);
  if (otlp) lines.push('  OTLP       traces and metrics to OTEL_EXPORTER_OTLP_ENDPOINT');
  if (config.oauth !== undefined) {
    // Where agents find the identity provider: the resource's metadata (RFC 9728), at the public URL when one is set.
    const base = config.oauth.resource === undefined ? api : config.oauth.resource.replace(/\/+$/, '');
    const url = new URL(`${base}/mcp`);
    lines.push(`  OAuth      ${url.origin}/.well-known/oauth-protected-resource${url.pathname}`);
    lines.push(`             tokens of ${config.oauth.issuers.map((issuer) => issuer.issuer).join(', ')}`);
  }
  if (!config.rateLimits) lines.push('', '  Rate limits are off (MCP_FLEET_RATE_LIMITS=off): for local development only.');
  lines.push('', `  Try it     curl -H "Authorization: Bearer $KEY" ${api}/servers`, '  More keys  npm run keys -- create <account> --tier pro   (docs/getting-started.md)');
  if (firstKey !== undefined) {
    lines.push('', 'mcp-fleet: created an API key for account "default" (tier pro). It is shown this once:', '', `  ${firstKey}`, '');
  }
  return `${lines.join('\n')}\n`;
}

/** Opens the store, makes the fleet, registers the keys and listens: `npm start` once its configuration holds (main.ts). */
export async function run(config: ServerConfig): Promise<void> {
  // The one logger: the fleet's request lines, warnings and 5xx causes, and this server's own lines after its banner.
  const log = createLog();
  const { logger } = log;
  const keys = encryptionOptions(config);
  const { store, label } = await openStore(config.store);
  const oauthVariables = 'MCP_FLEET_OAUTH_ISSUER, MCP_FLEET_OAUTH_AUDIENCE, MCP_FLEET_OAUTH_ISSUERS or MCP_FLEET_OAUTH_RESOURCE';
  // With a shared store (Redis), rate limits and the monitor's leases are kept there too, so they hold across every
  // process using it.
  const fleet = configured(oauthVariables, () => createFleet({
    store,
    // Secrets at rest (docs/security.md): MCP_FLEET_ENCRYPTION_KEY, or the key an SQLite store generated beside its file.
    ...keys,
    stdio: {
      commands: config.stdioCommands,
      ...(config.stdioUser !== undefined && { user: config.stdioUser }),
      ...(config.stdioUids !== undefined && { uids: config.stdioUids }),
      sharedUser: config.stdioSharedUser,
      // The stdio users' homes (npm's and uv's caches) live with the data, beside the store file, when there is one.
      ...((config.stdioHomes ?? storeFolder(config.store)) !== undefined && { homes: config.stdioHomes ?? storeFolder(config.store) }),
      ...(config.stdioPath !== undefined && { path: config.stdioPath }),
    },
    allowPrivateNetworks: config.allowPrivateNetworks,
    // The web dashboard at /v1/dashboard/ (docs/dashboard.md): sign in there with an API key.
    dashboard: true,
    // Deliveries wait in the store's outbox; on SIGTERM the worker stops and what is pending stays there.
    webhooks: { retry: { baseMs: config.webhookRetryBaseMs } },
    ...(config.healthIntervalMs > 0 && { monitor: { intervalMs: config.healthIntervalMs } }),
    health: config.health,
    ...(!config.rateLimits && { rateLimit: false }),
    ...(config.oauth !== undefined && { oauth: config.oauth }),
    logger,
  }));

  // Before the first request: OTLP traces and metrics when the OpenTelemetry variables ask for them.
  const otlp = otlpWanted(process.env);
  const stopTelemetry = otlp ? await startOpenTelemetry(fleet, log, process.env) : async () => {};

  // A key that does not open the store's secrets stops the start here, with what to set.
  await fleet.ready().catch((error: Error) => {
    throw new ConfigError(error.message);
  });

  for (const key of config.apiKeys) {
    (await fleet.keys.register(key)).match(
      (registered) => {
        // Revocation is for good: a revoked secret still listed here stays refused; the operator should drop it.
        if (registered.revoked_at !== null) {
          logger.warn(
            { key_id: registered.id, account: registered.account },
            `mcp-fleet: MCP_FLEET_API_KEYS lists the key ${registered.id} of account "${registered.account}", revoked at ${registered.revoked_at}: it stays refused; remove it from MCP_FLEET_API_KEYS`,
          );
        }
      },
      (error) => {
        throw new ConfigError(`MCP_FLEET_API_KEYS: the key of account "${key.account}" was refused: ${error.message}`);
      },
    );
  }
  // The first key is `pro` (600 a minute): a newcomer exploring should meet the limit they are testing, not the tier's.
  // It names every scope, `keys:manage` too (no list would hold all but that one): it is the operator's key, which
  // makes the others over `POST /keys`.
  let firstKey: string | undefined;
  if (config.apiKeys.length === 0 && (await fleet.keys.count()).unwrapOr(0) === 0) {
    firstKey = (await fleet.keys.create({ account: 'default', tier: 'pro', scopes: [...SCOPES], name: 'first key' }))._unsafeUnwrap().secret;
  }

  let stopping = false;
  const app = new Hono();
  // After SIGTERM a connection that was busy closes once its answer is sent, instead of idling on for the
  // keep-alive timeout and holding the process open.
  app.use(async (c, next) => {
    await next();
    if (stopping) c.header('Connection', 'close');
  });
  // For load balancers and orchestrators, outside the API and without a key: the process is up; the store answers.
  app.get('/healthz', (c) => c.json({ status: 'ok' }, 200, { 'cache-control': 'no-store' }));
  app.get('/readyz', async (c) =>
    (await fleet.keys.count()).match(
      () => c.json({ status: 'ready' }, 200, { 'cache-control': 'no-store' }),
      () => c.json({ status: 'unavailable', reason: 'the store cannot be reached' }, 503, { 'cache-control': 'no-store' }),
    ),
  );
  // Behind proxies, the client address of the limit on unauthenticated requests is read from X-Forwarded-For,
  // as far as MCP_FLEET_TRUST_PROXY hops allow; never otherwise, as any client can write that header.
  const clientAddress = (c: Context) =>
    clientAddressBehindProxies(config.trustProxy, (c.env as { incoming?: IncomingMessage } | undefined)?.incoming?.socket.remoteAddress, c.req.header('x-forwarded-for'));
  if (config.metrics) await serveMetrics(app, fleet, config.metricsToken);
  // The OAuth Protected Resource Metadata at the root, outside the API prefix (nothing without MCP_FLEET_OAUTH_*).
  app.route('/', createFleetWellKnownApp(fleet));
  app.route('/', createFleetApp(fleet, { clientAddress }));
  // A request must arrive whole within 30 s (headers 20 s), so slow clients cannot hold connections open.
  const serverOptions = { requestTimeout: 30_000, headersTimeout: 20_000 };
  const server = serve({ fetch: app.fetch, hostname: config.host, port: config.port, serverOptions }, (info: AddressInfo) => {
    const host = info.family === 'IPv6' ? `[${info.address}]` : info.address;
    // One write, the key last: whatever scrolled by before, the banner ends the output.
    console.log(banner(`http://${host}:${info.port}`, fleet, label, config, otlp, firstKey));
  });
  // What Node refuses before any handler runs (an unknown method, a bad Content-Length, a request too slow) is still
  // answered in the API's envelope, where the socket can take it.
  server.on('clientError', answerClientError);
  // A port in use or a HOST that does not resolve is the operator's to fix: a clear line, not a stack trace.
  server.once('error', (error: Error) => {
    console.error(`mcp-fleet: cannot listen on HOST ${config.host}, PORT ${config.port}: ${error.message}`);
    process.exit(2);
  });

  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, `mcp-fleet: ${signal} received, finishing in-flight requests`);
    // In-flight requests finish; idle keep-alive connections close now instead of holding the process open.
    server.close(async () => {
      await fleet.close();
      await store.close();
      // What is still batched goes out before the exit.
      await stopTelemetry().catch((error: Error) => logger.warn({ err: error }, 'mcp-fleet: the last telemetry could not be exported'));
      logger.info({}, 'mcp-fleet: stopped');
      process.exit(0);
    });
    if ('closeIdleConnections' in server) server.closeIdleConnections();
    setTimeout(() => {
      logger.error({}, 'mcp-fleet: requests still running after 10 s; exiting');
      process.exit(1);
    }, 10_000).unref();
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

/** The fleet's refusal of the `oauth` option, as the variables it came from: the one thing here read from JSON the fleet judges. */
function configured<T>(variables: string, make: () => T): T {
  try {
    return make();
  } catch (error) {
    if (error instanceof TypeError && error.message.includes('oauth.')) throw new ConfigError(`${variables}: ${error.message.replace(/^mcp-fleet: /, '')}`);
    throw error;
  }
}

/**
 * The folder of stdio homes with the data, beside an SQLite store's file (`<folder>/stdio-homes`), when stdio users
 * can pass every folder above it; else none (the library's default under the temporary folder). A store folder
 * of mode 0700 (the embedded store's) keeps its files private, and so cannot hold the homes.
 */
function storeFolder(store: ServerConfig['store']): string | undefined {
  if (store.kind !== 'sqlite') return undefined;
  const folder = dirname(resolve(store.path));
  for (let above = folder; ; above = dirname(above)) {
    try {
      if ((statSync(above).mode & 0o001) === 0) return undefined;
    } catch {
      return undefined;
    }
    if (dirname(above) === above) break;
  }
  return join(folder, 'stdio-homes');
}
