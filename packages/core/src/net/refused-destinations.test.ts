/**
 * Every form of a refused destination, through the dual-era probe over the guarded fetch (what a fleet uses): the
 * answer is the guard's `DESTINATION_NOT_ALLOWED` with its hint, never the probe's "neither era answered". Ports
 * the Fetch standard calls "bad" (`:9`, `:1`) fail inside fetch before any connection, so the guard judges them
 * first; on an allowed destination such a port is `UPSTREAM_UNREACHABLE` naming the port.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { ERROR_HINTS } from '../errors/codes.js';
import { probeServer } from '../mcp/probe.js';
import type { HttpServerConfig, WebSocketServerConfig } from '../registry/schema.js';
import { createGuardedFetch } from './guarded-fetch.js';

const refusing = createGuardedFetch({ lookup: async (hostname) => (hostname === 'metadata.internal' ? [{ address: '169.254.169.254', family: 4 }] : [{ address: '127.0.0.1', family: 4 }, { address: '::1', family: 6 }]) });
const allowing = createGuardedFetch({ allowPrivateNetworks: true });
afterAll(() => Promise.all([refusing.dispatcher.close(), allowing.dispatcher.close()]));

const http = (endpoint: string): HttpServerConfig => ({ name: 'refused', type: 'http', endpoint, timeout: 2000 });
const ws = (endpoint: string): WebSocketServerConfig => ({ name: 'refused', type: 'websocket', endpoint, timeout: 2000 });

const HOSTS = [
  '127.0.0.1', // loopback v4
  '127.1', // URL parsing makes it 127.0.0.1
  '[::1]', // loopback v6
  '0.0.0.0', // unspecified
  '[::]',
  '10.0.0.1', // private
  '172.16.0.1',
  '192.168.1.1',
  '169.254.1.1', // link-local
  '169.254.169.254', // metadata
  '[fe80::1]',
  '[fd00::1]', // unique-local
  '[::ffff:127.0.0.1]', // IPv4-mapped
  '[::ffff:169.254.169.254]',
  'localhost', // names that resolve to loopback (the test resolver answers 127.0.0.1 and ::1)
  'localhost.localdomain',
  'metadata.internal',
];
// A port fetch refuses (9 and 1, as a newcomer writes them), an ordinary one, and the scheme's default.
const PORTS = [':9', ':1', ':3000', ''];

describe('a refused destination is DESTINATION_NOT_ALLOWED in the dual-era probe, whatever its form', () => {
  it.each(HOSTS)('http://%s', async (host) => {
    for (const port of PORTS) {
      const endpoint = `http://${host}${port}/mcp`;
      const result = await probeServer(http(endpoint), { fetch: refusing, dispatcher: refusing.dispatcher });
      expect(result.ok, endpoint).toBe(false);
      if (result.ok) continue;
      expect({ endpoint, code: result.error.code }).toEqual({ endpoint, code: 'DESTINATION_NOT_ALLOWED' });
      // The fetch itself rejects with the guard's error, hint included, as undici's failures do.
      const failed = await refusing(endpoint).then(() => undefined, (error: unknown) => error as TypeError);
      expect(failed?.cause).toMatchObject({ code: 'DESTINATION_NOT_ALLOWED', details: { hint: ERROR_HINTS.privateNetworks } });
    }
  });

  it.each(['127.0.0.1:9', '[::1]:1', '10.0.0.1', 'localhost:9'])('ws://%s', async (host) => {
    const result = await probeServer(ws(`ws://${host}/mcp`), { fetch: refusing, dispatcher: refusing.dispatcher });
    expect(result).toMatchObject({ ok: false, error: { code: 'DESTINATION_NOT_ALLOWED' } });
  });

  it('the hint names the option and the reference server variable', () => {
    expect(ERROR_HINTS.privateNetworks).toContain('allowPrivateNetworks');
    expect(ERROR_HINTS.privateNetworks).toContain('MCP_FLEET_ALLOW_PRIVATE_NETWORKS=1');
  });

  it('on an allowed destination, a port fetch refuses is UPSTREAM_UNREACHABLE naming the port, not a protocol error', async () => {
    for (const port of ['9', '1']) {
      const result = await probeServer(http(`http://127.0.0.1:${port}/mcp`), { fetch: allowing, dispatcher: allowing.dispatcher });
      expect(result).toMatchObject({ ok: false, error: { code: 'UPSTREAM_UNREACHABLE', message: expect.stringContaining(`Port ${port} `) } });
    }
  });
});
