// The load generator, in its own process so that it does not share the server's event loop or CPU time slices.
// Keeps `connections` keep-alive connections of an undici Pool busy with GET requests for a fixed duration, or with
// POST /v1/servers creates (`method: 'POST'`), each with a name never sent before.
//   ← { type: 'run', origin, path, headers, connections, durationMs, method? }
//   → { type: 'done', requests, ok, non2xx, errors, elapsedMs, p50Ms, p99Ms }
import { Pool } from 'undici';

const pools = new Map();
function poolFor(origin, connections) {
  const key = `${origin} ${connections}`;
  let pool = pools.get(key);
  if (pool === undefined) {
    pool = new Pool(origin, { connections, pipelining: 1, keepAliveTimeout: 60_000 });
    pools.set(key, pool);
  }
  return pool;
}

function percentile(sorted, p) {
  return sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];
}

let created = 0;
const createBody = () => JSON.stringify({ name: `load-${process.pid}-${created++}`, type: 'http', endpoint: 'https://mcp.example.com/mcp' });

async function run({ origin, path, headers, connections, durationMs, method = 'GET' }) {
  const pool = poolFor(origin, connections);
  let ok = 0;
  let non2xx = 0;
  let errors = 0;
  const latencies = [];
  const start = performance.now();
  const deadline = start + durationMs;
  const worker = async () => {
    while (performance.now() < deadline) {
      const sent = performance.now();
      try {
        const { statusCode, body } =
          method === 'POST'
            ? await pool.request({ path, method, headers: { ...headers, 'content-type': 'application/json' }, body: createBody() })
            : await pool.request({ path, method, headers });
        for await (const _chunk of body); // read the whole body, as a client would
        if (statusCode >= 200 && statusCode < 300) ok++;
        else non2xx++;
      } catch {
        errors++;
      }
      latencies.push(performance.now() - sent);
    }
  };
  await Promise.all(Array.from({ length: connections }, worker));
  const elapsedMs = performance.now() - start;
  latencies.sort((a, b) => a - b);
  return { requests: ok + non2xx, ok, non2xx, errors, elapsedMs, p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99) };
}

process.on('message', async (message) => {
  if (message.type === 'run') process.send({ type: 'done', ...(await run(message)) });
  else if (message.type === 'exit') {
    await Promise.all([...pools.values()].map((pool) => pool.close()));
    process.exit(0);
  }
});
process.send({ type: 'ready' });
