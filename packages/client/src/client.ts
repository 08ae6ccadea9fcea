import type { RateLimit } from './errors.js';
import type { paths } from './generated/openapi.js';
import { type CallOptions, type ClientOptions, createTransport, type Method, type Transport } from './transport.js';

/** The paths that answer `method`. */
export type PathOf<M extends Method> = { [P in keyof paths]: paths[P][Lowercase<M>] extends { responses: unknown } ? P : never }[keyof paths];

/** The document's operation at `method` `path`. */
export type OperationAt<M extends Method, P extends PathOf<M>> = paths[P][Lowercase<M>];

/** The success envelope of an operation (its 2xx JSON). */
type SuccessBody<O> = O extends { responses: infer R }
  ? { [S in keyof R]: S extends 200 | 201 | 202 ? (R[S] extends { content: { 'application/json': infer B } } ? B : never) : never }[keyof R]
  : never;

/** What a method resolves to: the envelope's `data`, or `{ data, pagination }` for a listing. */
export type Result<O> = SuccessBody<O> extends { data: infer D; pagination: infer P } ? { data: D; pagination: P } : SuccessBody<O> extends { data: infer D } ? D : never;

/** The JSON body an operation takes. */
export type Body<O> = O extends { requestBody: { content: { 'application/json': infer B } } } ? B : never;

/** Query parameters an operation reads; integers (`page`, `limit`) may be given as numbers. */
export type Query<O> = O extends { parameters: { query?: infer Q } } ? ([NonNullable<Q>] extends [never] ? never : { [K in keyof NonNullable<Q>]?: NonNullable<Q>[K] | (string extends NonNullable<Q>[K] ? number : never) }) : never;

/** One string per `{param}` of the path template, in order. */
type PathArgs<P> = P extends `${string}{${string}}${infer Rest}` ? [string, ...PathArgs<Rest>] : [];

/** What an operation reads from its caller: a body, an optional query, or nothing. */
export type InputOf<O> = [Body<O>] extends [never] ? ([Query<O>] extends [never] ? 'none' : 'query') : 'body';

type InputArgs<O> = InputOf<O> extends 'body' ? [body: Body<O>] : InputOf<O> extends 'query' ? [query?: Query<O>] : [];

/** A method of the client: the path's ids, then the body or query, then {@link CallOptions}. */
export type Endpoint<M extends Method, P extends PathOf<M>> = (...args: [...PathArgs<P>, ...InputArgs<OperationAt<M, P>>, options?: CallOptions]) => Promise<Result<OperationAt<M, P>>>;

/** A listing (its answer has `pagination`), which `paginate` walks. */
export type Listing<Item = unknown> = ((...args: never[]) => Promise<{ data: Item[]; pagination: { page: number; pages: number } }>) & { readonly [LISTING]?: Described };

/** Where a listing's query sits among its arguments. */
interface Described {
  ids: number;
}

const LISTING = Symbol.for('mcp-fleet.client.listing');

/**
 * The methods of the API, each one line: its method, its path (checked against the document's `paths`), and what it
 * reads (`'body'`, `'query'` or `'none'`, which the types also check). A new route is a new line here.
 */
function operations(endpoint: <M extends Method, P extends PathOf<M>>(method: M, path: P, input: InputOf<OperationAt<M, P>>) => Endpoint<M, P>) {
  return {
    servers: {
      list: endpoint('GET', '/servers', 'query'),
      create: endpoint('POST', '/servers', 'body'),
      get: endpoint('GET', '/servers/{id}', 'none'),
      update: endpoint('PUT', '/servers/{id}', 'body'),
      delete: endpoint('DELETE', '/servers/{id}', 'none'),
      health: endpoint('GET', '/servers/{id}/health', 'none'),
      healthHistory: endpoint('GET', '/servers/{id}/health/history', 'none'),
    },
    tools: {
      list: endpoint('GET', '/servers/{id}/tools', 'none'),
      call: endpoint('POST', '/servers/{id}/tools/call', 'body'),
    },
    toolCalls: {
      list: endpoint('GET', '/tool-calls', 'query'),
      get: endpoint('GET', '/tool-calls/{id}', 'none'),
    },
    webhooks: {
      list: endpoint('GET', '/webhooks', 'query'),
      create: endpoint('POST', '/webhooks', 'body'),
      get: endpoint('GET', '/webhooks/{id}', 'none'),
      update: endpoint('PUT', '/webhooks/{id}', 'body'),
      delete: endpoint('DELETE', '/webhooks/{id}', 'none'),
      test: endpoint('POST', '/webhooks/{id}/test', 'none'),
      deliveries: endpoint('GET', '/webhooks/{id}/deliveries', 'query'),
    },
  };
}

export type FleetClient = ReturnType<typeof operations> & {
  /**
   * Every item of a listing, page after page: `for await (const server of client.paginate(client.servers.list, { health: 'healthy' }))`.
   * Takes the listing's own arguments; starts at the query's `page` (default 1).
   */
  paginate<F extends Listing>(listing: F, ...args: Parameters<F>): AsyncIterableIterator<Awaited<ReturnType<F>>['data'][number]>;
  /** The `X-RateLimit-*` headers of the latest answer that carried them (`undefined` while rate limits are off). */
  readonly lastRateLimit: RateLimit | undefined;
};

/** A typed client of a fleet's HTTP API (docs/client.md). */
export function createClient(options: ClientOptions): FleetClient {
  const transport: Transport = createTransport(options);
  const endpoint = <M extends Method, P extends PathOf<M>>(method: M, path: P, input: InputOf<OperationAt<M, P>>): Endpoint<M, P> => {
    const ids = path.split('{').length - 1;
    const call = (...args: unknown[]) => {
      let i = 0;
      const filled = path.replace(/\{[^}]+\}/g, () => {
        const id = args[i++];
        if (typeof id !== 'string' || id === '') throw new TypeError(`${method} ${path}: argument ${i} must be a non-empty id string, got ${JSON.stringify(id)}`);
        return encodeURIComponent(id);
      });
      const given = input === 'none' ? undefined : args[ids];
      const options = args[input === 'none' ? ids : ids + 1] as CallOptions | undefined;
      return transport.send({
        method,
        path: filled,
        query: input === 'query' ? (given as Record<string, unknown> | undefined) : undefined,
        body: input === 'body' ? given : undefined,
        options,
      });
    };
    if (input === 'query') Object.defineProperty(call, LISTING, { value: { ids } satisfies Described });
    return call as unknown as Endpoint<M, P>;
  };

  async function* paginate(listing: Listing, ...args: unknown[]): AsyncIterableIterator<unknown> {
    const described = listing[LISTING];
    if (described === undefined) throw new TypeError('paginate: pass a listing of this client, such as client.servers.list');
    const query = { ...(args[described.ids] as Record<string, unknown> | undefined) };
    let page = Number(query.page ?? 1);
    for (;;) {
      const rest = [...args];
      rest[described.ids] = { ...query, page };
      const { data, pagination } = await (listing as (...a: unknown[]) => ReturnType<Listing>)(...rest);
      yield* data;
      if (data.length === 0 || page >= pagination.pages) return;
      page += 1;
    }
  }

  return Object.defineProperties(operations(endpoint), {
    paginate: { value: paginate, enumerable: true },
    lastRateLimit: { get: () => transport.lastRateLimit, enumerable: true },
  }) as FleetClient;
}
