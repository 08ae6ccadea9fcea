// The stdio and WebSocket upstreams of section 7f/7g (bench/mcp-transports.mjs): the v1 SDK's `McpServer` with one
// tool `ping` answering `pong`, as section 4's HTTP servers.
//   node bench/transport-upstreams.mjs stdio   the server on the SDK's StdioServerTransport (newline-delimited
//                                               JSON-RPC on stdin/stdout): what the fleet spawns for a stdio server,
//                                               and what the direct SDK Client spawns with its StdioClientTransport.
//   fork(..., ['ws'])                           a WebSocket server (`ws`, subprotocol `mcp`, one JSON-RPC message per
//                                               text frame), one `McpServer` per connection on a transport of a few
//                                               lines (the SDK has no WebSocket server transport); sends
//                                               { type: 'ready', url } and exits on { type: 'exit' }.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js';
import { createServer } from 'node:http';
import { WebSocketServer } from 'ws';
// If the process that forked this one dies (a section that threw, a bench stopped), do not linger.
process.on('disconnect', () => process.exit(0));

const server = () => {
  const mcp = new McpServer({ name: 'bench-transport', version: '1.0.0' });
  mcp.registerTool('ping', { description: 'Answers pong' }, async () => ({ content: [{ type: 'text', text: 'pong' }] }));
  return mcp;
};

/** The SDK's Transport interface over one `ws` connection: a text frame is a JSON-RPC message. */
class WsServerTransport {
  constructor(ws) {
    this.ws = ws;
  }

  async start() {
    this.ws.on('message', (data, isBinary) => {
      if (isBinary) return;
      let message;
      try {
        message = JSONRPCMessageSchema.parse(JSON.parse(String(data)));
      } catch (error) {
        this.onerror?.(error);
        return;
      }
      this.onmessage?.(message);
    });
    this.ws.on('close', () => this.onclose?.());
  }

  async send(message) {
    this.ws.send(JSON.stringify(message));
  }

  async close() {
    this.ws.close();
  }
}

if (process.argv[2] === 'stdio') {
  await server().connect(new StdioServerTransport());
} else if (process.argv[2] === 'ws') {
  const http = createServer((_req, res) => res.writeHead(426).end());
  const wss = new WebSocketServer({ server: http, handleProtocols: (protocols) => (protocols.has('mcp') ? 'mcp' : false) });
  wss.on('connection', (ws) => void server().connect(new WsServerTransport(ws)));
  await new Promise((resolve) => http.listen(0, '127.0.0.1', resolve));
  process.on('message', (message) => {
    if (message.type === 'exit') process.exit(0);
  });
  process.send({ type: 'ready', url: `ws://127.0.0.1:${http.address().port}/mcp` });
} else {
  throw new Error('usage: transport-upstreams.mjs stdio|ws');
}
