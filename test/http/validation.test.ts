import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { ADAPTERS } from '../support/adapters.js';
import {
  createServer,
  expectInvalid,
  expectSuccess,
  freshClient,
  httpServer,
  serveForSuite,
  stdioServer,
  total,
  wsServer,
} from '../support/http-client.js';

type Body = Record<string, unknown>;

describe.each(ADAPTERS)('server validation ($name)', (adapter) => {
  const suite = serveForSuite(adapter, { stdio: { commands: ['node'] } });

  /** Posts `body`, expects 400 on `field`, and checks that nothing was created. */
  async function refused(body: unknown, field: string) {
    const client = await freshClient(suite.served);
    await createServer(client); // one server already there: the total must stay 1
    const res = await client.post('/servers', body);
    const details = expectInvalid(res, field);
    expect(await total(client)).toBe(1);
    return details;
  }

  async function accepted(body: Body) {
    const client = await freshClient(suite.served);
    const created = await createServer(client, body);
    return expectSuccess(await client.get(`/servers/${created.id}`), 200);
  }

  describe('required fields and types', () => {
    it.each([
      ['name', { type: 'http', endpoint: 'https://a.example.com' }],
      ['type', { name: 'n', endpoint: 'https://a.example.com' }],
      ['endpoint', { name: 'n', type: 'http' }],
      ['endpoint', { name: 'n', type: 'websocket' }],
    ])('a missing %s is 400', async (field, body) => {
      await refused(body, field);
    });

    it('an unknown type is 400 on type', async () => {
      await refused({ name: 'n', type: 'grpc', endpoint: 'https://a.example.com' }, 'type');
    });

    it.each([
      ['name', { name: 5 }],
      ['endpoint', { endpoint: 5 }],
      ['timeout', { timeout: '1000' }],
      ['retry', { retry: true }],
      ['retry.enabled', { retry: { enabled: 'yes' } }],
      ['authentication', { authentication: 'bearer abc' }],
    ])('a wrongly typed %s is 400', async (field, patch) => {
      await refused(httpServer(patch), field);
    });
  });

  describe('endpoint per type', () => {
    it.each(['http://mcp.example.com/mcp', 'https://mcp.example.com/mcp', 'https://127.0.0.1:8443/'])('http accepts %s', async (endpoint) => {
      expect((await accepted(httpServer({ endpoint }))).endpoint).toBe(endpoint);
    });

    it.each(['ws://mcp.example.com/ws', 'wss://mcp.example.com/ws'])('websocket accepts %s', async (endpoint) => {
      expect((await accepted(wsServer({ endpoint }))).endpoint).toBe(endpoint);
    });

    it.each(['ws://mcp.example.com', 'wss://mcp.example.com', 'ftp://mcp.example.com', 'file:///etc/passwd'])(
      'http refuses %s',
      async (endpoint) => {
        await refused(httpServer({ endpoint }), 'endpoint');
      },
    );

    it.each(['http://mcp.example.com', 'https://mcp.example.com', 'ftp://mcp.example.com'])('websocket refuses %s', async (endpoint) => {
      await refused(wsServer({ endpoint }), 'endpoint');
    });

    it.each(['not a url', '', 'mcp.example.com', '//mcp.example.com/x', 'https://'])('an invalid URL (%j) is 400 on endpoint', async (endpoint) => {
      await refused(httpServer({ endpoint }), 'endpoint');
    });

    it.each(['https://user:pass@mcp.example.com/', 'https://user@mcp.example.com/', 'wss://:pw@mcp.example.com/'])(
      'a URL with credentials (%s) is 400 on endpoint',
      async (endpoint) => {
        const body = endpoint.startsWith('wss') ? wsServer({ endpoint }) : httpServer({ endpoint });
        await refused(body, 'endpoint');
      },
    );
  });

  describe('fields per type', () => {
    it.each([
      ['heartbeat', httpServer({ heartbeat: { enabled: true, interval: 5000 } })],
      ['command', httpServer({ command: 'node' })],
      ['args', httpServer({ args: [] })],
      ['env', wsServer({ env: {} })],
      ['working_directory', wsServer({ working_directory: '/tmp' })],
      ['authentication', stdioServer({ authentication: { type: 'bearer', token: 't' } })],
      ['heartbeat', stdioServer({ heartbeat: { enabled: false } })],
    ])('%s does not belong to this type: 400', async (field, body) => {
      await refused(body, field);
    });

    it.each(['foo', 'endpoint_url', 'Name'])('an unknown field (%s) is 400', async (field) => {
      await refused(httpServer({ [field]: 'x' }), field);
    });

    it.each([
      ['id', 'srv_000000000000000000000000'],
      ['status', 'active'],
      ['health', 'unknown'],
      ['created_at', '2026-01-01T00:00:00.000Z'],
      ['updated_at', '2026-01-01T00:00:00.000Z'],
    ])('the read-only field %s is 400', async (field, value) => {
      await refused(httpServer({ [field]: value }), field);
    });

    it('unknown fields nested in objects are 400', async () => {
      await refused(httpServer({ retry: { enabled: true, jitter: true } }), 'retry.jitter');
      await refused(httpServer({ authentication: { type: 'bearer', token: 't', extra: 1 } }), 'authentication.extra');
    });
  });

  describe('bounds', () => {
    it('name: 1 to 100 characters', async () => {
      expect((await accepted(httpServer({ name: 'n' }))).name).toBe('n');
      expect((await accepted(httpServer({ name: 'n'.repeat(100) }))).name).toBe('n'.repeat(100));
      await refused(httpServer({ name: '' }), 'name');
      await refused(httpServer({ name: 'n'.repeat(101) }), 'name');
    });

    it('no field holds a lone surrogate (PostgreSQL refused the name in its json and answered 503)', async () => {
      expect((await refused(httpServer({ name: 'n\ud800' }), 'name')).issue).toMatch(/lone surrogate/);
      await refused(stdioServer({ args: ['ok', '\udc00'] }), 'args[1]');
      await refused(httpServer({ authentication: { type: 'bearer', token: 't\udbff' } }), 'authentication.token');
      // A pair is one character, kept as sent.
      expect((await accepted(httpServer({ name: 'n \ud83d\udef0' }))).name).toBe('n \u{1F6F0}');
    });

    it('timeout: integer 1 to 300000, default 30000', async () => {
      expect((await accepted(httpServer())).timeout).toBe(30000);
      expect((await accepted(httpServer({ timeout: 1 }))).timeout).toBe(1);
      expect((await accepted(httpServer({ timeout: 300000 }))).timeout).toBe(300000);
      await refused(httpServer({ timeout: 0 }), 'timeout');
      await refused(httpServer({ timeout: -5 }), 'timeout');
      await refused(httpServer({ timeout: 300001 }), 'timeout');
      await refused(httpServer({ timeout: 1.5 }), 'timeout');
    });

    it('retry.max_attempts: integer 1 to 10, default 3; backoff only exponential', async () => {
      expect((await accepted(httpServer({ retry: { enabled: true } }))).retry).toEqual({ enabled: true, max_attempts: 3, backoff: 'exponential' });
      expect((await accepted(httpServer({ retry: { enabled: true, max_attempts: 1 } }))).retry.max_attempts).toBe(1);
      expect((await accepted(httpServer({ retry: { enabled: true, max_attempts: 10 } }))).retry.max_attempts).toBe(10);
      await refused(httpServer({ retry: { enabled: true, max_attempts: 0 } }), 'retry.max_attempts');
      await refused(httpServer({ retry: { enabled: true, max_attempts: 11 } }), 'retry.max_attempts');
      await refused(httpServer({ retry: { enabled: true, max_attempts: 2.5 } }), 'retry.max_attempts');
      await refused(httpServer({ retry: { enabled: true, backoff: 'linear' } }), 'retry.backoff');
      await refused(httpServer({ retry: { max_attempts: 2 } }), 'retry.enabled');
    });

    it('heartbeat.interval: integer 1000 to 3600000', async () => {
      expect((await accepted(wsServer({ heartbeat: { enabled: true, interval: 1000 } }))).heartbeat.interval).toBe(1000);
      expect((await accepted(wsServer({ heartbeat: { enabled: true, interval: 3600000 } }))).heartbeat.interval).toBe(3600000);
      await refused(wsServer({ heartbeat: { enabled: true, interval: 999 } }), 'heartbeat.interval');
      await refused(wsServer({ heartbeat: { enabled: true, interval: 3600001 } }), 'heartbeat.interval');
      await refused(wsServer({ heartbeat: { enabled: true, interval: 1500.5 } }), 'heartbeat.interval');
    });
  });

  describe('authentication', () => {
    it('bearer needs token', async () => {
      await refused(httpServer({ authentication: { type: 'bearer' } }), 'authentication.token');
      await refused(httpServer({ authentication: { type: 'bearer', token: '' } }), 'authentication.token');
    });

    it('oauth2 needs client_id and client_secret', async () => {
      await refused(httpServer({ authentication: { type: 'oauth2', client_secret: 's' } }), 'authentication.client_id');
      await refused(httpServer({ authentication: { type: 'oauth2', client_id: 'c' } }), 'authentication.client_secret');
      await refused(wsServer({ authentication: { type: 'oauth2', client_id: 'c', client_secret: 's', token_url: 'nope' } }), 'authentication.token_url');
    });

    it('an unknown authentication type is 400', async () => {
      await refused(httpServer({ authentication: { type: 'basic', token: 't' } }), 'authentication.type');
    });
  });

  describe('stdio', () => {
    it('command must be on the allowlist', async () => {
      await refused(stdioServer({ command: 'python' }), 'command');
      await refused(stdioServer({ command: undefined }), 'command');
    });

    it('working_directory must be absolute; args strings', async () => {
      await refused(stdioServer({ working_directory: 'relative/dir' }), 'working_directory');
      await refused(stdioServer({ args: [1] }), 'args[0]');
    });

    it.each(['LD_PRELOAD', 'LD_LIBRARY_PATH', 'DYLD_INSERT_LIBRARIES', 'DYLD_x', 'NODE_OPTIONS', 'NODE_PATH', 'PYTHONPATH', 'BASH_ENV', 'OPENSSL_CONF', 'HTTPS_PROXY', 'http_proxy'])(
      'the env name %s is refused with 400',
      async (name) => {
        await refused(stdioServer({ env: { SAFE: '1', [name]: 'x' } }), `env.${name}`);
      },
    );

    it('ordinary env names are accepted', async () => {
      const data = await accepted(stdioServer({ env: { API_KEY: 'x', PATHS: 'y', NODE_ENV: 'production', PROXY_MODE: 'off' } }));
      expect(data.env_keys).toEqual(['API_KEY', 'NODE_ENV', 'PATHS', 'PROXY_MODE']);
    });

    it('an env value must be a string', async () => {
      await refused(stdioServer({ env: { A: 1 } }), 'env.A');
    });
  });

  describe('the body as bytes', () => {
    /**
     * POSTs `pieces` over a raw connection with a `Content-Length`, each piece its own write after the one before
     * has had time to arrive: the server's parser hands the body over in several chunks.
     */
    async function postInPieces(key: string, pieces: Buffer[]): Promise<{ status: number; body: { success: boolean; data?: { name: string }; error?: { details: unknown } } }> {
      const url = new URL(`${suite.served.url}/servers`);
      const length = pieces.reduce((sum, piece) => sum + piece.length, 0);
      const socket = connect(Number(url.port), url.hostname);
      await new Promise((resolve) => socket.once('connect', resolve));
      let answer = '';
      socket.on('data', (chunk: Buffer) => (answer += chunk.toString('utf8')));
      const ended = new Promise((resolve) => socket.once('close', resolve));
      socket.write(`POST ${url.pathname} HTTP/1.1\r\nhost: ${url.host}\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\ncontent-length: ${length}\r\nconnection: close\r\n\r\n`);
      for (const piece of pieces) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        socket.write(piece);
      }
      await ended;
      const [head = '', text = ''] = answer.split('\r\n\r\n');
      return { status: Number(head.split(' ')[1]), body: JSON.parse(text) };
    }

    /** One keep-alive connection: `ask` writes a request and reads its answer's head and `Content-Length` body. */
    async function keptAlive() {
      const url = new URL(suite.served.url);
      const socket = connect(Number(url.port), url.hostname);
      await new Promise((resolve) => socket.once('connect', resolve));
      let received = Buffer.alloc(0);
      let waiter: (() => void) | undefined;
      socket.on('data', (chunk: Buffer) => {
        received = Buffer.concat([received, chunk]);
        waiter?.();
      });
      const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      const ask = async (request: string): Promise<{ status: number; head: string }> => {
        socket.write(request);
        for (;;) {
          const end = received.indexOf('\r\n\r\n');
          const head = end === -1 ? '' : received.subarray(0, end).toString('latin1').toLowerCase();
          const length = Number(/\r\ncontent-length: (\d+)/.exec(head)?.[1] ?? Number.NaN);
          if (end !== -1 && received.length >= end + 4 + length) {
            received = received.subarray(end + 4 + length);
            return { status: Number(head.split(' ')[1]), head };
          }
          await new Promise<void>((resolve) => (waiter = resolve));
        }
      };
      return { url, socket, ask, closed };
    }

    it('a create read whole keeps its connection; an answer given before the body arrived (a wrong key) closes it', async () => {
      const client = await freshClient(suite.served);
      const { url, socket, ask, closed } = await keptAlive();
      const body = JSON.stringify(httpServer({ name: 'kept-alive' }));
      const post = (key: string, length: number) =>
        `POST ${url.pathname}/servers HTTP/1.1\r\nhost: ${url.host}\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\ncontent-length: ${length}\r\n\r\n`;
      const created = await ask(post(client.key as string, Buffer.byteLength(body)) + body);
      expect(created.status).toBe(201);
      expect(created.head).not.toContain('\r\nconnection: close');
      const listed = await ask(`GET ${url.pathname}/servers HTTP/1.1\r\nhost: ${url.host}\r\nauthorization: Bearer ${client.key}\r\n\r\n`);
      expect(listed.status).toBe(200);
      // A body declared and not yet sent: the 401 comes first, and under Hono (`@hono/node-server` gives up draining
      // a body the core began to read) the connection must not be used again.
      const refused = await ask(post('mcp_not-a-key', 1000) + body.slice(0, 10));
      expect(refused.status).toBe(401);
      if (adapter.name === 'hono') expect(refused.head).toContain('\r\nconnection: close');
      socket.end();
      await closed;
      expect(await total(client)).toBe(1);
    });

    it('a body that arrives in pieces, a character split between two, is read whole', async () => {
      const client = await freshClient(suite.served);
      const bytes = Buffer.from(JSON.stringify(httpServer({ name: 'café-ünïcode' })), 'utf8');
      const split = bytes.indexOf(Buffer.from('é', 'utf8')) + 1; // between the two bytes of é
      const answer = await postInPieces(client.key as string, [bytes.subarray(0, split), bytes.subarray(split, split + 7), bytes.subarray(split + 7)]);
      expect(answer.status).toBe(201);
      expect(answer.body.data?.name).toBe('café-ünïcode');
    });

    it('a body that is not UTF-8 is 400 on body, however it arrives, and creates nothing', async () => {
      const client = await freshClient(suite.served);
      const [before, after] = JSON.stringify(httpServer({ name: 'caf#' })).split('#') as [string, string];
      const latin1 = Buffer.concat([Buffer.from(before), Buffer.from([0xe9]), Buffer.from(after)]);
      for (const pieces of [[latin1], [latin1.subarray(0, 10), latin1.subarray(10)]]) {
        const answer = await postInPieces(client.key as string, pieces);
        expect(answer.status).toBe(400);
        expect(answer.body.error?.details).toEqual({ field: 'body', issue: 'is not valid UTF-8' });
      }
      expect(await total(client)).toBe(0);
    });
  });

  describe('several issues', () => {
    it('details carries field/issue of the first and issues[] of all when there is more than one', async () => {
      const details = await refused(
        { name: '', type: 'http', endpoint: 'nope', timeout: 0, bogus: true, id: 'srv_x' },
        'bogus',
      );
      const fields = details.issues.map((i: { field: string }) => i.field).sort();
      expect(fields).toEqual(['bogus', 'endpoint', 'id', 'name', 'timeout']);
      for (const issue of details.issues) {
        expect(Object.keys(issue).sort()).toEqual(['field', 'issue']);
        expect(typeof issue.issue).toBe('string');
      }
    });

    it('a single issue has no issues[]', async () => {
      const details = await refused(httpServer({ timeout: 0 }), 'timeout');
      expect(Object.keys(details).sort()).toEqual(['field', 'issue']);
    });
  });
});

describe.each(ADAPTERS)('validation options ($name)', (adapter) => {
  describe('without stdio enabled', () => {
    const suite = serveForSuite(adapter);

    it('a stdio create is 400 on command', async () => {
      const client = await freshClient(suite.served);
      expectInvalid(await client.post('/servers', stdioServer()), 'command');
      expect(await total(client)).toBe(0);
    });
  });

  describe('requireTls', () => {
    const suite = serveForSuite(adapter, { requireTls: true });

    it('makes http: and ws: endpoints invalid, https: and wss: still valid', async () => {
      const client = await freshClient(suite.served);
      expectInvalid(await client.post('/servers', httpServer({ endpoint: 'http://mcp.example.com' })), 'endpoint');
      expectInvalid(await client.post('/servers', wsServer({ endpoint: 'ws://mcp.example.com' })), 'endpoint');
      expect(await total(client)).toBe(0);
      await createServer(client, httpServer({ endpoint: 'https://mcp.example.com' }));
      const ws = await createServer(client, wsServer({ endpoint: 'wss://mcp.example.com' }));
      expectInvalid(await client.put(`/servers/${ws.id}`, { endpoint: 'ws://mcp.example.com' }), 'endpoint');
      expect(await total(client)).toBe(2);
    });
  });
});
