/**
 * `GET /openapi.json` (contract, "OpenAPI, keys over HTTP, client, CLI"): the HTTP API as an OpenAPI 3.1 document,
 * rendered from the route table's declared schemas, served below the mount without a key, `servers[0].url` following
 * the mount. It is a valid 3.1 document (the official schema, through swagger-parser), every route is in it with its
 * scope, limit and error codes from the one table, and real answers of each adapter validate against it.
 */
import SwaggerParser from '@apidevtools/swagger-parser';
import { createFleet } from '@mcp-fleet/core';
import { afterEach, describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../packages/core/src/errors/codes.js';
import { buildRoutes } from '../../packages/core/src/http/routes.js';
import { ADAPTERS, type Served, serveFleet } from '../support/adapters.js';
import { documentValidator, resolvedAnswer } from '../support/answer-check.js';
import { createKey, httpServer, type Json, send } from '../support/http-client.js';

let served: Served[] = [];
afterEach(async () => {
  await Promise.all(served.map((s) => s.close()));
  served = [];
});

async function serve(...args: Parameters<typeof serveFleet>): Promise<Served> {
  const s = await serveFleet(...args);
  served.push(s);
  return s;
}

describe('GET /openapi.json', () => {
  it('is a valid OpenAPI 3.1 document (the official 3.1 schema, every $ref resolved) with every route of the table', async () => {
    const fleet = createFleet({ rateLimit: false, webhooks: { worker: false } });
    const doc = fleet.openapi();
    const operations = buildRoutes(fleet as never).flatMap((route) => Object.values(route.methods));
    await fleet.close();
    expect(doc.openapi).toBe('3.1.0');
    // validate() checks the document against the OpenAPI 3.1 schema and resolves every $ref; it changes its argument.
    await expect(SwaggerParser.validate(structuredClone(doc) as never)).resolves.toBeDefined();
    const paths = doc.paths as Record<string, Record<string, Json>>;
    const found = Object.entries(paths).flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ path, method, op })));
    expect(found.map((f) => f.op.operationId).sort()).toEqual(operations.map((o) => o.name).sort());
    for (const operation of operations) {
      const { op } = found.find((f) => f.op.operationId === operation.name) as { op: Json };
      expect(op.security, operation.name).toEqual([{ apiKey: [operation.scope] }]);
      expect(op['x-rate-limit'], operation.name).toBe(operation.limit ?? null);
      // Every declared error code answers under its status, and only there.
      const declared = operation.schemas.errors;
      const documented = Object.entries(op.responses as Record<string, Json>)
        .filter(([status]) => Number(status) >= 400)
        .flatMap(([status, response]) => {
          const resolved = resolvedAnswer(doc, response);
          const codes: string[] = resolved.content['application/json'].schema.allOf[1].properties.error.properties.code.enum;
          for (const code of codes) expect(ERROR_CODES[code as keyof typeof ERROR_CODES].status, `${operation.name} ${code}`).toBe(Number(status));
          return codes;
        });
      expect(documented.sort(), operation.name).toEqual([...declared].sort());
    }
    // The error codes of the one table, as an enum of the error envelope.
    const errorText = JSON.stringify((doc.components as Json).schemas.Error);
    for (const code of Object.keys(ERROR_CODES)) expect(errorText).toContain(`"${code}"`);
  });

  it('has no route when openapi: false (a key gets 404), and refuses a value that is not a boolean', async () => {
    const s = await serve(ADAPTERS[0] as (typeof ADAPTERS)[number], { openapi: false });
    const key = await createKey(s, { account: 'acme-openapi-off' });
    const res = await send(s.url, 'GET', '/openapi.json', {}, key);
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('NOT_FOUND');
    expect(() => createFleet({ openapi: 'yes' as never })).toThrow(/openapi must be true or false/);
  });

  for (const adapter of ADAPTERS) {
    describe(adapter.name, () => {
      it('is served without a key, as JSON; requests for it never spend the address’s budget of failed keys', async () => {
        const s = await serve(adapter, { rateLimit: {} });
        // 25 requests with a wrong key, past the address's budget of 20 failed keys a minute: the document is answered
        // before authentication, so none of them counts.
        for (let i = 0; i < 25; i++) {
          const res = await fetch(`${s.url}/openapi.json`, { headers: i % 2 === 0 ? { authorization: 'Bearer mcpf_wrong' } : {} });
          expect(res.status).toBe(200);
          expect(res.headers.get('content-type')).toMatch(/^application\/json/);
          expect(res.headers.get('x-request-id')).toMatch(/^req_/);
          const doc = (await res.json()) as Json;
          expect(doc.servers[0].url).toBe('/v1');
        }
        const head = await fetch(`${s.url}/openapi.json`, { method: 'HEAD' });
        expect(head.status).toBe(200);
        expect(await head.text()).toBe('');
        // The API itself still needs a key, and a wrong one is a 401, not a 429: the budget is intact.
        const wrong = await send(s.url, 'GET', '/servers', {}, 'mcpf_wrong');
        expect(wrong.status).toBe(401);
        expect(wrong.body.error.code).toBe('UNAUTHORIZED');
      });

      it('names the mount in servers[0].url: /api/v1 when the host app mounts the fleet at /api', async () => {
        const s = await serve(adapter, { mount: '/api' });
        const doc = (await (await fetch(`${s.url}/openapi.json`)).json()) as Json;
        expect(doc.servers[0].url).toBe('/api/v1');
        // The document's base and a path of it make a URL the API answers.
        const key = await createKey(s, { account: 'acme-openapi-mount' });
        const res = await fetch(new URL(`${doc.servers[0].url}/servers`, s.origin), { headers: { authorization: `Bearer ${key}` } });
        expect(res.status).toBe(200);
      });

      it('describes what the API answers: a create, a listing, a get, a 404, a 400 and a 401 validate against the document', async () => {
        const s = await serve(adapter);
        const doc = (await (await fetch(`${s.url}/openapi.json`)).json()) as Json;
        const key = await createKey(s, { account: 'acme-openapi-answers' });
        const check = (path: string, method: string, status: number, body: unknown) => {
          const validate = documentValidator(doc, path, method, status);
          expect(validate(body), `${method} ${path} ${status}: ${JSON.stringify(validate.errors)}`).toBe(true);
        };
        const created = await send(s.url, 'POST', '/servers', { body: httpServer() }, key);
        expect(created.status).toBe(201);
        check('/servers', 'post', 201, created.body);
        check('/servers', 'get', 200, (await send(s.url, 'GET', '/servers?limit=5', {}, key)).body);
        check('/servers/{id}', 'get', 200, (await send(s.url, 'GET', `/servers/${created.body.data.id}`, {}, key)).body);
        check('/servers/{id}', 'get', 404, (await send(s.url, 'GET', '/servers/srv_000000000000000000000000', {}, key)).body);
        check('/servers', 'post', 400, (await send(s.url, 'POST', '/servers', { body: { name: '' } }, key)).body);
        check('/servers', 'get', 401, (await send(s.url, 'GET', '/servers', {}, 'mcpf_wrong')).body);
        // And a lie is caught: a 201 body is not a valid 200 listing.
        expect(documentValidator(doc, '/servers', 'get', 200)(created.body)).toBe(false);
      });
    });
  }
});
