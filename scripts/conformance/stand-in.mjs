/**
 * The 2026-07-28 stand-in of `npm run conformance:server -- --direct`. server-everything speaks the 2025 revisions
 * only, so the scenario runs of the 2026-07-28 era are checked against this instead: a server on the official v2 SDK
 * (`@modelcontextprotocol/server`'s `createMcpHandler`, the SDK the endpoint is built on), on 127.0.0.1, with a few of
 * server-everything's tools, prompts and resources as `/v1/servers/{id}/mcp` would show them (unprefixed). It says
 * what the SDK itself does with those scenarios, not what the fleet does.
 */
import { createServer } from 'node:http';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { listenOnLoopback } from './suite.mjs';

const text = (value) => ({ content: [{ type: 'text', text: value }] });

export async function startStandIn() {
  const handler = createMcpHandler(() => {
    const server = new McpServer({ name: 'mcp-fleet-conformance-stand-in', version: '1.0.0' });
    server.registerTool('echo', { description: 'Echoes a fixed message' }, async () => text('Echo: hello'));
    server.registerTool('get-tiny-image', { description: 'Returns a text item (the stand-in has no image)' }, async () => text('tiny image'));
    server.registerPrompt('simple-prompt', { description: 'A prompt without arguments' }, async () => ({
      messages: [{ role: 'user', content: { type: 'text', text: 'This is a simple prompt without arguments.' } }],
    }));
    server.registerResource('architecture.md', 'demo://resource/static/document/architecture.md', { description: 'A static document', mimeType: 'text/markdown' }, async (uri) => ({
      contents: [{ uri: uri.href, mimeType: 'text/markdown', text: '# Architecture' }],
    }));
    return server;
  });
  const node = toNodeHandler(handler);
  const server = createServer(async (req, res) => {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    let body;
    try {
      body = chunks.length === 0 ? undefined : JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      body = undefined;
    }
    Promise.resolve(node(req, res, body)).catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  return listenOnLoopback(server);
}
