import type { LookupAddress } from 'node:dns';
import { createServer, type RequestListener, type Server } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { Agent, WebSocket } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { createGuardedAgent, type GuardedAgentOptions, type HostnameResolver } from './guarded-agent.js';
import { createGuardedFetch, type GuardedFetch, type GuardedFetchOptions } from './guarded-fetch.js';
import type { UpstreamErrorCode } from '../errors/codes.js';
import { classifyUndiciError } from './upstream-error.js';

interface Listener {
  readonly host: string;
  readonly port: number;
  /** TCP connections accepted so far: the proof that a refused destination saw nothing at all. */
  connections: number;
  close(): Promise<void>;
}

const servers: Server[] = [];
const dispatchers: Agent[] = [];

afterEach(async () => {
  await Promise.all(dispatchers.splice(0).map((agent) => agent.destroy()));
  await Promise.all(
    servers.splice(0).map(
      (server) =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    ),
  );
});

const answerOk: RequestListener = (request, response) => {
  // One request per connection, so each request needs a new connection (and a new lookup).
  response.writeHead(200, { connection: 'close', 'content-type': 'text/plain' });
  request.pipe(response);
  request.on('end', () => response.end());
};

async function listen(host: string, port = 0, handler: RequestListener = answerOk): Promise<Listener> {
  const server = createServer(handler);
  let connections = 0;
  server.on('connection', () => {
    connections += 1;
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  servers.push(server);
  return {
    host,
    port: (server.address() as AddressInfo).port,
    get connections() {
      return connections;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Listeners on several loopback addresses sharing one port, as one URL port must reach any of them. */
async function listenAll(hosts: readonly string[], handlers: readonly (RequestListener | undefined)[] = []): Promise<Listener[]> {
  for (let attempt = 0; attempt < 20; attempt += 1) {
    const first = await listen(hosts[0] ?? '127.0.0.1', 0, handlers[0]);
    const all = [first];
    try {
      for (const [index, host] of hosts.entries()) {
        if (index > 0) all.push(await listen(host, first.port, handlers[index]));
      }
      return all;
    } catch {
      await Promise.all(all.map((listener) => listener.close()));
    }
  }
  throw new Error(`could not listen on one port on ${hosts.join(', ')}`);
}

async function loopbackIPv6Available(): Promise<boolean> {
  try {
    await (await listen('::1')).close();
    return true;
  } catch {
    return false;
  }
}

function guardedFetch(options: GuardedFetchOptions = {}): GuardedFetch {
  const guarded = createGuardedFetch({ connectTimeout: 2_000, ...options });
  dispatchers.push(guarded.dispatcher);
  return guarded;
}

/** A resolver that answers from a script and records what it was asked and what it said. */
function fakeResolver(answers: (call: number) => readonly string[]) {
  const calls: { hostname: string; answer: readonly string[] }[] = [];
  const lookup: HostnameResolver = async (hostname) => {
    const answer = answers(calls.length);
    calls.push({ hostname, answer });
    return answer.map((address): LookupAddress => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return { lookup, calls };
}

/** Resolves to the code the request failed with; fails the test if the request succeeded. */
async function failureCode(request: Promise<unknown>): Promise<UpstreamErrorCode> {
  const outcome = await request.then(
    (response) => ({ ok: true as const, response }),
    (error: unknown) => ({ ok: false as const, error }),
  );
  if (outcome.ok) throw new Error(`expected the request to be refused, it answered ${String((outcome.response as Response).status)}`);
  return classifyUndiciError(outcome.error).code;
}

describe('guarded fetch: loopback in every spelling is refused and the listener sees no connection', () => {
  /** URL forms that reach a listener on 127.0.0.1; WHATWG URL parsing turns each into the hostname shown. */
  const LOOPBACK_FORMS: [string, string][] = [
    ['http://127.0.0.1:PORT/', '127.0.0.1'],
    ['http://127.1:PORT/', '127.0.0.1'],
    ['http://0x7f000001:PORT/', '127.0.0.1'],
    ['http://2130706433:PORT/', '127.0.0.1'],
    ['http://017700000001:PORT/', '127.0.0.1'],
    ['http://0x7f.1:PORT/', '127.0.0.1'],
    ['http://[::ffff:7f00:1]:PORT/', '[::ffff:7f00:1]'],
    ['http://[::ffff:127.0.0.1]:PORT/', '[::ffff:7f00:1]'],
    ['http://0.0.0.0:PORT/', '0.0.0.0'],
    ['http://0:PORT/', '0.0.0.0'],
  ];

  it.each(LOOPBACK_FORMS)('%s is refused without DNS', async (form, hostname) => {
    const [listener] = await listenAll(['127.0.0.1']);
    const url = new URL(form.replace('PORT', String(listener?.port)));
    expect(url.hostname).toBe(hostname);
    const resolver = fakeResolver(() => ['127.0.0.1']);
    const code = await failureCode(guardedFetch({ lookup: resolver.lookup })(url));
    expect(code).toBe('DESTINATION_NOT_ALLOWED');
    expect(listener?.connections).toBe(0);
    expect(resolver.calls).toEqual([]);
  });

  it.each(LOOPBACK_FORMS)('control: %s does reach the listener once loopback is allowed', async (form) => {
    const [listener] = await listenAll(['127.0.0.1']);
    const url = new URL(form.replace('PORT', String(listener?.port)));
    const response = await guardedFetch({ allowPrivateNetworks: true })(url);
    expect(response.status).toBe(200);
    expect(listener?.connections).toBe(1);
  });

  it('localhost, through the real system resolver, is refused', async () => {
    const listeners = await listenAll((await loopbackIPv6Available()) ? ['127.0.0.1', '::1'] : ['127.0.0.1']);
    const port = listeners[0]?.port;
    const code = await failureCode(guardedFetch()(new URL(`http://localhost:${port}/`)));
    expect(code).toBe('DESTINATION_NOT_ALLOWED');
    expect(listeners.map((listener) => listener.connections)).toEqual(listeners.map(() => 0));

    const response = await guardedFetch({ allowPrivateNetworks: true })(new URL(`http://localhost:${port}/`));
    expect(response.status).toBe(200);
    expect(listeners.reduce((sum, listener) => sum + listener.connections, 0)).toBe(1);
  });

  it('[::1] is refused (IPv6 loopback listener)', async (context) => {
    if (!(await loopbackIPv6Available())) context.skip();
    const [listener] = await listenAll(['::1']);
    const url = new URL(`http://[::1]:${listener?.port}/`);
    expect(await failureCode(guardedFetch()(url))).toBe('DESTINATION_NOT_ALLOWED');
    expect(listener?.connections).toBe(0);
    expect((await guardedFetch({ allowPrivateNetworks: ['::1/128'] })(url)).status).toBe(200);
    expect(listener?.connections).toBe(1);
  });

  it('a plain string URL takes the same path as a URL object', async () => {
    const [listener] = await listenAll(['127.0.0.1']);
    expect(await failureCode(guardedFetch()(`http://127.1:${listener?.port}/`))).toBe('DESTINATION_NOT_ALLOWED');
    expect(listener?.connections).toBe(0);
  });
});

describe('guarded fetch: private, link-local and reserved literals are refused before any connection', () => {
  // Nothing listens on these in a test sandbox: were the guard to let one through, the request would fail as
  // unreachable or time out instead, so the code tells a refusal from a network failure.
  const FORMS = [
    'http://10.0.0.1:PORT/',
    'http://10.255.255.254:PORT/',
    'http://172.16.0.1:PORT/',
    'http://172.31.255.254:PORT/',
    'http://192.168.1.1:PORT/',
    'http://100.64.0.1:PORT/',
    'http://100.127.255.254:PORT/',
    'http://169.254.169.254:PORT/latest/meta-data/',
    'http://0xa9fea9fe:PORT/',
    'http://[fe80::1]:PORT/',
    'http://[fd00::1]:PORT/',
    'http://[fc00::1]:PORT/',
    'http://[::]:PORT/',
    'http://[::ffff:10.0.0.1]:PORT/',
    'http://[::ffff:a9fe:a9fe]:PORT/',
    'http://[64:ff9b::a00:1]:PORT/',
    'http://[2002:7f00:1::]:PORT/',
    'http://224.0.0.1:PORT/',
    'http://255.255.255.255:PORT/',
    'https://10.0.0.1:PORT/',
  ];

  it.each(FORMS)('%s', async (form) => {
    const [listener] = await listenAll(['127.0.0.1']);
    const resolver = fakeResolver(() => ['127.0.0.1']);
    const url = new URL(form.replace('PORT', String(listener?.port)));
    const code = await failureCode(guardedFetch({ lookup: resolver.lookup, connectTimeout: 500 })(url));
    expect(code).toBe('DESTINATION_NOT_ALLOWED');
    expect(resolver.calls).toEqual([]);
    expect(listener?.connections).toBe(0);
  });
});

describe('guarded fetch: hostnames are judged on every address they resolve to', () => {
  it('a hostname that resolves to 127.0.0.1 is refused', async () => {
    const [listener] = await listenAll(['127.0.0.1']);
    const resolver = fakeResolver(() => ['127.0.0.1']);
    const url = new URL(`http://internal.example:${listener?.port}/`);
    expect(await failureCode(guardedFetch({ lookup: resolver.lookup })(url))).toBe('DESTINATION_NOT_ALLOWED');
    expect(resolver.calls.map((call) => call.hostname)).toEqual(['internal.example']);
    expect(listener?.connections).toBe(0);
  });

  it('a hostname that resolves to ::1 or a mapped loopback is refused', async () => {
    const [listener] = await listenAll(['127.0.0.1']);
    for (const answer of [['::1'], ['::ffff:127.0.0.1'], ['fe80::1%eth0']]) {
      const resolver = fakeResolver(() => answer);
      const url = new URL(`http://internal.example:${listener?.port}/`);
      expect(await failureCode(guardedFetch({ lookup: resolver.lookup })(url)), answer.join()).toBe('DESTINATION_NOT_ALLOWED');
    }
    expect(listener?.connections).toBe(0);
  });

  it('one blocked answer refuses the name, even after a public one', async () => {
    const [listener] = await listenAll(['127.0.0.1']);
    const resolver = fakeResolver(() => ['8.8.8.8', '127.0.0.1']);
    const url = new URL(`http://mixed.example:${listener?.port}/`);
    expect(await failureCode(guardedFetch({ lookup: resolver.lookup })(url))).toBe('DESTINATION_NOT_ALLOWED');
    expect(listener?.connections).toBe(0);
  });

  it('one blocked answer refuses the name even when the allowed answer comes first and is reachable', async () => {
    // 127.0.0.2 stands in for a public address: allowed, and a real listener that would see a connection.
    const [allowed, blocked] = await listenAll(['127.0.0.2', '127.0.0.1']);
    const resolver = fakeResolver(() => ['127.0.0.2', '127.0.0.1']);
    const fetchGuarded = guardedFetch({ lookup: resolver.lookup, allowPrivateNetworks: ['127.0.0.2/32'] });
    expect(await failureCode(fetchGuarded(new URL(`http://mixed.example:${allowed?.port}/`)))).toBe('DESTINATION_NOT_ALLOWED');
    expect(allowed?.connections).toBe(0);
    expect(blocked?.connections).toBe(0);
  });

  it('DNS rebinding: the answer that was checked is the one connected to, and a later flip is refused', async () => {
    // First answer: the allowed stand-in for a public address. Every later answer: loopback.
    const [checked, target] = await listenAll(['127.0.0.2', '127.0.0.1']);
    const resolver = fakeResolver((call) => (call === 0 ? ['127.0.0.2'] : ['127.0.0.1']));
    const fetchGuarded = guardedFetch({ lookup: resolver.lookup, allowPrivateNetworks: ['127.0.0.2/32'] });
    const url = new URL(`http://rebind.example:${checked?.port}/`);

    const response = await fetchGuarded(url, { method: 'POST', body: 'first' });
    expect(await response.text()).toBe('first');
    // One lookup for the connection: a guard that checked one answer and let the socket resolve again would have
    // asked twice and, on the second answer, connected to the loopback listener.
    expect(resolver.calls).toEqual([{ hostname: 'rebind.example', answer: ['127.0.0.2'] }]);
    expect(checked?.connections).toBe(1);
    expect(target?.connections).toBe(0);

    // The server closed the connection, so the next request resolves again and now meets the flipped answer.
    expect(await failureCode(fetchGuarded(url))).toBe('DESTINATION_NOT_ALLOWED');
    expect(resolver.calls).toHaveLength(2);
    expect(checked?.connections).toBe(1);
    expect(target?.connections).toBe(0);
  });

  it('a hostname with no address is unreachable, not allowed', async () => {
    const resolver = fakeResolver(() => []);
    expect(await failureCode(guardedFetch({ lookup: resolver.lookup })('http://empty.example/'))).toBe('UPSTREAM_UNREACHABLE');
  });

  it('a resolver failure is passed on (ENOTFOUND is unreachable)', async () => {
    const lookup: HostnameResolver = async () => {
      throw Object.assign(new Error('getaddrinfo ENOTFOUND nowhere.example'), { code: 'ENOTFOUND' });
    };
    expect(await failureCode(guardedFetch({ lookup })('http://nowhere.example/'))).toBe('UPSTREAM_UNREACHABLE');
  });

  it('the connect timeout covers a lookup that never answers', async () => {
    const lookup: HostnameResolver = () => new Promise(() => {});
    const started = Date.now();
    expect(await failureCode(guardedFetch({ lookup, connectTimeout: 150 })('http://slow.example/'))).toBe('UPSTREAM_TIMEOUT');
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});

describe('guarded fetch: TLS to a checked address keeps the hostname', () => {
  // A self-signed certificate for tls.example (P-256, valid until 2126), a test fixture only.
  const KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg71Wvj/AP355O2pVG
nF0sN78apyTt6/rVFUochxADLHKhRANCAATIwaaRsuaxy2xTQpvQXyHTd/kLGP6+
fwmmqPEYmxfR1P68UQcHzVZDa1RN2BcnqxOLcGT0LH7vhIP/NPRHX0rG
-----END PRIVATE KEY-----`;
  const CERT = `-----BEGIN CERTIFICATE-----
MIIBmjCCAUGgAwIBAgIUTaK5Th4ZWiAUWRYzot3LccdfoogwCgYIKoZIzj0EAwIw
FjEUMBIGA1UEAwwLdGxzLmV4YW1wbGUwIBcNMjYxMTIyMDUzOTUzWhgPMjEyNjEw
MjkwNTM5NTNaMBYxFDASBgNVBAMMC3Rscy5leGFtcGxlMFkwEwYHKoZIzj0CAQYI
KoZIzj0DAQcDQgAEyMGmkbLmsctsU0Kb0F8h03f5Cxj+vn8JpqjxGJsX0dT+vFEH
B81WQ2tUTdgXJ6sTi3Bk9Cx+74SD/zT0R19KxqNrMGkwHQYDVR0OBBYEFNKjGfLd
2E395j5trFo8lFV1BRr5MB8GA1UdIwQYMBaAFNKjGfLd2E395j5trFo8lFV1BRr5
MA8GA1UdEwEB/wQFMAMBAf8wFgYDVR0RBA8wDYILdGxzLmV4YW1wbGUwCgYIKoZI
zj0EAwIDRwAwRAIgIOiasADcy4aVF8rHjThLL/u6eIi95DXHC6WgVIUIAWoCIAZJ
HXg8v+ItpGGnZXWEorLSkUQNhqBjyVf6ENDn51+2
-----END CERTIFICATE-----`;

  it('sends the URL hostname as SNI and still verifies the certificate', async () => {
    const serverNames: string[] = [];
    const server = createTlsServer(
      {
        key: KEY,
        cert: CERT,
        SNICallback: (servername, done) => {
          serverNames.push(servername);
          done(null);
        },
      },
      (_request, response) => response.end('ok'),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.2', resolve));
    servers.push(server);
    const port = (server.address() as AddressInfo).port;
    const resolver = fakeResolver(() => ['127.0.0.2']);
    const fetchGuarded = guardedFetch({ lookup: resolver.lookup, allowPrivateNetworks: ['127.0.0.2/32'] });

    // Not trusted (self-signed): the handshake reached the checked address and the certificate check still ran.
    const error = await fetchGuarded(`https://tls.example:${port}/`).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect((error as { cause?: { code?: string } } | undefined)?.cause?.code).toBe('DEPTH_ZERO_SELF_SIGNED_CERT');
    expect(classifyUndiciError(error).code).toBe('UPSTREAM_UNREACHABLE');
    expect(serverNames).toEqual(['tls.example']);
    expect(resolver.calls.map((call) => call.hostname)).toEqual(['tls.example']);
  });
});

describe('guarded fetch: redirects are returned, never followed', () => {
  async function redirectPair() {
    let target = 0;
    const [allowed, blocked] = await listenAll(
      ['127.0.0.2', '127.0.0.1'],
      [
        (_request, response) => {
          response.writeHead(302, { location: `http://127.0.0.1:${target}/`, connection: 'close' });
          response.end();
        },
      ],
    );
    target = blocked?.port ?? 0;
    return { allowed, blocked, url: new URL(`http://127.0.0.2:${allowed?.port}/`) };
  }

  it.each([undefined, 'follow', 'manual'] as const)('redirect: %s gives back the 302 itself', async (redirect) => {
    const { allowed, blocked, url } = await redirectPair();
    const response = await guardedFetch({ allowPrivateNetworks: ['127.0.0.2/32'] })(url, redirect === undefined ? {} : { redirect });
    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toBe(`http://127.0.0.1:${blocked?.port}/`);
    expect(allowed?.connections).toBe(1);
    expect(blocked?.connections).toBe(0);
  });

  it("redirect: 'error' rejects the 302 as fetch does, and follows nothing", async () => {
    const { allowed, blocked, url } = await redirectPair();
    const error = await guardedFetch({ allowPrivateNetworks: ['127.0.0.2/32'] })(url, { redirect: 'error' }).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(TypeError);
    expect((error as { cause?: { message?: string } }).cause?.message).toBe('unexpected redirect');
    expect(allowed?.connections).toBe(1);
    expect(blocked?.connections).toBe(0);
  });

  it('even when loopback is allowed the redirect is not followed', async () => {
    const { blocked, url } = await redirectPair();
    const response = await guardedFetch({ allowPrivateNetworks: true })(url);
    expect(response.status).toBe(302);
    expect(blocked?.connections).toBe(0);
  });

  it('a global Request asking to follow is not followed either', async () => {
    const { blocked, url } = await redirectPair();
    const request = new Request(url, { method: 'POST', body: 'x', redirect: 'follow' });
    const response = await guardedFetch({ allowPrivateNetworks: ['127.0.0.2/32'] })(request);
    expect(response.status).toBe(302);
    expect(blocked?.connections).toBe(0);
  });

  it('a global Request keeps its method, headers and body', async () => {
    const [listener] = await listenAll(
      ['127.0.0.1'],
      [
        (request, response) => {
          let body = '';
          request.setEncoding('utf8');
          request.on('data', (chunk: string) => (body += chunk));
          request.on('end', () => response.end(`${request.method} ${String(request.headers['x-test'])} ${body}`));
        },
      ],
    );
    const request = new Request(`http://127.0.0.1:${listener?.port}/`, { method: 'PUT', body: 'payload', headers: { 'x-test': 'yes' } });
    const response = await guardedFetch({ allowPrivateNetworks: true })(request);
    expect(await response.text()).toBe('PUT yes payload');
  });
});

describe('guarded fetch: the allow option', () => {
  it('a CIDR list allows only those networks', async () => {
    const [inside, outside] = await listenAll(['127.0.0.2', '127.0.0.1']);
    const fetchGuarded = guardedFetch({ allowPrivateNetworks: ['127.0.0.2/32'] });
    expect((await fetchGuarded(new URL(`http://127.0.0.2:${inside?.port}/`))).status).toBe(200);
    expect(await failureCode(fetchGuarded(new URL(`http://127.0.0.1:${outside?.port}/`)))).toBe('DESTINATION_NOT_ALLOWED');
    expect(inside?.connections).toBe(1);
    expect(outside?.connections).toBe(0);
  });

  it('a hostname entry allows that host, whatever it resolves to, and no other', async () => {
    const [listener] = await listenAll(['127.0.0.1']);
    const resolver = fakeResolver(() => ['127.0.0.1']);
    const fetchGuarded = guardedFetch({ lookup: resolver.lookup, allowPrivateNetworks: ['mcp.internal'] });
    expect((await fetchGuarded(new URL(`http://MCP.internal:${listener?.port}/`))).status).toBe(200);
    expect(listener?.connections).toBe(1);
    expect(await failureCode(fetchGuarded(new URL(`http://other.internal:${listener?.port}/`)))).toBe('DESTINATION_NOT_ALLOWED');
    expect(listener?.connections).toBe(1);
  });

  it('an allowed destination that refuses the connection is unreachable', async () => {
    const listener = await listen('127.0.0.1');
    await listener.close();
    const code = await failureCode(guardedFetch({ allowPrivateNetworks: true })(`http://127.0.0.1:${listener.port}/`));
    expect(code).toBe('UPSTREAM_UNREACHABLE');
  });
});

describe('guarded fetch: construction', () => {
  it('refuses a dispatcher that is not a guarded agent', () => {
    const agent = new Agent();
    dispatchers.push(agent);
    expect(() => createGuardedFetch({ agent })).toThrow(TypeError);
  });

  it('shares a guarded agent, and refuses agent options beside it', async () => {
    const agent = createGuardedAgent({ allowPrivateNetworks: ['127.0.0.2/32'] });
    dispatchers.push(agent);
    const shared = createGuardedFetch({ agent });
    expect(shared.dispatcher).toBe(agent);
    const [listener] = await listenAll(['127.0.0.2']);
    expect((await shared(`http://127.0.0.2:${listener?.port}/`)).status).toBe(200);
    expect(() => createGuardedFetch({ agent, allowPrivateNetworks: true })).toThrow(TypeError);
  });

  it.each([0, -1, Number.NaN, Number.POSITIVE_INFINITY])('refuses connectTimeout %s', (connectTimeout) => {
    expect(() => createGuardedAgent({ connectTimeout } as GuardedAgentOptions)).toThrow(TypeError);
  });

  it('refuses an unreadable allow entry', () => {
    expect(() => createGuardedFetch({ allowPrivateNetworks: ['10.0.0.0/40'] })).toThrow(TypeError);
  });
});

describe('undici WebSocket on the guarded agent', () => {
  /** Opens a WebSocket and reports how it ended, plus the error the agent saw while connecting. */
  async function openWebSocket(url: string, agent: Agent) {
    const connectionErrors: unknown[] = [];
    agent.on('connectionError', (_origin, _targets, error) => connectionErrors.push(error));
    const socket = new WebSocket(url, { dispatcher: agent });
    const outcome = await new Promise<'open' | number>((resolve) => {
      socket.addEventListener('open', () => {
        socket.close();
        resolve('open');
      });
      socket.addEventListener('close', (event) => resolve(event.code));
    });
    return { outcome, connectionErrors };
  }

  it('ws://127.0.0.1 is refused by the guard and the listener sees no connection', async () => {
    const [listener] = await listenAll(['127.0.0.1']);
    const agent = createGuardedAgent();
    dispatchers.push(agent);
    const { outcome, connectionErrors } = await openWebSocket(`ws://127.0.0.1:${listener?.port}/`, agent);
    expect(outcome).toBe(1006);
    expect(connectionErrors.map((error) => classifyUndiciError(error).code)).toEqual(['DESTINATION_NOT_ALLOWED']);
    expect(listener?.connections).toBe(0);
  });

  it('ws://localhost through a resolver answering loopback is refused too', async () => {
    const [listener] = await listenAll(['127.0.0.1']);
    const agent = createGuardedAgent({ lookup: fakeResolver(() => ['127.0.0.1']).lookup });
    dispatchers.push(agent);
    const { outcome, connectionErrors } = await openWebSocket(`ws://localhost:${listener?.port}/`, agent);
    expect(outcome).toBe(1006);
    expect(connectionErrors.map((error) => classifyUndiciError(error).code)).toEqual(['DESTINATION_NOT_ALLOWED']);
    expect(listener?.connections).toBe(0);
  });

  it('control: with loopback allowed the handshake reaches the listener', async () => {
    const [listener] = await listenAll(['127.0.0.1']);
    const agent = createGuardedFetch({ allowPrivateNetworks: ['127.0.0.0/8'] }).dispatcher;
    dispatchers.push(agent);
    const { connectionErrors } = await openWebSocket(`ws://127.0.0.1:${listener?.port}/`, agent);
    expect(connectionErrors).toEqual([]);
    expect(listener?.connections).toBe(1);
  });
});

describe('guarded fetch: maxResponseBytes', () => {
  /** Answers `size` bytes: with a Content-Length, or chunked in pieces of `piece` bytes, or gzip-compressed. */
  const answering =
    (size: number, form: 'declared' | 'chunked' | 'gzip', piece = 1000): RequestListener =>
    (_request, response) => {
      if (form === 'gzip') {
        // A few hundred bytes on the wire that open up to `size`.
        response.writeHead(200, { 'content-type': 'text/event-stream', 'content-encoding': 'gzip' });
        response.end(gzipSync(Buffer.alloc(size, 'x')));
        return;
      }
      response.writeHead(200, form === 'declared' ? { 'content-length': String(size) } : { 'content-type': 'text/event-stream' });
      for (let sent = 0; sent < size; sent += piece) response.write('x'.repeat(Math.min(piece, size - sent)));
      response.end();
    };
  const read = async (size: number, form: 'declared' | 'chunked' | 'gzip', piece?: number) => {
    const [listener] = await listenAll(['127.0.0.1'], [answering(size, form, piece)]);
    const response = await guardedFetch({ allowPrivateNetworks: true, maxResponseBytes: 10_000 })(`http://127.0.0.1:${listener?.port}/`);
    return response.text().then(
      (text) => text.length,
      // As undici fails a body it cut off: TypeError('terminated'), the reason as its cause.
      (error: unknown) => (error instanceof TypeError ? (error.cause as { code?: string } | undefined)?.code : 'not a TypeError'),
    );
  };

  it.each(['declared', 'chunked', 'gzip'] as const)('a body within the limit arrives whole (%s)', async (form) => {
    expect(await read(10_000, form)).toBe(10_000);
  });

  it.each(['declared', 'chunked', 'gzip'] as const)('a body over the limit fails with UPSTREAM_RESPONSE_TOO_LARGE (%s)', async (form) => {
    expect(await read(10_001, form)).toBe('UPSTREAM_RESPONSE_TOO_LARGE');
    expect(await read(50_000, form)).toBe('UPSTREAM_RESPONSE_TOO_LARGE');
  });

  it('a first chunk already over the limit fails the read too, rather than leaving it waiting', async () => {
    expect(await read(50_000, 'chunked', 50_000)).toBe('UPSTREAM_RESPONSE_TOO_LARGE');
  });

  it('a body read through its stream fails the same way, and the connection serves the next request', async () => {
    const [listener] = await listenAll(['127.0.0.1'], [answering(30_000, 'chunked')]);
    const fetch = guardedFetch({ allowPrivateNetworks: true, maxResponseBytes: 10_000 });
    const url = `http://127.0.0.1:${listener?.port}/`;
    const reader = (await fetch(url)).body?.getReader();
    let received = 0;
    const error = await (async () => {
      for (;;) {
        const { done, value } = (await reader?.read()) ?? { done: true, value: undefined };
        if (done) return undefined;
        received += value.byteLength;
      }
    })().catch((caught: unknown) => caught);
    expect((error as { cause?: { code?: string } }).cause?.code).toBe('UPSTREAM_RESPONSE_TOO_LARGE');
    expect(received).toBeLessThanOrEqual(10_000);
    const small = await guardedFetch({ allowPrivateNetworks: true, maxResponseBytes: 100_000 })(url);
    expect((await small.text()).length).toBe(30_000);
  });
});
