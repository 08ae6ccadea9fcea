/**
 * Bounded upstream reads over stdio (CONTRACT "Hardening"): a line past `maxUpstreamBytes` fails the call at once with
 * UPSTREAM_RESPONSE_TOO_LARGE (not after the server's timeout), and the process is replaced, so the next call reads
 * whole lines again. A real child process: the echo-server fixture.
 */
import { describe, expect, it } from 'vitest';
import { ADAPTERS } from '../support/adapters.js';
import { createServer, freshClient, type Json, serveForSuite } from '../support/http-client.js';

import { fixture, NODE } from '../../packages/core/src/stdio/test-helpers.js';

const ECHO_SERVER = fixture('echo-server.mjs');

describe.each(ADAPTERS)('a stdio answer past maxUpstreamBytes ($name)', (adapter) => {
  const suite = serveForSuite(adapter, { stdio: { commands: [NODE] }, maxUpstreamBytes: 64 * 1024, onError: () => {} });

  it('fails the call at once with UPSTREAM_RESPONSE_TOO_LARGE, and the next call runs on a fresh process', async () => {
    const rest = await freshClient(suite.served);
    // A server timeout far longer than the test's: a call left waiting for it would fail the test by its time limit.
    const server = await createServer(rest, { name: 'echo', type: 'stdio', command: NODE, args: [ECHO_SERVER], timeout: 120_000 });
    const call = (name: string, args: Json) => rest.post(`/servers/${server.id}/tools/call`, { name, arguments: args });
    const pidOf = async () => {
      const answer = await call('stats', {});
      expect(answer.status).toBe(200);
      return JSON.parse((answer.body as Json).data.result.content[0].text).pid as number;
    };

    const before = await pidOf();
    const small = await call('echo', { big: 1000 });
    expect(small.status).toBe(200);

    const large = await call('echo', { big: 200 * 1024 });
    // The call's record says how it failed (the route answers 200 with the record, as for every upstream failure).
    expect(large.status).toBe(200);
    expect((large.body as Json).data).toMatchObject({ status: 'error', error: { code: 'UPSTREAM_RESPONSE_TOO_LARGE' } });
    expect(JSON.stringify(large.body)).not.toContain('xxxx');

    // The process that wrote the line is stopped; the next call starts another and reads whole lines.
    const after = await pidOf();
    expect(after).not.toBe(before);
    const again = await call('echo', { big: 1000 });
    expect(again.status).toBe(200);
  }, 20_000);
});
