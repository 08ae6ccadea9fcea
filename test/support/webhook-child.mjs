// A process of its own on the built packages, for the webhook crash tests (test/webhooks-crash.test.ts).
// MODE=stage: creates a webhook (to RECEIVER) and COUNT servers with the worker off, prints their ids, then idles
// until it is killed. MODE=work: runs the delivery worker on the same storage until it is killed.
// STORE: redis://… (under PREFIX), postgres://… (in SCHEMA) or sqlite://PATH. LEASE_MS and TIMEOUT_MS: the worker's
// `webhooks.leaseMs` and `timeoutMs` (default: the library's).
import { createFleet } from '../../packages/core/dist/index.js';
import { createPostgresStore } from '../../packages/postgres/dist/index.js';
import { createRedisStore } from '../../packages/redis/dist/index.js';
import { createSqliteStore } from '../../packages/sqlite/dist/index.js';

const { MODE, STORE, RECEIVER, COUNT = '1', PREFIX = 'mcp-fleet:', SCHEMA, LEASE_MS, TIMEOUT_MS } = process.env;
const opened = STORE.startsWith('redis')
  ? await createRedisStore({ url: STORE, keyPrefix: PREFIX })
  : STORE.startsWith('postgres')
    ? await createPostgresStore({ connectionString: STORE, schema: SCHEMA })
    : await createSqliteStore({ path: STORE.slice('sqlite://'.length) });
const timing = { ...(LEASE_MS && { leaseMs: Number(LEASE_MS) }), ...(TIMEOUT_MS && { timeoutMs: Number(TIMEOUT_MS) }) };
const fleet = createFleet({
  store: opened,
  rateLimit: false,
  allowPrivateNetworks: true,
  webhooks: MODE === 'stage' ? { worker: false } : { pollIntervalMs: 25, concurrency: 4, ...timing },
  onError: (error) => console.error(error.code, error.cause),
});
if (MODE === 'stage') {
  const hook = (await fleet.webhooks.create('crash', { url: RECEIVER, events: ['server.created'] }))._unsafeUnwrap();
  const servers = [];
  for (let i = 0; i < Number(COUNT); i++) {
    const server = await fleet.servers.create('crash', { name: `crash-${process.pid}-${i}`, type: 'http', endpoint: 'https://mcp.example.com/mcp' });
    servers.push(server._unsafeUnwrap().id);
  }
  console.log(JSON.stringify({ webhook: hook.id, secret: hook.secret, servers }));
} else {
  console.log(JSON.stringify({ working: process.pid }));
}
setInterval(() => {}, 60_000);
