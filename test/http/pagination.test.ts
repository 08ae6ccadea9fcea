import { describe, expect, it } from 'vitest';
import { ADAPTERS } from '../support/adapters.js';
import {
  type ApiClient,
  createServer,
  expectInvalid,
  expectSuccess,
  freshClient,
  httpServer,
  type Json,
  serveForSuite,
  stdioServer,
  wsServer,
} from '../support/http-client.js';

const T0 = Date.parse('2026-11-22T10:00:00.000Z');

describe.each(ADAPTERS)('listing and pagination ($name)', (adapter) => {
  // A clock the tests move, so that created_at (and thus the order) is known.
  let clock = T0;
  const suite = serveForSuite(adapter, { now: () => clock, stdio: { commands: ['node'] } });

  async function seed(client: ApiClient & { account: string }, count: number): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < count; i += 1) {
      clock += 1000;
      ids.push((await createServer(client, httpServer({ name: `s-${String(i).padStart(3, '0')}` }))).id);
    }
    return ids;
  }

  async function page(client: ApiClient, query: string): Promise<{ data: Json[]; pagination: Json }> {
    const res = await client.get(`/servers${query}`);
    const data = expectSuccess(res, 200);
    return { data, pagination: res.body.pagination };
  }

  it('orders by created_at ascending, not by name or insertion of names', async () => {
    const client = await freshClient(suite.served);
    clock = T0 + 30_000;
    const c = await createServer(client, httpServer({ name: 'a-created-last' }));
    clock = T0 + 10_000;
    const a = await createServer(client, httpServer({ name: 'z-created-first' }));
    clock = T0 + 20_000;
    const b = await createServer(client, httpServer({ name: 'm-created-second' }));
    const { data } = await page(client, '');
    expect(data.map((s) => s.id)).toEqual([a.id, b.id, c.id]);
    expect(data.map((s) => s.created_at)).toEqual([
      '2026-11-22T10:00:10.000Z',
      '2026-11-22T10:00:20.000Z',
      '2026-11-22T10:00:30.000Z',
    ]);
  });

  it('ties on created_at are ordered by id', async () => {
    const client = await freshClient(suite.served);
    clock = T0 + 100_000;
    const ids: string[] = [];
    for (let i = 0; i < 6; i += 1) ids.push((await createServer(client)).id);
    const { data } = await page(client, '');
    const sorted = [...ids].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
    expect(data.map((s) => s.id)).toEqual(sorted);
  });

  it('an update does not move a server in the order', async () => {
    const client = await freshClient(suite.served);
    const ids = await seed(client, 3);
    clock += 1000;
    expectSuccess(await client.put(`/servers/${ids[0]}`, { name: 'renamed-first' }), 200);
    expect((await page(client, '')).data.map((s) => s.id)).toEqual(ids);
  });

  it('pages through with limit; pages = ceil(total/limit); a page past the end is empty', async () => {
    const client = await freshClient(suite.served);
    const ids = await seed(client, 7);
    const p1 = await page(client, '?limit=3');
    expect(p1.pagination).toEqual({ page: 1, limit: 3, total: 7, pages: 3 });
    expect(p1.data.map((s) => s.id)).toEqual(ids.slice(0, 3));
    const p2 = await page(client, '?page=2&limit=3');
    expect(p2.pagination).toEqual({ page: 2, limit: 3, total: 7, pages: 3 });
    expect(p2.data.map((s) => s.id)).toEqual(ids.slice(3, 6));
    const p3 = await page(client, '?limit=3&page=3');
    expect(p3.pagination).toEqual({ page: 3, limit: 3, total: 7, pages: 3 });
    expect(p3.data.map((s) => s.id)).toEqual(ids.slice(6));
    const p4 = await page(client, '?page=4&limit=3');
    expect(p4).toEqual({ data: [], pagination: { page: 4, limit: 3, total: 7, pages: 3 } });
    const far = await page(client, '?page=1000');
    expect(far).toEqual({ data: [], pagination: { page: 1000, limit: 50, total: 7, pages: 1 } });
    const exact = await page(client, '?limit=7');
    expect(exact.pagination).toEqual({ page: 1, limit: 7, total: 7, pages: 1 });
    const one = await page(client, '?limit=1&page=7');
    expect(one.pagination).toEqual({ page: 7, limit: 1, total: 7, pages: 7 });
    expect(one.data.map((s) => s.id)).toEqual([ids[6]]);
  });

  it('the default limit is 50 and the maximum 100', async () => {
    const client = await freshClient(suite.served);
    const ids = await seed(client, 101);
    const first = await page(client, '');
    expect(first.pagination).toEqual({ page: 1, limit: 50, total: 101, pages: 3 });
    expect(first.data.map((s) => s.id)).toEqual(ids.slice(0, 50));
    const third = await page(client, '?page=3');
    expect(third.data.map((s) => s.id)).toEqual(ids.slice(100));
    const max = await page(client, '?limit=100');
    expect(max.pagination).toEqual({ page: 1, limit: 100, total: 101, pages: 2 });
    expect(max.data).toHaveLength(100);
    expect((await page(client, '?limit=100&page=2')).data.map((s) => s.id)).toEqual([ids[100]]);
  });

  it('any page >= 1 is valid, however far past the end (up to the largest safe integer)', async () => {
    const client = await freshClient(suite.served);
    await seed(client, 2);
    for (const p of [1_000_001, 123_456_789_012, Number.MAX_SAFE_INTEGER]) {
      expect(await page(client, `?page=${p}&limit=100`)).toEqual({ data: [], pagination: { page: p, limit: 100, total: 2, pages: 1 } });
    }
    expectInvalid(await client.get(`/servers?page=${Number.MAX_SAFE_INTEGER + 2}`), 'page');
    expectInvalid(await client.get(`/servers?page=${'9'.repeat(40)}`), 'page');
  });

  it('an empty account: total 0, pages 0', async () => {
    const client = await freshClient(suite.served);
    expect(await page(client, '?page=3&limit=10')).toEqual({ data: [], pagination: { page: 3, limit: 10, total: 0, pages: 0 } });
  });

  it.each([
    ['limit=0', 'limit'],
    ['limit=101', 'limit'],
    ['limit=-1', 'limit'],
    ['limit=1.5', 'limit'],
    ['limit=', 'limit'],
    ['page=0', 'page'],
    ['page=abc', 'page'],
    ['page=-1', 'page'],
    ['page=1e2', 'page'],
    ['page=', 'page'],
    ['sort=name', 'sort'],
    ['pagee=1', 'pagee'],
    ['page=1&page=2', 'page'],
    ['limit=10&limit=10', 'limit'],
    ['type=grpc', 'type'],
    ['type=HTTP', 'type'],
    ['health=sick', 'health'],
    ['health=', 'health'],
    ['type=http&type=stdio', 'type'],
  ])('?%s is 400 on %s', async (query, field) => {
    const client = await freshClient(suite.served);
    await seed(client, 1);
    expectInvalid(await client.get(`/servers?${query}`), field);
  });

  it('several bad parameters are each named in issues', async () => {
    const client = await freshClient(suite.served);
    const details = expectInvalid(await client.get('/servers?page=0&limit=500&x=1'), 'page');
    expect(details.issues.map((i: { field: string }) => i.field).sort()).toEqual(['limit', 'page', 'x']);
  });

  it('filters by type and health; totals follow the filter', async () => {
    const client = await freshClient(suite.served);
    clock += 1000;
    const h1 = await createServer(client, httpServer());
    clock += 1000;
    const w1 = await createServer(client, wsServer());
    clock += 1000;
    const s1 = await createServer(client, stdioServer());
    clock += 1000;
    const h2 = await createServer(client, httpServer());
    const ids = async (q: string) => {
      const p = await page(client, q);
      expect(p.pagination.total).toBe(p.data.length);
      return p.data.map((s) => s.id);
    };
    expect(await ids('?type=http')).toEqual([h1.id, h2.id]);
    expect(await ids('?type=websocket')).toEqual([w1.id]);
    expect(await ids('?type=stdio')).toEqual([s1.id]);
    expect(await ids('?health=unknown')).toEqual([h1.id, w1.id, s1.id, h2.id]);
    expect(await ids('?health=healthy')).toEqual([]);
    expect(await ids('?health=unhealthy')).toEqual([]);
    expect(await ids('?type=http&health=unknown')).toEqual([h1.id, h2.id]);
    expect(await ids('?type=websocket&health=healthy')).toEqual([]);
    const paged = await page(client, '?type=http&limit=1&page=2');
    expect(paged.data.map((s) => s.id)).toEqual([h2.id]);
    expect(paged.pagination).toEqual({ page: 2, limit: 1, total: 2, pages: 2 });
    // a type change moves the server between filtered listings
    clock += 1000;
    expectSuccess(await client.put(`/servers/${h1.id}`, { type: 'websocket', endpoint: 'wss://x.example.com' }), 200);
    expect(await ids('?type=http')).toEqual([h2.id]);
    expect(await ids('?type=websocket')).toEqual([h1.id, w1.id]);
    // a deleted server leaves every listing
    expectSuccess(await client.delete(`/servers/${w1.id}`), 200);
    expect(await ids('?type=websocket')).toEqual([h1.id]);
    expect(await ids('?health=unknown')).toEqual([h1.id, s1.id, h2.id]);
  });

  describe('/tool-calls', () => {
    it.each([
      ['page=0', 'page'],
      ['page=abc', 'page'],
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['page=1&page=1', 'page'],
      ['type=http', 'type'],
    ])('?%s is 400 on %s', async (query, field) => {
      const client = await freshClient(suite.served);
      expectInvalid(await client.get(`/tool-calls?${query}`), field);
    });

    it('valid page and limit are echoed in pagination', async () => {
      const client = await freshClient(suite.served);
      const res = await client.get('/tool-calls?page=2&limit=100');
      expect(expectSuccess(res, 200)).toEqual([]);
      expect(res.body.pagination).toEqual({ page: 2, limit: 100, total: 0, pages: 0 });
    });
  });
});
