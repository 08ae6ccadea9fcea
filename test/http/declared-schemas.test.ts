/**
 * The route table declares every route's shapes (`http/routes.ts`): they render as JSON Schema, and the answers of
 * the whole HTTP suite are checked against them (`test/support/answer-check.ts`, hooked into every served fleet).
 * Here: everything renders, the declarations are complete, and the check does catch a declaration that lies.
 */
import { createFleet } from '@mcp-fleet/core';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ERROR_CODES } from '../../packages/core/src/errors/codes.js';
import { routeJsonSchemas } from '../../packages/core/src/http/json-schema.js';
import { buildRoutes, type Operation, type Route } from '../../packages/core/src/http/routes.js';
import { serverDetailSchema } from '../../packages/core/src/registry/views.js';
import { ADAPTERS, serveFleet } from '../support/adapters.js';
import { answerProblems, checkedFleet, takeMismatches } from '../support/answer-check.js';
import { createServer, expectError, expectSuccess, freshClient, UNKNOWN_SERVER_ID } from '../support/http-client.js';

function table(): { routes: Route[]; operations: Operation[]; close: () => Promise<void> } {
  const fleet = createFleet({ rateLimit: false, webhooks: { worker: false } });
  const routes = buildRoutes(fleet as never);
  return { routes, operations: routes.flatMap((route) => Object.values(route.methods)), close: () => fleet.close() };
}

/** `routes` with `operation` replaced by what `change` makes of it. */
function altered(routes: readonly Route[], name: string, change: (operation: Operation) => Operation): Route[] {
  return routes.map((route) => ({
    ...route,
    methods: Object.fromEntries(Object.entries(route.methods).map(([method, operation]) => [method, operation.name === name ? change(operation) : operation])),
  }));
}

describe('the route table’s declared schemas', () => {
  it('render as JSON Schema (draft 2020-12) that Ajv compiles, every route; only a z.custom check needs its metadata', async () => {
    const { operations, close } = table();
    expect(operations.length).toBe(22);
    const ajv = new Ajv2020({ strict: false, validateFormats: false });
    const needMetadata: string[] = [];
    for (const operation of operations) {
      const rendered = routeJsonSchemas(operation);
      for (const part of ['params', 'query', 'body'] as const) {
        const schema = rendered[part];
        if (schema === undefined) continue;
        expect(schema.$schema, `${operation.name} ${part}`).toBe('https://json-schema.org/draft/2020-12/schema');
        ajv.compile(schema);
      }
      for (const schema of Object.values(rendered.responses)) ajv.compile(schema);
      ajv.compile(rendered.error);
      // What zod cannot render by itself: a route whose schemas need `unrepresentable: 'any'`.
      try {
        routeJsonSchemas(operation, 'throw');
      } catch {
        needMetadata.push(operation.name);
      }
    }
    // `arguments` of a tool call is a `z.custom` plain-object check: it renders as its `.meta({ type: 'object' })`.
    expect(needMetadata).toEqual(['tools.call']);
    await close();
  });

  it('are complete: each path parameter, a success status with its data, a listing’s pagination, error codes from the one table', async () => {
    const { routes, close } = table();
    for (const route of routes) {
      const names = route.segments.filter((segment) => segment.startsWith(':')).map((segment) => segment.slice(1));
      for (const operation of Object.values(route.methods)) {
        expect(Object.keys(operation.schemas.params?.shape ?? {}), operation.name).toEqual(names);
        expect(operation.body, operation.name).toBe(operation.schemas.body !== undefined);
        const statuses = Object.keys(operation.schemas.responses);
        expect(statuses.length, operation.name).toBe(1);
        const listing = operation.name.endsWith('.list') || operation.name === 'webhooks.deliveries';
        for (const answer of Object.values(operation.schemas.responses)) expect(answer.pagination !== undefined, operation.name).toBe(listing && operation.name !== 'tools.list');
        for (const code of operation.schemas.errors) expect(Object.hasOwn(ERROR_CODES, code), `${operation.name}: ${code}`).toBe(true);
        expect(operation.schemas.errors, operation.name).toEqual(expect.arrayContaining(['UNAUTHORIZED', 'FORBIDDEN', 'RATE_LIMITED', 'INTERNAL_ERROR', 'STORAGE_UNAVAILABLE']));
      }
    }
    await close();
  });

  it('render a query parameter as the string it is sent as, and the rules JSON Schema cannot say as descriptions', async () => {
    const { operations, close } = table();
    const list = routeJsonSchemas(operations.find((operation) => operation.name === 'servers.list') as Operation);
    expect(list.query).toMatchObject({
      type: 'object',
      additionalProperties: false,
      properties: {
        page: { type: 'string', pattern: '^\\d{1,16}$', description: 'An integer of at least 1, in decimal digits.' },
        limit: { type: 'string', description: 'An integer from 1 to 100, in decimal digits.' },
        type: { enum: ['http', 'websocket', 'stdio'] },
      },
    });
    const create = routeJsonSchemas(operations.find((operation) => operation.name === 'servers.create') as Operation);
    // One create body: the three configurations, told apart by `type`; the allowlist of stdio commands is a description.
    expect(JSON.stringify(create.body)).toContain('allowlist of stdio commands');
    // What a key may grant, which no schema says: in the descriptions of POST /keys.
    const keys = JSON.stringify(routeJsonSchemas(operations.find((operation) => operation.name === 'keys.create') as Operation).body);
    for (const rule of ['at most the creating key\'s tier', 'Only scopes the creating key holds', 'within one of its patterns', 'at most 10 years ahead']) expect(keys).toContain(rule);
    expect((create.body as { oneOf?: unknown[]; anyOf?: unknown[] }).oneOf ?? (create.body as { anyOf?: unknown[] }).anyOf).toHaveLength(3);
    // `error.code`: every code of the table, INVALID_REQUEST told apart by the fixed form of its details.
    const forms = (create.error as { properties: { error: { oneOf: { properties: { code: { const?: string; enum?: string[] } } }[] } } }).properties.error.oneOf;
    expect(forms.flatMap(({ properties: { code } }) => code.enum ?? [code.const]).sort()).toEqual(Object.keys(ERROR_CODES).sort());
    await close();
  });

  describe.each(ADAPTERS)('catch a declaration that lies (%s)', (adapter) => {
    it('a declared field the answer lacks, and an error code the route does not declare, fail the check', async () => {
      const served = await serveFleet(adapter);
      try {
        const routes = buildRoutes(served.fleet as never);
        const lying = altered(
          altered(routes, 'servers.get', (operation) => ({
            ...operation,
            schemas: { ...operation.schemas, responses: { 200: { data: serverDetailSchema.extend({ owner: z.string() }) } } },
          })),
          'servers.delete',
          (operation) => ({ ...operation, schemas: { ...operation.schemas, errors: operation.schemas.errors.filter((code) => code !== 'SERVER_NOT_FOUND') } }),
        );
        // The fleet answers as ever; only what the table says of it is wrong.
        const checked = await adapter.serve(checkedFleet(served.fleet, lying), '');
        try {
          const client = await freshClient({ ...served, url: `${checked.origin}${served.fleet.prefix}` });
          const created = await createServer(client);
          expect(takeMismatches()).toEqual([]);
          expectSuccess(await client.get(`/servers/${created.id}`), 200);
          const [missing, ...others] = takeMismatches();
          expect(others).toEqual([]);
          expect(missing).toMatch(/^GET \/servers\/srv_\w+ → 200: servers\.get's answer does not match its declared schema: .*must have required property 'owner'/);
          expectError(await client.delete(`/servers/${UNKNOWN_SERVER_ID}`), 404, 'SERVER_NOT_FOUND');
          expect(takeMismatches()).toEqual([`DELETE /servers/${UNKNOWN_SERVER_ID} → 404: servers.delete answered SERVER_NOT_FOUND, which it does not declare`]);
        } finally {
          checked.server.closeAllConnections();
          await new Promise<void>((resolve) => checked.server.close(() => resolve()));
        }
      } finally {
        await served.close();
      }
    });
  });

  it('judge an answer by its text: a field the schema does not declare, a wrong type, an error code outside the table', async () => {
    const { routes, close } = table();
    const meta = { timestamp: '2026-11-26T12:00:00.000Z', request_id: 'req_1' };
    const deleted = (data: unknown) => JSON.stringify({ success: true, data, meta });
    expect(answerProblems(routes, 'DELETE', '/servers/srv_1', 200, deleted({ id: 'srv_1', deleted: true }))).toEqual([]);
    expect(answerProblems(routes, 'DELETE', '/servers/srv_1', 200, deleted({ id: 'srv_1', deleted: true, extra: 1 }))[0]).toMatch(/must NOT have additional properties/);
    expect(answerProblems(routes, 'DELETE', '/servers/srv_1', 200, deleted({ id: 1, deleted: true }))[0]).toMatch(/must be string/);
    expect(answerProblems(routes, 'DELETE', '/servers/srv_1', 201, deleted({ id: 'srv_1', deleted: true }))).toEqual(['DELETE /servers/srv_1 → 201: servers.delete declares no success 201']);
    const error = JSON.stringify({ success: false, error: { code: 'NO_SUCH_CODE', message: 'x', details: {} }, meta });
    expect(answerProblems(routes, 'GET', '/nowhere', 404, error)[0]).toMatch(/^GET \/nowhere → 404: the error envelope does not match: /);
    const invalid = (details: unknown) => JSON.stringify({ success: false, error: { code: 'INVALID_REQUEST', message: 'x', details }, meta });
    expect(answerProblems(routes, 'GET', '/servers', 400, invalid({ field: 'page', issue: 'must be an integer of at least 1' }))).toEqual([]);
    expect(answerProblems(routes, 'GET', '/servers', 400, invalid({ field: 'page' }))[0]).toMatch(/the error envelope does not match/);
    expect(answerProblems(routes, 'GET', '/servers', 400, invalid({ field: 'page', issue: 'x', extra: 1 }))[0]).toMatch(/the error envelope does not match/);
    await close();
  });
});
