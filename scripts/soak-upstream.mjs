// Hostile upstream MCP servers for scripts/soak.mjs, in a process of their own (their CPU is not the fleet's, nor the
// measuring client's). The v1 SDK's low-level Server over its sessionful Streamable HTTP transport, one path each:
//   /big/mcp     tools/list pages 20 × ~3.9 MB of tools (each page under the default maxUpstreamBytes, 4 MiB)
//   /flood/mcp   three tools; on {type:'flood', ms} it sends notifications/tools/list_changed on every session's
//                stream as fast as it can for `ms`, then answers {type:'flooded', sent}
//   /small/mcp   three tools
// Started with fork(); answers {type:'ready', origin}; {type:'stats'} → {type:'stats', toolsLists, pagesServed}.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const BIG_PAGES = 20;
const BIG_PER_PAGE = 1000;
const description = 'x'.repeat(3900);
const bigPage = (at) => Array.from({ length: BIG_PER_PAGE }, (_, i) => ({ name: `t${at}_${i}`, description, inputSchema: { type: 'object' } }));
const small = ['a', 'b', 'c'].map((name) => ({ name, description: `tool ${name}`, inputSchema: { type: 'object' } }));

const counts = { toolsLists: { big: 0, flood: 0, small: 0 }, pagesServed: 0 };

function makeServer(kind) {
  const server = new Server({ name: `soak-${kind}`, version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } });
  server.setRequestHandler(ListToolsRequestSchema, async (request) => {
    counts.pagesServed += 1;
    const cursor = request.params?.cursor;
    if (cursor === undefined) counts.toolsLists[kind] += 1;
    if (kind !== 'big') return { tools: small };
    const at = cursor === undefined ? 0 : Number(cursor);
    return { tools: bigPage(at), ...(at + 1 < BIG_PAGES ? { nextCursor: String(at + 1) } : {}) };
  });
  return server;
}

/** Sessions per path, as the v1 SDK's README wires them. */
const sessions = { big: new Map(), flood: new Map(), small: new Map() };
const connected = { big: new Set(), flood: new Set(), small: new Set() };

async function readJson(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return chunks.length === 0 ? undefined : JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

const http = createServer(async (req, res) => {
  try {
    const kind = /^\/(big|flood|small)\/mcp$/.exec(new URL(req.url, 'http://x').pathname)?.[1];
    if (kind === undefined) return void res.writeHead(404).end();
    const body = req.method === 'POST' ? await readJson(req) : undefined;
    const id = req.headers['mcp-session-id'];
    let transport = typeof id === 'string' ? sessions[kind].get(id) : undefined;
    if (transport === undefined) {
      if (id !== undefined || req.method !== 'POST' || !isInitializeRequest(body)) {
        res.writeHead(400, { 'content-type': 'application/json' });
        return void res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'Bad Request: No valid session ID provided' }, id: null }));
      }
      const server = makeServer(kind);
      const created = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), onsessioninitialized: (sid) => void sessions[kind].set(sid, created) });
      created.onclose = () => {
        if (created.sessionId !== undefined) sessions[kind].delete(created.sessionId);
        connected[kind].delete(server);
      };
      await server.connect(created);
      connected[kind].add(server);
      transport = created;
    }
    await transport.handleRequest(req, res, body);
  } catch {
    if (!res.headersSent) res.writeHead(500);
    res.end();
  }
});

async function flood(ms) {
  const until = performance.now() + ms;
  let sent = 0;
  while (performance.now() < until) {
    const servers = [...connected.flood];
    if (servers.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    for (const server of servers) {
      await server.sendToolListChanged().catch(() => {});
      sent += 1;
    }
    // Yield to the event loop now and then, so the stream drains and IPC is answered.
    if (sent % 50 === 0) await new Promise((resolve) => setImmediate(resolve));
  }
  return sent;
}

process.on('message', async (message) => {
  if (message.type === 'flood') process.send({ type: 'flooded', sent: await flood(message.ms) });
  else if (message.type === 'stats') process.send({ type: 'stats', ...counts });
  else if (message.type === 'exit') {
    http.closeAllConnections();
    http.close(() => process.exit(0));
  }
});

http.listen(0, '127.0.0.1', () => process.send({ type: 'ready', origin: `http://127.0.0.1:${http.address().port}` }));
