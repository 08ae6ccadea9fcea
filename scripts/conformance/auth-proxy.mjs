/**
 * The forwarding proxy of scripts/conformance/server.mjs: the conformance suite's `server` command cannot send an
 * Authorization header, and the fleet's MCP endpoint needs one. Test: test/conformance-auth-proxy.test.ts.
 */
import { createServer, request as httpRequest } from 'node:http';
import { listenOnLoopback } from './suite.mjs';

/**
 * A forwarding proxy on 127.0.0.1 that adds `Authorization: Bearer <key>` to every request and relays it to
 * `origin` (same path, method, headers and body, streamed), and the answer back as it comes (SSE included).
 */
export async function startAuthProxy(origin, key) {
  const upstream = new URL(origin);
  const server = createServer((req, res) => {
    const headers = { ...req.headers, host: upstream.host, authorization: `Bearer ${key}` };
    const outgoing = httpRequest({ hostname: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    outgoing.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    // The suite closing its side (an SSE stream it is done with) closes ours.
    res.on('close', () => outgoing.destroy());
    req.pipe(outgoing);
  });
  return listenOnLoopback(server);
}
