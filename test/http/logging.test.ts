import { describe, expect, it } from 'vitest';
import type { Logger } from '@mcp-fleet/core';
import { ADAPTERS, serveFleet } from '../support/adapters.js';

const TOKEN = 'SeCrEt-log-bearer-4e1d';
const CLIENT_SECRET = 'SeCrEt-log-client-9b2c';
const ENV_VALUE = 'SeCrEt-log-env-77aa';

/** A pino-shaped logger that keeps every line, as text, for scanning. */
function capture(): Logger & { lines: { level: string; fields: Record<string, unknown>; message: string }[] } {
  const lines: { level: string; fields: Record<string, unknown>; message: string }[] = [];
  const at = (level: string) => (fields: Record<string, unknown>, message: string) => lines.push({ level, fields, message });
  return { lines, info: at('info'), warn: at('warn'), error: at('error') };
}

describe.each(ADAPTERS)('the logger port ($name)', (adapter) => {
  it('one structured line per request, with the route template, and no secret in any line of a whole scenario', async () => {
    const logger = capture();
    const served = await serveFleet(adapter, { logger, stdio: { commands: ['node'] } });
    const { secret: apiKey } = (await served.fleet.keys.create({ account: 'acme', tier: 'pro' }))._unsafeUnwrap();
    const call = (method: string, path: string, body?: unknown, key: string | null = apiKey) =>
      fetch(`${served.url}${path}`, {
        method,
        headers: { ...(key === null ? {} : { authorization: `Bearer ${key}` }), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }).then(async (res) => ({ status: res.status, body: (await res.json()) as { data?: { id?: string; secret?: string } } }));

    const bearer = await call('POST', '/servers', { name: 'b', type: 'http', endpoint: 'https://b.example/mcp', authentication: { type: 'bearer', token: TOKEN } });
    const oauth = await call('POST', '/servers', {
      name: 'o',
      type: 'http',
      endpoint: 'https://o.example/mcp',
      authentication: { type: 'oauth2', client_id: 'c', client_secret: CLIENT_SECRET, token_url: 'https://o.example/token' },
    });
    const stdio = await call('POST', '/servers', { name: 's', type: 'stdio', command: 'node', args: ['-e', '1'], env: { API_KEY: ENV_VALUE } });
    const hook = await call('POST', '/webhooks', { url: 'https://h.example.com/hook', events: ['server.created'] });
    const id = bearer.body.data?.id as string;
    await call('GET', `/servers/${id}`);
    await call('PUT', `/servers/${id}`, { authentication: { type: 'bearer', token: `${TOKEN}-2` } });
    // A probe and a listing that fail upstream (the guard refuses the address): 200 with the record, 502.
    await call('GET', `/servers/${id}/health`);
    await call('GET', `/servers/${id}/tools`);
    await call('POST', `/servers/${id}/tools/call`, { name: 'x', arguments: { password: TOKEN } });
    await call('GET', '/servers?limit=5');
    await call('GET', '/nope');
    await call('GET', '/servers', undefined, `${TOKEN}-wrong`);
    await call('DELETE', `/servers/${oauth.body.data?.id as string}`);
    expect([bearer.status, oauth.status, stdio.status, hook.status]).toEqual([201, 201, 201, 201]);
    const webhookSecret = hook.body.data?.secret as string;
    await served.close();

    const requests = logger.lines.filter((line) => line.message === 'request');
    expect(requests).toHaveLength(13);
    expect(requests[0]?.fields).toMatchObject({ method: 'POST', route: '/servers', status: 201, account: 'acme', request_id: expect.stringMatching(/^req_/) });
    expect(requests.map((line) => line.fields.route)).toContain('/servers/:id/tools/call');
    expect(requests.find((line) => line.fields.route === '/servers/:id/tools')?.fields.status).toBe(502);
    // An unknown route and a wrong key: no template, and no account before authentication.
    expect(requests.filter((line) => line.fields.route === null)).toHaveLength(2);
    expect(requests.at(-2)?.fields).toMatchObject({ status: 401, account: null });
    const text = JSON.stringify(logger.lines);
    for (const secret of [TOKEN, CLIENT_SECRET, ENV_VALUE, apiKey, webhookSecret]) expect(text).not.toContain(secret);
  });
});
