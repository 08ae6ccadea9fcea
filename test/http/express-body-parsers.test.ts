/**
 * An Express app that parses bodies before mounting the fleet, the way users do: `app.use(express.json())` first,
 * then `fleetMiddleware(fleet)`. Whatever parser read the stream, the fleet answers as it does on the raw bytes
 * (docs/configuration.md, "Behind a body parser"), over a real port.
 */
import type { AddressInfo } from 'node:net';
import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import { createFleet, type Fleet } from '@mcp-fleet/core';
import { fleetMiddleware } from '@mcp-fleet/express';
import express, { type RequestHandler } from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkedFleet } from '../support/answer-check.js';
import { expectError, expectInvalid, expectSuccess, httpServer, send } from '../support/http-client.js';

interface App {
  origin: string;
  url: string;
  key: string;
  fleet: Fleet;
  server: Server;
}

async function start(parser: RequestHandler | undefined, fleet: Fleet = createFleet({ rateLimit: false })): Promise<App> {
  const app = express();
  if (parser !== undefined) app.use(parser);
  app.use('/api', fleetMiddleware(checkedFleet(fleet)));
  const server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const key = (await fleet.keys.create({ account: 'parsed', tier: 'pro' }))._unsafeUnwrap().secret;
  return { origin, url: `${origin}/api/v1`, key, fleet, server };
}

async function stop(app: App | undefined): Promise<void> {
  if (app === undefined) return;
  app.server.closeAllConnections();
  await new Promise<void>((resolve) => app.server.close(() => resolve()));
  await app.fleet.close();
}

/** One app per describe block, behind `parser`. */
function behind(parser: RequestHandler): { readonly app: App } {
  let app: App | undefined;
  beforeAll(async () => {
    app = await start(parser);
  });
  afterAll(() => stop(app));
  return {
    get app() {
      return app as App;
    },
  };
}

const json = { 'content-type': 'application/json' };
const post = (app: App, body: unknown, raw = false, headers: Record<string, string> = {}) =>
  send(app.url, 'POST', '/servers', { body, raw, headers }, app.key);

describe('fleetMiddleware after express.json()', () => {
  const suite = behind(express.json({ limit: '1mb' }));

  it('POST /servers answers 201 (the parsed body is re-serialised, nothing hangs)', async () => {
    const data = expectSuccess(await post(suite.app, httpServer({ name: 'parsed-json' })), 201);
    expect(data).toMatchObject({ name: 'parsed-json', type: 'http' });
    const got = await send(suite.app.url, 'GET', `/servers/${data.id}`, {}, suite.app.key);
    expect(expectSuccess(got, 200).name).toBe('parsed-json');
  });

  it('a body without a name answers 400 in the envelope', async () => {
    expectInvalid(await post(suite.app, { type: 'http', endpoint: 'https://mcp.example.com/mcp' }), 'name');
  });

  it('PUT with a parsed body updates; a request without a body (GET, DELETE) still passes', async () => {
    const created = expectSuccess(await post(suite.app, httpServer()), 201);
    const put = await send(suite.app.url, 'PUT', `/servers/${created.id}`, { body: { timeout: 5000 } }, suite.app.key);
    expect(expectSuccess(put, 200).timeout).toBe(5000);
    expectSuccess(await send(suite.app.url, 'DELETE', `/servers/${created.id}`, {}, suite.app.key), 200);
  });

  it('the body limit applies to the re-serialised bytes: 413 past 64 KiB, though the parser allowed 1 MB', async () => {
    const res = await post(suite.app, httpServer({ description: 'x'.repeat(70_000) }));
    expectError(res, 413, 'PAYLOAD_TOO_LARGE', { limit_bytes: 65_536 });
  });

  it("the parser's own refusals stay the host app's (malformed JSON never reaches the fleet)", async () => {
    const res = await post(suite.app, '{"name":', true, json);
    expect(res.status).toBe(400);
    expect(res.headers.get('x-request-id')).toBeNull();
  });
});

describe("fleetMiddleware after express.json({ type: '*/*' })", () => {
  const suite = behind(express.json({ type: '*/*' }));

  it('keeps the original Content-Type: JSON sent as text/plain is still refused 415', async () => {
    const res = await post(suite.app, JSON.stringify(httpServer()), true, { 'content-type': 'text/plain' });
    expectError(res, 415, 'UNSUPPORTED_MEDIA_TYPE', { content_type: 'text/plain' });
  });
});

describe('fleetMiddleware after express.urlencoded()', () => {
  const suite = behind(express.urlencoded({ extended: false }));

  it('a JSON request is left to the fleet (urlencoded ignores it): 201, and 400 for a missing name', async () => {
    expectSuccess(await post(suite.app, httpServer()), 201);
    expectInvalid(await post(suite.app, { type: 'http', endpoint: 'https://mcp.example.com/mcp' }), 'name');
  });

  it('a form post is parsed by the host, and still refused 415: a form is not JSON', async () => {
    const form = 'name=form&type=http&endpoint=https%3A%2F%2Fmcp.example.com%2Fmcp';
    const res = await post(suite.app, form, true, { 'content-type': 'application/x-www-form-urlencoded' });
    expectError(res, 415, 'UNSUPPORTED_MEDIA_TYPE', { content_type: 'application/x-www-form-urlencoded' });
  });
});

describe("fleetMiddleware after express.raw({ type: '*/*' })", () => {
  const suite = behind(express.raw({ type: '*/*' }));

  it('passes the exact bytes: 201, then 400 for malformed JSON and for bytes that are not UTF-8', async () => {
    const body = `  {"name": "raw-\u00e9t\u00e9", "type": "http", "endpoint": "https://mcp.example.com/mcp"}\n`;
    expect(expectSuccess(await post(suite.app, body, true, json), 201).name).toBe('raw-\u00e9t\u00e9');
    expectError(await post(suite.app, '{"name":', true, json), 400, 'INVALID_REQUEST', { field: 'body', issue: 'is not valid JSON' });
    // Latin-1 é: a re-encoding would have turned it into valid UTF-8.
    const latin1 = Uint8Array.from([...new TextEncoder().encode('{"name":"'), 0xe9, ...new TextEncoder().encode('"}')]);
    expectError(await post(suite.app, latin1, true, json), 400, 'INVALID_REQUEST', { field: 'body', issue: 'is not valid UTF-8' });
  });

  it('the media-type rule applies to the bytes as sent', async () => {
    const res = await post(suite.app, JSON.stringify(httpServer()), true, { 'content-type': 'text/plain' });
    expectError(res, 415, 'UNSUPPORTED_MEDIA_TYPE');
  });
});

describe('fleetMiddleware after express.text()', () => {
  describe('with its default type (text/plain)', () => {
    const suite = behind(express.text());

    it('a JSON request is left to the fleet: 201', async () => {
      expectSuccess(await post(suite.app, httpServer()), 201);
    });

    it('a text/plain body is parsed by the host, and still refused 415', async () => {
      const res = await post(suite.app, JSON.stringify(httpServer()), true, { 'content-type': 'text/plain' });
      expectError(res, 415, 'UNSUPPORTED_MEDIA_TYPE', { content_type: 'text/plain' });
    });
  });

  describe("with type '*/*'", () => {
    const suite = behind(express.text({ type: '*/*' }));

    it('passes the exact string: 201, and 400 for malformed JSON', async () => {
      const body = JSON.stringify(httpServer({ name: 'text-\u00fcber' }));
      expect(expectSuccess(await post(suite.app, body, true, json), 201).name).toBe('text-\u00fcber');
      expectError(await post(suite.app, '{"name":', true, json), 400, 'INVALID_REQUEST', { field: 'body', issue: 'is not valid JSON' });
    });
  });
});

describe('a client that goes away', () => {
  it("aborts the Web Request's signal while the fleet still works on it", async () => {
    let seen: AbortSignal | undefined;
    // A custom authenticate sees the Web Request, and holds the request until the client is gone.
    const fleet = createFleet({
      rateLimit: false,
      authenticate: (request) => {
        seen = request.signal;
        return new Promise((resolve) => request.signal.addEventListener('abort', () => resolve(null)));
      },
    });
    const app = await start(express.json(), fleet);
    try {
      const { port } = app.server.address() as AddressInfo;
      const socket = connect(port, '127.0.0.1');
      socket.on('error', () => {});
      socket.write('GET /api/v1/servers HTTP/1.1\r\nHost: x\r\n\r\n');
      const deadline = Date.now() + 5000;
      while (seen === undefined && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(seen?.aborted).toBe(false);
      socket.destroy();
      while (seen?.aborted !== true && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(seen?.aborted).toBe(true);
    } finally {
      await stop(app);
    }
  });
});

describe('the MCP endpoint after express.json()', () => {
  const suite = behind(express.json({ limit: '1mb' }));

  it('an SDK client initializes, lists and pings over /mcp although the parser read every body first', async () => {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
    const client = new Client({ name: 'behind-parser', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${suite.app.url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${suite.app.key}` } },
    });
    await client.connect(transport);
    await client.ping();
    expect((await client.listTools()).tools).toEqual([]);
    await transport.terminateSession();
    await client.close();
  });
});
