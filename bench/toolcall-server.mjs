// The two MCP servers of the "tool calls" section, each with one tool `ping` that answers "pong", in their own
// process (as bench/probe-server.mjs): v1 is the 2025-era v1 SDK over its sessionful Streamable HTTP transport, v2 the
// v2 SDK's createMcpHandler (2026-07-28). Sends { type: 'ready', v1, v2 } (the /mcp URLs); exits on { type: 'exit' }.
// With the argument `many` (the "MCP endpoint" section, bench/mcp-endpoint.mjs) also 20 v2-SDK servers of 20 tools
// each (tool_00..tool_19) on one port, at /s00/mcp../s19/mcp, sent as `many` (their URLs).
import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, McpServer as McpServerV2 } from '@modelcontextprotocol/server';
import { McpServer as McpServerV1 } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
// If the process that forked this one dies (a section that threw, a bench stopped), do not linger.
process.on('disconnect', () => process.exit(0));

const pong = async () => ({ content: [{ type: 'text', text: 'pong' }] });

async function readJson(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    return undefined;
  }
}

async function listen(handler) {
  const server = createServer((req, res) => {
    Promise.resolve(handler(req, res)).catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${server.address().port}/mcp`;
}

const transports = new Map();
const v1 = await listen(async (req, res) => {
  const body = req.method === 'POST' ? await readJson(req) : undefined;
  const sessionId = req.headers['mcp-session-id'];
  let transport = typeof sessionId === 'string' ? transports.get(sessionId) : undefined;
  if (transport === undefined) {
    if (sessionId !== undefined || req.method !== 'POST' || !isInitializeRequest(body)) {
      res.writeHead(400).end();
      return;
    }
    const created = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), onsessioninitialized: (id) => transports.set(id, created) });
    created.onclose = () => transports.delete(created.sessionId);
    const server = new McpServerV1({ name: 'bench-v1', version: '1.0.0' });
    server.registerTool('ping', { description: 'Answers pong' }, pong);
    await server.connect(created);
    transport = created;
  }
  await transport.handleRequest(req, res, body);
});

const handler = createMcpHandler(() => {
  const server = new McpServerV2({ name: 'bench-v2', version: '1.0.0' });
  server.registerTool('ping', { description: 'Answers pong' }, pong);
  return server;
});
const node = toNodeHandler(handler);
const v2 = await listen(async (req, res) => node(req, res, req.method === 'POST' ? await readJson(req) : undefined));

let many;
if (process.argv.includes('many')) {
  const nodes = Array.from({ length: 20 }, (_, s) =>
    toNodeHandler(
      createMcpHandler(() => {
        const server = new McpServerV2({ name: `bench-many-${s}`, version: '1.0.0' });
        for (let t = 0; t < 20; t++) {
          server.registerTool(`tool_${String(t).padStart(2, '0')}`, { description: `Tool ${t} of server ${s}: answers pong` }, pong);
        }
        return server;
      }),
    ),
  );
  const url = await listen(async (req, res) => {
    const at = /^\/s(\d\d)\/mcp/.exec(req.url ?? '');
    const node = at === null ? undefined : nodes[Number(at[1])];
    if (node === undefined) {
      res.writeHead(404).end();
      return;
    }
    await node(req, res, req.method === 'POST' ? await readJson(req) : undefined);
  });
  const origin = new URL(url).origin;
  many = nodes.map((_, s) => `${origin}/s${String(s).padStart(2, '0')}/mcp`);
}

process.on('message', (message) => {
  if (message.type === 'exit') process.exit(0);
});
process.send({ type: 'ready', v1, v2, many });
