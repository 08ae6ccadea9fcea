import type { Scope, Tier } from '@mcp-fleet/core';
import { afterAll, beforeAll, expect } from 'vitest';
import { type Adapter, type Served, type ServeOptions, serveFleet } from './adapters.js';

/** Parsed JSON of a response; tests read it freely. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;

export interface ApiResponse {
  status: number;
  headers: Headers;
  /** The parsed JSON body, or `undefined` when the body is not JSON. */
  body: Json;
  /** The raw body text. */
  text: string;
}

export interface RequestOptions {
  /** A JSON value (serialized with `application/json`), or a raw string / bytes / stream sent as is. */
  body?: unknown;
  /** Send `body` exactly as given (string, Uint8Array or ReadableStream), without JSON serialization. */
  raw?: boolean;
  headers?: Record<string, string>;
  /** Overrides the client's key for this request; `null` sends no Authorization header. */
  key?: string | null;
}

export interface ApiClient {
  /** The secret of the key this client sends, if any. */
  readonly key: string | null;
  request(method: string, path: string, options?: RequestOptions): Promise<ApiResponse>;
  get(path: string, options?: RequestOptions): Promise<ApiResponse>;
  post(path: string, body?: unknown, options?: RequestOptions): Promise<ApiResponse>;
  put(path: string, body?: unknown, options?: RequestOptions): Promise<ApiResponse>;
  delete(path: string, options?: RequestOptions): Promise<ApiResponse>;
}

/** Sends one request to `url` + `path` and reads the whole answer. */
export async function send(url: string, method: string, path: string, options: RequestOptions = {}, key: string | null = null): Promise<ApiResponse> {
  const headers: Record<string, string> = {};
  const effectiveKey = options.key === undefined ? key : options.key;
  if (effectiveKey !== null) headers.authorization = `Bearer ${effectiveKey}`;
  const init: RequestInit & { duplex?: 'half' } = { method };
  if (options.body !== undefined) {
    if (options.raw === true) {
      init.body = options.body as NonNullable<RequestInit['body']>;
      if (options.body instanceof ReadableStream) init.duplex = 'half';
    } else {
      init.body = JSON.stringify(options.body);
      headers['content-type'] = 'application/json';
    }
  }
  init.headers = { ...headers, ...options.headers };
  const response = await fetch(url + path, init);
  const text = await response.text();
  let body: Json;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: response.status, headers: response.headers, body, text };
}

/** A tiny client of one served fleet (or a reference server process: its `url`) that authenticates with `key` (or not at all with `null`). */
export function api(served: Pick<Served, 'url'>, key: string | null): ApiClient {
  const request = (method: string, path: string, options: RequestOptions = {}) => send(served.url, method, path, options, key);
  return {
    key,
    request,
    get: (path, options) => request('GET', path, options),
    post: (path, body, options = {}) => request('POST', path, body === undefined ? options : { ...options, body }),
    put: (path, body, options = {}) => request('PUT', path, body === undefined ? options : { ...options, body }),
    delete: (path, options) => request('DELETE', path, options),
  };
}

/** Issues an API key through the core API and returns its secret. */
export async function createKey(served: Served, input: { account: string; tier?: Tier; scopes?: Scope[] }): Promise<string> {
  const created = await served.fleet.keys.create({ tier: 'pro', ...input });
  return created._unsafeUnwrap().secret;
}

let accounts = 0;

/** A client for an account no other test uses, with a key that has every scope (unless `scopes` is given). */
export async function freshClient(served: Served, scopes?: Scope[]): Promise<ApiClient & { account: string }> {
  accounts += 1;
  const account = `acct-${accounts}-${Math.random().toString(36).slice(2, 8)}`;
  const key = await createKey(served, scopes === undefined ? { account } : { account, scopes });
  return Object.assign(api(served, key), { account });
}

/**
 * Serves a fleet with `adapter` for the enclosing describe block (started in beforeAll, closed in afterAll).
 * Read `.served` inside tests.
 */
export function serveForSuite(adapter: Adapter, options: ServeOptions = {}): { readonly served: Served } {
  let current: Served | undefined;
  beforeAll(async () => {
    current = await serveFleet(adapter, options);
  });
  afterAll(async () => {
    await current?.close();
    current = undefined;
  });
  return {
    get served(): Served {
      if (current === undefined) throw new Error('the fleet is not served yet');
      return current;
    },
  };
}

let names = 0;
/** A server name no other test uses. */
export function uniqueName(stem = 'server'): string {
  names += 1;
  return `${stem}-${names}-${Math.random().toString(36).slice(2, 8)}`;
}

/** A valid create body for an http server. */
export function httpServer(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { name: uniqueName('http'), type: 'http', endpoint: 'https://mcp.example.com/mcp', ...overrides };
}

/** A valid create body for a websocket server. */
export function wsServer(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { name: uniqueName('ws'), type: 'websocket', endpoint: 'wss://mcp.example.com/ws', ...overrides };
}

/** A valid create body for a stdio server (the fleet must allow `node`). */
export function stdioServer(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { name: uniqueName('stdio'), type: 'stdio', command: 'node', args: ['server.js'], ...overrides };
}

export const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
export const SERVER_ID = /^srv_[0-9A-Za-z]{24}$/;
export const GENERATED_REQUEST_ID = /^req_[0-9A-Za-z]{24}$/;

export const SUMMARY_FIELDS = ['created_at', 'endpoint', 'health', 'id', 'name', 'status', 'type', 'updated_at'];
export const DETAIL_FIELDS = [
  ...SUMMARY_FIELDS,
  'args',
  'authentication',
  'command',
  'env_keys',
  'heartbeat',
  'retry',
  'timeout',
  'working_directory',
].sort();

/** A server id of the right form that no server has. */
export const UNKNOWN_SERVER_ID = 'srv_000000000000000000000000';

/** Checks `meta` and that the `X-Request-Id` header equals `meta.request_id`. */
export function expectMeta(res: ApiResponse): void {
  expect(res.body, `not a JSON body: ${res.text.slice(0, 200)}`).toBeTypeOf('object');
  expect(Object.keys(res.body.meta).sort()).toEqual(['request_id', 'timestamp']);
  expect(res.body.meta.timestamp).toMatch(ISO_MS);
  expect(typeof res.body.meta.request_id).toBe('string');
  expect(res.headers.get('x-request-id')).toBe(res.body.meta.request_id);
}

/** A success envelope with `status`; returns `data`. */
export function expectSuccess(res: ApiResponse, status: number): Json {
  expect(res.status, res.text.slice(0, 500)).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect(res.body.success).toBe(true);
  const keys = Object.keys(res.body).sort();
  expect(keys).toEqual(res.body.pagination === undefined ? ['data', 'meta', 'success'] : ['data', 'meta', 'pagination', 'success']);
  expectMeta(res);
  return res.body.data;
}

/** An error envelope with `status` and `code`; `details`, when given, must equal `error.details` exactly. */
export function expectError(res: ApiResponse, status: number, code: string, details?: Record<string, unknown>): Json {
  expect(res.status, res.text.slice(0, 500)).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect(Object.keys(res.body).sort()).toEqual(['error', 'meta', 'success']);
  expect(res.body.success).toBe(false);
  expect(Object.keys(res.body.error).sort()).toEqual(['code', 'details', 'message']);
  expect(res.body.error.code).toBe(code);
  expect(typeof res.body.error.message).toBe('string');
  expect(res.body.error.message.length).toBeGreaterThan(0);
  expect(res.body.error.details).toBeTypeOf('object');
  if (details !== undefined) expect(res.body.error.details).toEqual(details);
  expectMeta(res);
  return res.body.error.details;
}

/** A 400 INVALID_REQUEST whose first issue (details.field) is `field`. */
export function expectInvalid(res: ApiResponse, field: string): Json {
  const details = expectError(res, 400, 'INVALID_REQUEST');
  expect(details.field).toBe(field);
  expect(typeof details.issue).toBe('string');
  if (details.issues !== undefined) {
    expect(details.issues.length).toBeGreaterThan(1);
    expect(details.issues[0]).toEqual({ field: details.field, issue: details.issue });
  }
  return details;
}

/** Creates a server over HTTP and returns the create response's data. */
export async function createServer(client: ApiClient, body: Record<string, unknown> = httpServer()): Promise<Json> {
  return expectSuccess(await client.post('/servers', body), 201);
}

/** `pagination.total` of the client's account listing. */
export async function total(client: ApiClient, query = ''): Promise<number> {
  const res = await client.get(`/servers${query}`);
  expectSuccess(res, 200);
  return res.body.pagination.total;
}

/**
 * Waits, when less than 10 s of the current minute are left, for the next minute: a burst that must fall in one
 * fixed rate-limit window (aligned to the minute) starts early in one.
 */
export async function earlyInAMinute(): Promise<void> {
  const intoMinute = Date.now() % 60_000;
  if (intoMinute > 50_000) await new Promise((resolve) => setTimeout(resolve, 60_500 - intoMinute));
}
