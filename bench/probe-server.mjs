// The two MCP servers of section 3, in their own process so that their answer time is not spent on the event loop
// or the CPU time slices of the clients that measure them. Started by bench/probe.mjs. Both listen on 127.0.0.1:
//   v1: a 2025-era server, the v1 SDK (`@modelcontextprotocol/sdk`) McpServer over its sessionful
//       StreamableHTTPServerTransport at /mcp, wired as its README shows (as packages/core/src/mcp/fixtures/v1-server.ts).
//   v2: the v2 SDK (`@modelcontextprotocol/server`) createMcpHandler at /mcp through `@modelcontextprotocol/node`,
//       which serves 2026-07-28 (as packages/core/src/mcp/fixtures/v2-server.ts).
// Talks to its parent over IPC:
//   → { type: 'ready', v1, v2 }                  the two /mcp URLs, once both listen
//   ← { type: 'seen' }  → { type: 'seen', v1, v2 } what each server received since the last 'seen' ("POST initialize", …)
//   ← { type: 'exit' }
import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, McpServer as McpServerV2 } from '@modelcontextprotocol/server';
import { McpServer as McpServerV1 } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';

async function readJson(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    return undefined;
  }
}

/** "POST initialize", "POST notifications/initialized", "GET", "DELETE": what a request was, for the sanity check. */
function describe(method, body) {
  const messages = Array.isArray(body) ? body : [body];
  const names = messages.flatMap((m) => (typeof m === 'object' && m !== null && typeof m.method === 'string' ? [m.method] : []));
  return names.length === 0 ? method : `${method} ${names.join(',')}`;
}

/** An HTTP server on 127.0.0.1 and a random port whose close() also ends open sockets (SSE streams) at once. */
async function listen(handler) {
  const sockets = new Set();
  const server = createServer((req, res) => {
    Promise.resolve(handler(req, res)).catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/mcp`,
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

const seen = { v1: [], v2: [] };

// 2025 era: one transport and one McpServer per session, created on `initialize`, removed when the session closes
// (the client's DELETE).
const transports = new Map();
const v1 = await listen(async (req, res) => {
  const body = req.method === 'POST' ? await readJson(req) : undefined;
  seen.v1.push(describe(req.method, body));
  const sessionId = req.headers['mcp-session-id'];
  let transport = typeof sessionId === 'string' ? transports.get(sessionId) : undefined;
  if (transport === undefined) {
    if (sessionId !== undefined || req.method !== 'POST' || !isInitializeRequest(body)) {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'Bad Request: No valid session ID provided' }, id: null }));
      return;
    }
    const created = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => void transports.set(id, created),
    });
    created.onclose = () => {
      if (created.sessionId !== undefined) transports.delete(created.sessionId);
    };
    await new McpServerV1({ name: 'bench-v1', version: '1.0.0' }).connect(created);
    transport = created;
  }
  await transport.handleRequest(req, res, body);
});

// 2026-07-28: stateless, one McpServer per request.
const handler = createMcpHandler(() => new McpServerV2({ name: 'bench-v2', version: '1.0.0' }));
const node = toNodeHandler(handler);
const v2 = await listen(async (req, res) => {
  const body = req.method === 'POST' ? await readJson(req) : undefined;
  seen.v2.push(describe(req.method, body));
  await (req.method === 'POST' ? node(req, res, body) : node(req, res));
});

process.on('message', async (message) => {
  if (message.type === 'seen') {
    process.send({ type: 'seen', v1: seen.v1.splice(0), v2: seen.v2.splice(0), v1Sessions: transports.size });
  } else if (message.type === 'exit') {
    for (const transport of transports.values()) await transport.close().catch(() => {});
    await handler.close();
    await Promise.all([v1.close(), v2.close()]);
    process.exit(0);
  }
});
// If the bench process dies, do not linger.
process.on('disconnect', () => process.exit(0));
process.send({ type: 'ready', v1: v1.url, v2: v2.url });
