// The spec and the code cannot disagree (issue 28): requests derived from the served OpenAPI document's own schemas,
// valid and then broken in one place, on every operation the document lists, through both adapters. Each answer is
// a success or a 4xx (a 5xx only with an upstream's code, where the document lists it), matches the document, and a
// refused request changes nothing the account can see. test/support/fuzz.ts: FUZZ_RUNS, FUZZ_SEED, `npm run fuzz`.
import { createMemoryStore, SCOPES } from '@mcp-fleet/core';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { categoryOf, isErrorCode } from '../../packages/core/src/errors/codes.js';
import { refusedPort } from '../../packages/core/src/mcp/fixtures/listen.js';
import { startV2ToolServer, type ToolServer } from '../../packages/core/src/mcp/fixtures/tool-servers.js';
import { ADAPTERS, type Served, serveFleet } from '../support/adapters.js';
import { resolvedAnswer, schemaValidator, takeMismatches } from '../support/answer-check.js';
import { fuzzRuns, fuzzSeed, fuzzTimeout } from '../support/fuzz.js';
import { type ApiResponse, type Json, send, serveForSuite } from '../support/http-client.js';
import { bodyText, type Hint, MUTATIONS, mutate, PROTOTYPE_KEYS, type Schema, SchemaArbitraries } from '../support/schema-arbitrary.js';

/** Runs per operation. */
const RUNS = fuzzRuns(6);
/** Runs per mutating operation under real limits: the first may pass, the rest are 429s. */
const LIMITED_RUNS = Math.max(3, Math.ceil(RUNS / 2));
const SEED = fuzzSeed(2828);
const params = (runs: number) => ({ seed: SEED, numRuns: runs, endOnFailure: true });

/** One operation of the document, as the fuzz reads it. */
interface Op {
  method: string;
  /** The document's path template: `/servers/{id}/tools`. */
  template: string;
  name: string;
  pathParams: string[];
  query: { name: string; schema: Schema }[];
  body: Schema | undefined;
  /** The listing whose resources a path parameter names: `/servers` for `/servers/{id}/tools`. */
  collection: string | undefined;
  /** The success status and its schema. */
  success: { status: number; schema: Schema };
}

function operationsOf(document: Json): Op[] {
  const ops: Op[] = [];
  for (const [template, item] of Object.entries(document.paths as Record<string, Record<string, Json>>)) {
    for (const [method, operation] of Object.entries(item)) {
      const parameters = (operation.parameters ?? []) as Json[];
      // The parameter's description is the rule its schema cannot say (an integer's range): the hints read it there.
      const withDescription = (p: Json): Schema => ({ ...p.schema, ...(p.description === undefined ? {} : { description: p.description }) });
      const [status, answer] = Object.entries(operation.responses as Record<string, Json>).find(([s]) => Number(s) < 300) as [string, Json];
      ops.push({
        method: method.toUpperCase(),
        template,
        name: operation.operationId,
        pathParams: parameters.filter((p) => p.in === 'path').map((p) => p.name),
        query: parameters.filter((p) => p.in === 'query').map((p) => ({ name: p.name, schema: withDescription(p) })),
        body: operation.requestBody?.content?.['application/json']?.schema,
        collection: template.includes('/{') ? template.slice(0, template.indexOf('/{')) : undefined,
        success: { status: Number(status), schema: resolvedAnswer(document, answer).content['application/json'].schema },
      });
    }
  }
  return ops;
}

/**
 * The rules the document writes in prose, read from it: a URL's schemes (pointed at the local MCP fixture, or at a
 * refused port: never a real upstream), a query integer's range.
 */
function hintsFor(upstream: ToolServer, refused: number): Hint {
  const url = (scheme: string): fc.Arbitrary<string> => {
    if (scheme === 'http') return fc.constantFrom(upstream.url, upstream.url, `http://127.0.0.1:${refused}/mcp`);
    // Not fc.webPath(): its first use costs seconds, long enough for a kept-alive socket to the fleet to time out.
    const path = fc.array(fc.constantFrom('hook', 'a.b', '%20', '..', '~x', ''), { maxLength: 3 }).map((parts) => `/${parts.join('/')}`);
    return path.map((p) => `${scheme}://127.0.0.1:${refused}${p}`);
  };
  return (schema) => {
    const text = String(schema.description ?? '');
    const named = /absolute URL of the (\w+) or (\w+) scheme/.exec(text) ?? /absolute (\w+)(?: or (\w+))? URL/.exec(text);
    const schemes = /absolute URL of any scheme/.test(text) ? ['http'] : named?.slice(1).filter((s) => s !== undefined);
    if (schemes !== undefined && schema.type === 'string') return fc.constantFrom(...schemes).chain(url);
    // An import's document: an MCP client's config of a few servers (the fixture's URL, a stdio command the fleet's
    // allowlist may refuse, a name to make valid), as its JSON object or its text.
    if (text.startsWith("The file's text as it is")) {
      const entry = fc.oneof(
        fc.constant({ url: upstream.url }),
        fc.constant({ command: 'node', args: ['server.js'] }),
        fc.constant({ url: `http://127.0.0.1:${refused}/mcp`, headers: { Authorization: 'Bearer ${TOKEN}' } }),
      );
      const config = fc.dictionary(fc.constantFrom('docs', 'search', 'my server', 'a__b', 'x'), entry, { minKeys: 1, maxKeys: 3 }).map((mcpServers) => ({ mcpServers }));
      return fc.oneof(config, config.map((document) => JSON.stringify(document, null, 2)));
    }
    const range = /An integer from (\d+) to (\d+)/.exec(text) ?? /An integer of at least (\d+)/.exec(text);
    if (range !== null) {
      const min = Number(range[1]);
      return fc.integer({ min, max: range[2] === undefined ? min + 1000 : Number(range[2]) }).map(String);
    }
    return undefined;
  };
}

/** The id of what a create answered: `data.id`, or that of the one object in `data` that has one (a key beside its secret). */
function createdId(data: Json): string | undefined {
  if (typeof data?.id === 'string') return data.id;
  const inner = Object.values((data ?? {}) as Record<string, Json>).filter((value) => typeof value?.id === 'string');
  return inner.length === 1 ? inner[0].id : undefined;
}

/** Ids of a known form that no resource has, and ids no route accepts. */
const ABSENT = (real: string) => real.replace(/[0-9A-Za-z]{8}$/, '00000000');
const GARBAGE_IDS = ['', '%00', '..', '%2e%2e', '__proto__', 'constructor', 'prototype', '%2F', '%E2%82', 'a'.repeat(3000), '%F0%9F%9B%B0', ' ', 'srv_', '1e400'];

/** How a request is broken, beyond its body's value. */
const TEXT_MUTATIONS = ['invalid-json', 'wrong-content-type', 'not-an-object', 'empty', 'no-content-type'] as const;
const QUERY_MUTATIONS = ['duplicate', 'unknown', 'prototype-key', 'invalid-value', 'array-form', 'huge-number'] as const;

/** A request's body, its content type, and what was broken in it. */
interface Body {
  body?: string;
  contentType?: string;
  broken: string[];
}

interface Request {
  path: string;
  query: string;
  body?: string;
  contentType?: string;
  /** What was broken, for the report. */
  broken: string[];
}

describe.each(ADAPTERS)('requests from the OpenAPI document ($name)', (adapter) => {
  let upstream: ToolServer;
  let refused = 0;
  beforeAll(async () => {
    upstream = await startV2ToolServer();
    refused = await refusedPort();
  });
  afterAll(async () => {
    await upstream?.close();
  });

  // Rate limits off (serveFleet's default): the fuzz is not all 429s; the last test turns them on. Loopback
  // destinations allowed, for the fixture; quick retries; onError quiet for the upstream's expected refusals.
  const fleetOptions = { webhooks: { worker: false }, allowPrivateNetworks: true, toolCalls: { backoff: { baseMs: 1, maxMs: 5 } }, onError: () => undefined } as const;
  const suite = serveForSuite(adapter, fleetOptions);

  /** Everything a run needs, made once per fleet. */
  interface World {
    served: Served;
    /** The fuzz's own key (every scope), and its id: never deleted. */
    key: string;
    keyId: string;
    document: Json;
    ops: Op[];
    arbitraries: SchemaArbitraries;
    /** A real id per collection: `/servers` → `srv_…`. */
    ids: Map<string, string>;
    /** Answers seen, by operation: `servers.create 201`, `servers.create INVALID_REQUEST`. */
    seen: Set<string>;
    /** The body each seeded resource was created with, by collection. */
    seedBodies: Map<string, unknown>;
    /** The account's state, when no request changed it since it was taken. */
    unchanged?: string | undefined;
  }

  async function world(served: Served, account: string): Promise<World> {
    // Every scope, keys:manage included (a key without a list lacks it), so that /keys is fuzzed too.
    const { key: made, secret: key } = (await served.fleet.keys.create({ account, tier: 'pro', scopes: [...SCOPES] }))._unsafeUnwrap();
    const res = await send(served.url, 'GET', '/openapi.json');
    expect(res.status, res.text.slice(0, 300)).toBe(200);
    const document = res.body;
    const ops = operationsOf(document);
    const w: World = { served, key, keyId: made.id, document, ops, arbitraries: new SchemaArbitraries(document, hintsFor(upstream, refused)), ids: new Map(), seen: new Set(), seedBodies: new Map() };
    await seed(w);
    return w;
  }

  const call = (w: World, method: string, path: string, body?: unknown) => send(w.served.url, method, path, body === undefined ? {} : { body }, w.key);

  /** The operation that creates what `collection` lists (a POST on it with a body, answering 201), if any. */
  const creator = (w: World, collection: string) => w.ops.find((op) => op.method === 'POST' && op.template === collection && op.body !== undefined && op.success.status === 201);
  /** The operation that deletes one of `collection`, if any. */
  const deleter = (w: World, collection: string) => w.ops.find((op) => op.method === 'DELETE' && op.collection === collection && op.pathParams.length === 1 && op.template.endsWith('}'));

  /**
   * A real resource for each collection a path parameter names: made from the document's create schema (one that
   * points at the local MCP fixture first, so tools answer), or, for what no route creates (tool calls), the first
   * of its listing after one valid request to each POST below a resource (a tool call).
   */
  async function seed(w: World, only?: string): Promise<void> {
    const collections = [...new Set(w.ops.flatMap((op) => (op.collection === undefined ? [] : [op.collection])))].filter((c) => only === undefined || c === only);
    for (const collection of collections) {
      const op = creator(w, collection);
      if (op === undefined) continue;
      // The body that made the last one, first: a seeded resource deleted by the fuzz comes back in one request.
      const kept = w.seedBodies.get(collection);
      const samples = [...(kept === undefined ? [] : [kept]), ...fc.sample(w.arbitraries.valid(op.body as Schema), { seed: SEED, numRuns: 60 })];
      let chosen: { id: string; body: unknown } | undefined;
      for (const body of samples) {
        const res = await call(w, 'POST', collection, body);
        if (res.status !== op.success.status) continue;
        const id = createdId(res.body.data);
        expect(id, `POST ${collection} answered no id: ${res.text.slice(0, 300)}`).toBeDefined();
        const upstreamBody = JSON.stringify(body).includes(upstream.origin);
        if (chosen === undefined || upstreamBody) {
          if (chosen !== undefined) await undo(w, collection, chosen.id);
          chosen = { id: id as string, body };
        } else await undo(w, collection, id as string);
        if (upstreamBody || body === kept) break;
      }
      expect(chosen, `no body generated for POST ${collection} was created`).toBeDefined();
      w.ids.set(collection, (chosen as { id: string }).id);
      w.seedBodies.set(collection, (chosen as { body: unknown }).body);
    }
    if (only !== undefined) return;
    for (const op of w.ops.filter((o) => o.method === 'POST' && o.pathParams.length > 0)) {
      const path = fill(w, op, () => 'real');
      if (path === undefined) continue;
      const [body] = op.body === undefined ? [undefined] : fc.sample(w.arbitraries.valid(op.body), { seed: SEED, numRuns: 1 });
      await call(w, 'POST', path, body);
    }
    for (const collection of collections.filter((c) => !w.ids.has(c))) {
      const listed = await call(w, 'GET', collection);
      // Never the fuzz's own key, should a listing of keys be one of these: a DELETE would revoke it.
      const id = ((listed.body?.data ?? []) as { id?: unknown }[]).map((item) => item.id).find((item) => typeof item === 'string' && item !== w.keyId);
      if (typeof id === 'string') w.ids.set(collection, id);
    }
  }

  /** Deletes `id` of `collection` when a route can (a refusal, such as a key revoked before, is fine: no 5xx). */
  async function undo(w: World, collection: string, id: string): Promise<void> {
    const op = deleter(w, collection);
    if (op === undefined) return;
    const res = await call(w, 'DELETE', op.template.replace(/\{[^}]+\}/, encodeURIComponent(id)));
    expect(res.status, res.text.slice(0, 300)).toBeLessThan(500);
  }

  /** `op`'s path with its parameters filled, each the real id, an absent one or garbage; `undefined` without a real id. */
  function fill(w: World, op: Op, choose: (name: string) => 'real' | 'absent' | string): string | undefined {
    let missing = false;
    const path = op.template.replace(/\{([^}]+)\}/g, (_m, name: string) => {
      const real = op.collection === undefined ? undefined : w.ids.get(op.collection);
      const how = choose(name);
      if (how === 'real' || how === 'absent') {
        if (real === undefined) {
          missing = true;
          return '';
        }
        return encodeURIComponent(how === 'real' ? real : ABSENT(real));
      }
      return how;
    });
    return missing ? undefined : path;
  }

  /**
   * What the account can see: every listing of the document (GET without path parameters whose answer is paged),
   * and every read of one resource (GET ending in a parameter, or paged below one) of the seeded ids.
   */
  async function snapshot(w: World): Promise<string> {
    const parts: unknown[] = [];
    for (const op of w.ops.filter((o) => o.method === 'GET')) {
      const paged = op.success.schema.properties?.pagination !== undefined;
      const one = op.template.endsWith('}');
      if (!(paged || one)) continue;
      const path = fill(w, op, () => 'real');
      if (path === undefined) continue;
      const res = await call(w, 'GET', `${path}${paged && op.query.some((q) => q.name === 'limit') ? '?limit=100' : ''}`);
      parts.push(op.name, res.status, op.name.startsWith('keys.') ? withoutLastUse(res.body?.data) : res.body?.data, res.body?.pagination);
    }
    expect(takeMismatches()).toEqual([]);
    return JSON.stringify(parts);
  }

  /**
   * A key's data without `last_used_at`: the key's last use (to the minute) moves with every request made with it, a
   * refused one too, so a snapshot taken across a minute's turn would read it as a change the request made.
   */
  function withoutLastUse(data: unknown): unknown {
    if (Array.isArray(data)) return data.map(withoutLastUse);
    if (data === null || typeof data !== 'object') return data;
    const { last_used_at: _, ...key } = data as Record<string, unknown>;
    return key;
  }

  function bodyArbitrary(w: World, op: Op): fc.Arbitrary<Body> {
    if (op.body === undefined) {
      // A route that reads no body: none, or one it must ignore or refuse (fetch sends none with a GET).
      const none = fc.constant<Body>({ broken: [] });
      if (op.method === 'GET') return none;
      return fc.oneof(
        { weight: 3, arbitrary: none },
        { weight: 1, arbitrary: fc.constantFrom('{}', '{"__proto__":{"polluted":true}}', '[', 'x'.repeat(70_000)).map((body): Body => ({ body, contentType: 'application/json', broken: ['unexpected-body'] })) },
      );
    }
    const schema = op.body;
    const validate = schemaValidator(w.document, schema);
    const valid = w.arbitraries.valid(schema).map((value) => {
      // The generator's own check: what it calls valid, the document accepts.
      expect(validate(value), `generated for ${op.name}, not valid: ${JSON.stringify(value).slice(0, 300)} ${JSON.stringify(validate.errors)}`).toBe(true);
      return value;
    });
    const broken = valid.chain((value) => {
      const sites = w.arbitraries.sites(value, schema);
      return fc.tuple(fc.constantFrom(...sites), fc.constantFrom(...MUTATIONS), fc.nat()).map(([site, mutation, pick]) => {
        const mutated = mutate(value, site, mutation, pick);
        return mutated === undefined ? { value, broken: [] } : { value: mutated, broken: [`${mutation} at /${site.path.join('/')}`] };
      });
    });
    const text = fc.tuple(valid, fc.constantFrom(...TEXT_MUTATIONS), fc.nat()).map(([value, mutation, pick]) => {
      const json = bodyText(value);
      switch (mutation) {
        case 'invalid-json':
          return { body: [json.slice(0, pick % Math.max(1, json.length)), `${json},`, `${json}}`, json.replace(/:/, ''), `{'a':1}`][pick % 5], contentType: 'application/json', broken: [mutation] };
        case 'wrong-content-type':
          return { body: json, contentType: ['text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=latin1', 'application/jsonx', 'multipart/form-data; boundary=x'][pick % 5], broken: [mutation] };
        case 'not-an-object':
          return { body: ['[]', '"text"', 'null', '1', 'true', `[${json}]`][pick % 6], contentType: 'application/json', broken: [mutation] };
        case 'empty':
          return { body: '', contentType: 'application/json', broken: [mutation] };
        case 'no-content-type':
          return { body: json, broken: [mutation] };
      }
    });
    return fc.oneof(
      { weight: 3, arbitrary: valid.map((value) => ({ body: bodyText(value), contentType: 'application/json', broken: [] as string[] })) },
      { weight: 5, arbitrary: broken.map(({ value, broken: what }) => ({ body: bodyText(value), contentType: 'application/json', broken: what })) },
      { weight: 2, arbitrary: text },
    );
  }

  function queryArbitrary(w: World, op: Op): fc.Arbitrary<{ query: string; broken: string[] }> {
    const pairs = fc.tuple(...op.query.map((q) => fc.option(w.arbitraries.valid(q.schema).map((v) => [q.name, String(v)] as [string, string]), { nil: undefined })));
    const valid = (op.query.length === 0 ? fc.constant([] as [string, string][]) : pairs.map((ps) => ps.filter((p) => p !== undefined)));
    const encode = (ps: [string, string][]) => (ps.length === 0 ? '' : `?${ps.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&')}`);
    const names = op.query.length === 0 ? ['page'] : op.query.map((q) => q.name);
    const broken = fc.tuple(valid, fc.constantFrom(...QUERY_MUTATIONS), fc.constantFrom(...names), fc.nat()).map(([ps, mutation, name, pick]) => {
      const value = ps.find(([k]) => k === name)?.[1] ?? '1';
      const choose = <T>(options: readonly T[]) => options[pick % options.length] as T;
      const rawPart = (() => {
        switch (mutation) {
          case 'duplicate':
            return `${name}=${encodeURIComponent(value)}&${name}=${encodeURIComponent(value)}`;
          case 'unknown':
            return choose(['unexpected=1', 'x'.repeat(300), '=1', '&&', 'a=b=c']);
          case 'prototype-key':
            return `${choose(PROTOTYPE_KEYS)}=${choose(['1', name, '{}'])}`;
          case 'invalid-value':
            return `${name}=${choose(['', 'abc', '-1', '0', '1.5', '0x10', '%zz', '%00', '%E2%82', ' 1', 'q'.repeat(5000), 'NaN'])}`;
          case 'array-form':
            return `${name}[]=${encodeURIComponent(value)}&${name}[0]=1`;
          case 'huge-number':
            return `${name}=${choose(['99999999999999999999', '9007199254740993', '1e400', '-9007199254740993'])}`;
        }
      })();
      const head = encode(ps);
      return { query: `${head}${head === '' ? '?' : '&'}${rawPart}`, broken: [`query ${mutation} ${name}`] };
    });
    return fc.oneof({ weight: 3, arbitrary: valid.map((ps) => ({ query: encode(ps), broken: [] as string[] })) }, { weight: 1, arbitrary: broken });
  }

  function requestArbitrary(w: World, op: Op): fc.Arbitrary<Request | undefined> {
    const id = fc.oneof({ weight: 6, arbitrary: fc.constant('real') }, { weight: 2, arbitrary: fc.constant('absent') }, { weight: 2, arbitrary: fc.constantFrom(...GARBAGE_IDS) });
    const ids = fc.array(id, { minLength: op.pathParams.length, maxLength: op.pathParams.length });
    return fc.tuple(ids, queryArbitrary(w, op), bodyArbitrary(w, op)).map(([how, query, body]) => {
      let i = 0;
      const path = fill(w, op, () => how[i++] as string);
      if (path === undefined) return undefined;
      const broken = [...how.filter((h) => h !== 'real').map((h) => `id ${h.slice(0, 20)}`), ...query.broken, ...body.broken];
      return { path, query: query.query, ...(body.body === undefined ? {} : { body: body.body }), ...(body.contentType === undefined ? {} : { contentType: body.contentType }), broken };
    });
  }

  /** Sends one request and holds its answer to the document; a refused one changes nothing; a success is undone or re-seeded. */
  async function check(w: World, op: Op, request: Request, url = w.served.url): Promise<ApiResponse> {
    // A refused mutation changes nothing. Its before is the state after the last refused request, when nothing but
    // refusals ran since (a read that answered may have changed health).
    const mutation = op.method !== 'GET';
    const before = mutation ? (w.unchanged ?? (await snapshot(w))) : undefined;
    const headers: Record<string, string> = request.contentType === undefined ? {} : { 'content-type': request.contentType };
    const res = await send(url, op.method, `${request.path}${request.query}`, { body: request.body, raw: true, headers }, w.key);
    const code = res.body?.error?.code as string | undefined;
    const label = `${op.method} ${request.path.slice(0, 120)}${request.query.slice(0, 200)} [${request.broken.join(', ') || 'valid'}] ${(request.body ?? '').slice(0, 300)} -> ${res.status} ${res.text.slice(0, 400)}`;
    w.seen.add(`${op.name} ${code ?? res.status}`);
    // The document's judgement of the answer (answer-check, through the served fleet's checked handler).
    expect(takeMismatches(), label).toEqual([]);
    expect(res.headers.get('content-type') ?? '', label).toMatch(/^application\/json/);
    if (res.status >= 500) expect(code !== undefined && isErrorCode(code) && categoryOf(code) === 'upstream', `a 5xx that is not an upstream's: ${label}`).toBe(true);
    const refused = res.status >= 400 && res.status < 500;
    if (refused && before !== undefined) {
      expect(await snapshot(w), `a refused request changed the account: ${label}`).toBe(before);
      w.unchanged = before;
    } else if (!refused) w.unchanged = undefined;
    if (res.status < 300 && op.method !== 'GET') await settle(w, op);
    return res;
  }

  /**
   * After a success that changed something: a seeded resource it touched is replaced by a fresh one, and whatever
   * else it made (a created server, webhook or key, an import's servers) is deleted, so that every listing is back to
   * the seeded resources (and the fuzz's own key) and no quota fills. Tool-call records and deliveries stay: no route
   * deletes them, and the next request's snapshot counts them.
   */
  async function settle(w: World, op: Op): Promise<void> {
    if (op.collection !== undefined && op.method !== 'POST') {
      const id = w.ids.get(op.collection);
      if (id !== undefined && creator(w, op.collection) !== undefined) {
        await undo(w, op.collection, id);
        await seed(w, op.collection);
      }
    }
    for (const collection of w.ids.keys()) {
      if (creator(w, collection) === undefined || deleter(w, collection) === undefined) continue;
      const listed = await call(w, 'GET', collection);
      for (const item of (listed.body?.data ?? []) as { id: string }[]) {
        if (item.id !== w.ids.get(collection) && item.id !== w.keyId) await undo(w, collection, item.id);
      }
    }
  }

  let shared: World | undefined;
  async function theWorld(): Promise<World> {
    if (shared === undefined) {
      const account = `ofuzz-${adapter.name}-${Math.random().toString(36).slice(2, 8)}`;
      shared = await world(suite.served, account);
    }
    return shared;
  }

  it(`every operation of the document, valid and broken requests: a success or a 4xx that changes nothing, as documented (${RUNS} runs each)`, async () => {
    const w = await theWorld();
    const answersOf = (op: Op) => [...w.seen].filter((s) => s.startsWith(`${op.name} `)).map((s) => s.slice(op.name.length + 1));
    const covered = (op: Op) => answersOf(op).includes(String(op.success.status)) && answersOf(op).some((a) => !/^\d+$/.test(a));
    for (const op of w.ops) {
      // A few runs can draw no success or no refusal for some operation: then a few more, under the next seeds, so that
      // the coverage below holds whatever a new route does to the draws of the others.
      for (let round = 0; round === 0 || (round < 6 && !covered(op)); round++) {
        await fc.assert(
          fc.asyncProperty(requestArbitrary(w, op), async (r) => {
            fc.pre(r !== undefined);
            await check(w, op, r as Request);
          }),
          { ...params(RUNS), seed: SEED + round },
        );
      }
    }
    if (process.env.FUZZ_VERBOSE) console.log(adapter.name, [...w.seen].sort());
    // Each operation answered a success and a refusal: a fuzz that only ever got 400 (or only 200) proves little.
    for (const op of w.ops) {
      expect(answersOf(op), `${op.name}: no success`).toContain(String(op.success.status));
      expect(answersOf(op).some((a) => !/^\d+$/.test(a)), `${op.name}: no refusal`).toBe(true);
    }
  }, fuzzTimeout(RUNS * 20));

  it(`with real limits, a request refused 429 changes nothing (${LIMITED_RUNS} runs each mutating operation)`, async () => {
    // Two fleets on one store: the open one seeds and reads the account, the limited one (each mutating operation
    // once a minute) answers the fuzz.
    const { ops } = await theWorld();
    const mutating = ops.filter((op) => op.method !== 'GET');
    const store = createMemoryStore();
    const open = await serveFleet(adapter, { ...fleetOptions, store });
    const limited = await serveFleet(adapter, { ...fleetOptions, store, rateLimit: { tiers: { pro: 1_000_000 }, operations: Object.fromEntries(mutating.map((op) => [op.name, 1])) } });
    try {
      const account = `ofuzz-limits-${adapter.name}-${Math.random().toString(36).slice(2, 8)}`;
      const w = await world(open, account);
      for (const op of mutating) {
        await fc.assert(
          fc.asyncProperty(requestArbitrary(w, op), async (r) => {
            fc.pre(r !== undefined);
            const res = await check(w, op, r as Request, limited.url);
            if (res.status === 429) expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
          }),
          params(LIMITED_RUNS),
        );
        expect([...w.seen], `${op.name} was never limited`).toContain(`${op.name} RATE_LIMITED`);
      }
    } finally {
      await limited.close();
      await open.close();
      await store.close();
    }
  }, fuzzTimeout(RUNS * 20));
});
