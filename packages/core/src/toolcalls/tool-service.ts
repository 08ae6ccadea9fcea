import { type CallToolRequestOptions, type CallToolResult, type Client, type Progress, ProtocolError, specTypeSchemas, type Tool } from '@modelcontextprotocol/client';
import { err, errAsync, ok, okAsync, type Result, ResultAsync } from 'neverthrow';
import { toAsync } from '../util/result.js';
import { z } from 'zod';
import { errorChain, FleetError, isFleetError } from '../errors/fleet-error.js';
import type { Admission, CircuitBreaker } from '../health/breaker.js';
import type { HealthLog } from '../health/health-log.js';
import { timeoutError, toUpstreamError } from '../mcp/errors.js';
import type { ServerRegistry } from '../registry/registry.js';
import type { ServerRecord } from '../registry/views.js';
import { newId } from '../util/ids.js';
import { checkOption, positiveInteger } from '../util/options.js';
import { parse } from '../validation/parse.js';
import { isPlainObject } from '../validation/zod-issues.js';
import type { ConnectionPool, Lease } from './connection-pool.js';
import { type Listing, type ListingCache, type ListingItems, type ListingKind, readListing } from './listings.js';
import { type AttemptFailure, backoffDelay, type BackoffOptions, httpStatusOf, isRetrySafe, neverSent, type ToolHints } from './retry.js';
import { type ToolCallLog, type ToolCallPayload, type ToolCallRecord, toolCallRecordSchema, type ToolCallVia } from './tool-call-log.js';
import { namespacedTool, toolAllowed } from './tool-names.js';

/** An MCP tool as `tools/list` describes it: the SDK's schema of the spec type, the one there is. */
export const toolSchema = specTypeSchemas.Tool as unknown as z.ZodType<Tool>;

/** What `fleet.tools.call` answers: the record written, plus the MCP result when the tool answered. */
export const toolCallOutcomeSchema = z.strictObject({
  ...toolCallRecordSchema.shape,
  /** The MCP `tools/call` result (also when it is `isError`); `null` when no answer came. */
  result: (specTypeSchemas.CallToolResult as unknown as z.ZodType<CallToolResult>).nullable(),
});

export type ToolCallOutcome = z.output<typeof toolCallOutcomeSchema>;

/** Which parts of a call the log keeps besides its record. Both off by default: they may carry personal data. */
export interface ToolCallRecording {
  /** Keep the call's `arguments` with its record. @default false */
  arguments?: boolean;
  /** Keep the MCP result with its record. @default false */
  results?: boolean;
}

export interface ToolServiceDeps {
  registry: ServerRegistry;
  log: ToolCallLog;
  health: HealthLog;
  /** Calls to a server whose breaker is open fail fast (503 UPSTREAM_UNAVAILABLE) without reaching it. */
  breaker: CircuitBreaker;
  /** The half-open probe: probes the server now (a health check), true when it answered. */
  trial: (account: string, serverId: string) => ResultAsync<boolean, FleetError>;
  pool: ConnectionPool;
  /** The one cache of upstream listings, and their bounds: a call reads the tool's annotations from it. */
  listings: ListingCache;
  now: () => number;
  record?: ToolCallRecording;
  backoff?: BackoffOptions;
  /** Waits between attempts; tests may shorten it. @default setTimeout */
  sleep?: (ms: number) => Promise<void>;
  /** A call's attempts and waits together never take longer, in ms. @default 120000 */
  maxTotalMs?: number;
  /** Calls in flight at once per account (in this process); beyond, 429 with `scope: "concurrency"`. @default 32 */
  maxConcurrentPerAccount?: number;
}

/** How a call came in, and what its door wants to hear of it while it runs. */
export interface InvokeOptions {
  /** Recorded as the call's `via`. @default 'api' */
  via?: ToolCallVia;
  /**
   * The caller's tool allowlist (`Principal.tools`), matched against the namespaced name (`toolcalls/tool-names.ts`).
   * A tool outside it is refused before anything is sent or recorded: 403 `FORBIDDEN` with `details.tool`.
   * `null` or absent: every tool.
   */
  tools?: readonly string[] | null;
  /**
   * Told of every `notifications/progress` the upstream sends for this call, so a door can relay them to its own
   * caller. Absent, the call still carries a `progressToken` (a long tool may report progress instead of none); `null`
   * says no one will read it, and the call carries none: the MCP endpoint relays a call whose agent asked for no
   * progress as the agent sent it, and the upstream answers it without making progress for nobody.
   * @default none, with a `progressToken`
   */
  onprogress?: ((progress: Progress) => void) | null;
  /**
   * Aborting it cancels the call: the SDK sends the upstream `notifications/cancelled` and the attempt ends; the
   * record says `error`. @default none
   */
  signal?: AbortSignal;
  /**
   * The server's record as the caller has just read it from the registry for this account (the MCP endpoint resolves
   * a namespaced name through the account's servers): the call uses it instead of reading it again. It must be the
   * record of `serverId` in `account`; absent, the call reads it. @default none
   */
  server?: ServerRecord;
}

const MAX_TOOL_NAME = 256;
/**
 * A lone surrogate: a string no UTF-8 text holds. A tool name with one can name no tool, and cannot key the record's
 * listings (`encodeURIComponent` throws on it).
 */
const LONE_SURROGATE = /\p{Cs}/u;

/** What a call whose caller reads no progress is told of it: nothing (its `progressToken` is still sent). */
const ignoreProgress = () => {};

const sleepFor = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

type AttemptResult = { ok: true; result: CallToolResult } | { ok: false; rejected: boolean; failure: AttemptFailure };

/** The body of `tools/call`: `{ name, arguments? }`. The arguments go to the tool as sent, so they are not copied. */
export const callInputSchema = z.strictObject({
  name: z
    .string()
    .min(1)
    .max(MAX_TOOL_NAME)
    .refine((name) => !LONE_SURROGATE.test(name), 'must be well-formed Unicode (it holds a lone surrogate)')
    .describe('Well-formed Unicode.'),
  arguments: z
    .custom<Record<string, unknown>>(isPlainObject, 'must be a JSON object')
    // What JSON Schema says of it: a custom check renders as its metadata (`http/json-schema.ts`).
    .meta({ type: 'object', additionalProperties: true, description: "The tool's arguments, a JSON object." })
    .optional(),
});

type CallInput = z.output<typeof callInputSchema>;

/**
 * A body `callInputSchema` accepts, recognised without its walk (a call's hot path): only a name within its bounds
 * and arguments that are a plain object or absent. `undefined` for anything else, which the schema then judges and
 * phrases the issues of. Never accepts what the schema refuses (tool-service.test.ts checks the two agree).
 */
export function plainCallInput(body: unknown): CallInput | undefined {
  if (!isPlainObject(body)) return undefined;
  for (const key in body) if (key !== 'name' && key !== 'arguments') return undefined;
  const { name, arguments: args } = body;
  if (typeof name !== 'string' || name.length < 1 || name.length > MAX_TOOL_NAME || LONE_SURROGATE.test(name)) return undefined;
  if (args !== undefined && !isPlainObject(args)) return undefined;
  return body as CallInput;
}

/**
 * Tools of registered servers, through their proxy settings: the server's `timeout` per attempt, `retry` for
 * failures that are safe to repeat, its authentication, the kept connections of `ConnectionPool`.
 */
export class ToolService {
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly maxTotalMs: number;
  private readonly maxConcurrent: number;
  /** Calls in flight, by account. */
  private readonly live = new Map<string, number>();

  constructor(private readonly deps: ToolServiceDeps) {
    this.sleep = deps.sleep ?? sleepFor;
    this.maxTotalMs = checkOption('toolCalls.maxTotalMs', deps.maxTotalMs ?? 120_000, positiveInteger);
    this.maxConcurrent = checkOption('toolCalls.maxConcurrentPerAccount', deps.maxConcurrentPerAccount ?? 32, positiveInteger);
  }

  /** As {@link invoke}, for the embedder's typed `fleet.tools.call`. */
  call(account: string, serverId: string, name: string, args: Record<string, unknown>): ResultAsync<ToolCallOutcome, FleetError> {
    return this.invoke(account, serverId, { name, arguments: args }, { via: 'api' });
  }

  /**
   * Calls a tool and records the call; the `{ name, arguments }` body is parsed here, once per call. Upstream failures
   * are outcomes, not errors: the record says `error` (TOOL_ERROR when the tool answered `isError`,
   * TOOL_CALL_REJECTED for a JSON-RPC error, an upstream code otherwise) or `timeout`. Errors are the service's own:
   * unknown server, invalid input, storage.
   */
  invoke(account: string, serverId: string, body: unknown, options: InvokeOptions = {}): ResultAsync<ToolCallOutcome, FleetError> {
    const plain = plainCallInput(body);
    const input = plain === undefined ? parse(callInputSchema, body) : ok(plain);
    if (input.isErr()) return errAsync(input.error);
    const given = options.server;
    const { registry } = this.deps;
    // Over the fleet's own memory the record is read and opened at once; otherwise through the store.
    const server = given !== undefined && given.id === serverId && given.account === account ? registry.reveal(given) : registry.getRevealed(account, serverId);
    // One async step from the server's record to the answer, rather than a chain of ResultAsync steps: the same
    // checks in the same order, a few promise hops less on every call.
    return new ResultAsync(this.invokeOn(account, server, input.value.name, input.value.arguments ?? {}, options));
  }

  private async invokeOn(
    account: string,
    revealed: Result<ServerRecord, FleetError> | ResultAsync<ServerRecord, FleetError>,
    name: string,
    args: Record<string, unknown>,
    options: InvokeOptions,
  ): Promise<Result<ToolCallOutcome, FleetError>> {
    const found = revealed instanceof ResultAsync ? await revealed : revealed;
    if (found.isErr()) return err(found.error);
    const server = found.value;
    if (!toolAllowed(options.tools, namespacedTool({ id: server.id, name: server.config.name }, name))) return err(outsideAllowlist(name));
    const admitted = this.deps.breaker.admit(server.id);
    const admission = admitted instanceof ResultAsync ? await admitted : admitted;
    if (admission.isErr()) return err(admission.error);
    // A closed breaker (the common case) costs the call no promise.
    if (!admission.value.go || admission.value.trial) {
      const open = await this.openBreaker(account, server, admission.value);
      if (open !== undefined) return this.failFast(account, server, name, args, options, open);
    }
    const refusal = this.enter(account);
    if (refusal !== undefined) return err(refusal);
    let ran: { record: ToolCallRecord; result: CallToolResult | null };
    try {
      ran = await this.run(server, name, args, options);
    } finally {
      this.leave(account);
    }
    const { record, result } = ran;
    const keepArguments = this.deps.record?.arguments === true;
    const keepResult = this.deps.record?.results === true && result !== null;
    // Neither kept (the default): one empty payload for every call rather than three objects each.
    const payload = keepArguments || keepResult ? { ...(keepArguments ? { arguments: args } : {}), ...(keepResult ? { result } : {}) } : NO_PAYLOAD;
    const attempt = { kind: 'call', ok: record.status === 'success', at: this.deps.now(), responseTimeMs: record.duration_ms, error: record.error } as const;
    // The record and the health counters are independent writes: both land before the answer, side by side rather
    // than one after the other (a storage round trip chain less per call on a shared store); over the memory stores
    // both are made at once, without a promise (a successful call stages no event).
    const appended = this.deps.log.append(account, record, payload);
    const recorded = this.deps.health.record(server.id, attempt);
    const verdict = breakerVerdict(record, options.signal);
    const told = verdict === undefined ? ok(undefined) : this.deps.breaker.record(server.id, verdict);
    const [logged, counted, breaker] =
      appended instanceof ResultAsync || recorded instanceof ResultAsync || told instanceof ResultAsync ? await Promise.all([appended, recorded, told]) : [appended, recorded, told];
    if (logged.isErr()) return err(logged.error);
    if (counted.isErr()) return err(counted.error);
    if (breaker.isErr()) return err(breaker.error);
    return ok({ ...record, result });
  }

  /**
   * When the call must not go: the breaker's `retry_at` (Unix ms). A half-open breaker whose trial this call won
   * probes the server first; the call goes if the probe answered (which closed the breaker).
   */
  private async openBreaker(account: string, server: ServerRecord, admission: Admission): Promise<number | undefined> {
    if (!admission.go) return admission.retryAt;
    if (!admission.trial) return undefined;
    const probed = await this.deps.trial(account, server.id);
    if (probed.isOk() && probed.value) return undefined;
    const view = await this.deps.breaker.view(server.id);
    const retryAt = view.isOk() && view.value.retry_at !== null ? Date.parse(view.value.retry_at) : this.deps.now() + 1000;
    return Math.max(retryAt, this.deps.now() + 1000);
  }

  /**
   * A call refused by an open breaker: recorded as such (`status: "error"`, code `UPSTREAM_UNAVAILABLE`, no attempt),
   * never counted in the server's health (its failures were counted once, when they happened), and answered 503 with
   * `Retry-After`.
   */
  private async failFast(account: string, server: ServerRecord, name: string, args: Record<string, unknown>, options: InvokeOptions, retryAt: number): Promise<Result<ToolCallOutcome, FleetError>> {
    const retry = new Date(retryAt).toISOString();
    const message = `The server failed too often in a row; its circuit breaker is open and calls fail fast until ${retry}, then one probe decides (docs/health.md).`;
    const record: ToolCallRecord = {
      id: newId('toolCall'),
      server_id: server.id,
      server_name: server.config.name,
      tool: name,
      duration_ms: 0,
      attempts: 0,
      via: options.via ?? 'api',
      created_at: new Date(this.deps.now()).toISOString(),
      status: 'error',
      error: { code: 'UPSTREAM_UNAVAILABLE', message },
    };
    const appended = this.deps.log.append(account, record, this.deps.record?.arguments === true ? { arguments: args } : {});
    const logged = appended instanceof ResultAsync ? await appended : appended;
    if (logged.isErr()) return err(logged.error);
    return err(
      new FleetError('UPSTREAM_UNAVAILABLE', {
        message,
        details: { server_id: server.id, retry_at: retry },
        headers: { 'retry-after': String(Math.max(1, Math.ceil((retryAt - this.deps.now()) / 1000))) },
      }),
    );
  }

  /**
   * The server's tools (MCP `tools/list`, every page, within `listings.maxBytes` and `listings.maxItems`), only those
   * `allowlist` (`Principal.tools`) lets the caller call (`null` or absent: all). Upstream failures answer 502/504 with
   * their code; a listing past its bounds, 502 `UPSTREAM_RESPONSE_TOO_LARGE`.
   */
  list(account: string, serverId: string, allowlist?: readonly string[] | null): ResultAsync<Tool[], FleetError> {
    return toAsync(this.deps.registry.getRevealed(account, serverId)).andThen((server) =>
      // An upstream failure is the answer itself (502/504 with its code): a listing writes no record.
      ResultAsync.fromPromise(this.listTools(server), (error) => (isFleetError(error) ? error : toUpstreamError(error, server.config.timeout))).map((tools) =>
        allowlist === null || allowlist === undefined
          ? tools
          : tools.filter((tool) => toolAllowed(allowlist, namespacedTool({ id: server.id, name: server.config.name }, tool.name))),
      ),
    );
  }

  private async listTools(server: ServerRecord): Promise<Tool[]> {
    return (await this.listing(server, server.config.timeout, 'tools')).items;
  }

  /**
   * Every page of the server's list of `kind` within `timeoutMs` and the listing bounds, kept in the listing cache.
   * Throws an upstream `FleetError` (`UPSTREAM_RESPONSE_TOO_LARGE` past the bounds, and then nothing is kept).
   */
  listing<K extends ListingKind>(server: ServerRecord, timeoutMs: number, kind: K): Promise<Listing<ListingItems[K]>> {
    return this.upstream(server, timeoutMs, (lease) => this.listOn(server, lease, timeoutMs, kind));
  }

  /**
   * Runs `use` over the server's kept connection (opened within `timeoutMs` when there is none): the MCP endpoint's
   * prompts and resources. A failure discards the connection and throws an upstream `FleetError`; a JSON-RPC error
   * answer of the server (`ProtocolError`) keeps it and is thrown as it came.
   */
  async upstream<T>(server: ServerRecord, timeoutMs: number, use: (lease: { client: Client } & Pick<Lease, 'markListed'>) => Promise<T>): Promise<T> {
    const lease = await this.acquire(server, timeoutMs);
    try {
      const value = await use(lease);
      lease.release();
      return value;
    } catch (error) {
      if (isJsonRpcRejection(error)) {
        lease.release();
        throw error;
      }
      // Not awaited: ending a 2025 session may take a moment the caller should not wait for.
      void lease.discard();
      throw toUpstreamError(error, timeoutMs, lease.transport);
    }
  }

  /** Every page of the list of `kind` over `lease`, kept in the listing cache (a refusal too, without its items). */
  private async listOn<K extends ListingKind>(
    server: ServerRecord,
    lease: Pick<Lease, 'client' | 'markListed'>,
    timeoutMs: number,
    kind: K,
  ): Promise<Listing<ListingItems[K]>> {
    const { listings } = this.deps;
    let listing: Listing<ListingItems[K]>;
    try {
      listing = await readListing(lease.client, kind, timeoutMs, listings.limits);
    } catch (error) {
      if (isFleetError(error) && error.code === 'UPSTREAM_RESPONSE_TOO_LARGE') listings.refuse(server, kind, error);
      throw error;
    }
    if (kind === 'tools') lease.markListed();
    listings.store(server, kind, listing);
    return listing;
  }

  private catalog(server: ServerRecord): Map<string, Tool> | undefined {
    return this.deps.listings.tools(server);
  }

  /**
   * Before a call, `tools/list` on a connection that has not answered one: the call hands the SDK the tool's
   * definition from the listing cache, from which it mirrors the tool's `x-mcp-header` arguments into `Mcp-Param-*`
   * headers, and the annotations decide retries. A failed listing does not stop the call: the call then goes without those headers, as the spec allows.
   * Answers whether the call may go: over Streamable HTTP in 2026-07-28 a tool missing from a listing that succeeded
   * (after one more listing, for a tool added since) is not called, because the SDK leaves out of `tools/list` the
   * tools whose `x-mcp-header` declarations are invalid, and the spec forbids calling those.
   */
  private prepare(server: ServerRecord, lease: Lease, name: string, timeoutMs: number): boolean | Promise<boolean> {
    // Listed already, and the tool known (or no need to know it): the call may go at once, without a promise.
    return lease.listed && this.mayCall(server, lease, name) ? true : this.prepareByListing(server, lease, name, timeoutMs);
  }

  /** Whether a call of `name` may go on a listed connection without listing again (see `prepare`). */
  private mayCall(server: ServerRecord, lease: Lease, name: string): boolean {
    return lease.era !== '2026-07-28' || server.config.type !== 'http' || this.catalog(server)?.has(name) === true;
  }

  private async prepareByListing(server: ServerRecord, lease: Lease, name: string, timeoutMs: number): Promise<boolean> {
    const fresh = !lease.listed;
    if (fresh) await this.listOn(server, lease, timeoutMs, 'tools').catch(() => {});
    if (!lease.listed || this.mayCall(server, lease, name)) return true;
    if (!fresh) await this.listOn(server, lease, timeoutMs, 'tools').catch(() => {});
    return this.catalog(server)?.has(name) === true;
  }

  private hints(server: ServerRecord, name: string): ToolHints {
    return this.catalog(server)?.get(name)?.annotations ?? {};
  }

  /**
   * Takes one of the account's lanes for a call: at most `maxConcurrentPerAccount` at once, so that one tenant's slow
   * tools cannot take every connection and process of the service; beyond, 429 (a refused call writes no record).
   * `leave` gives the lane back when the call has run, before its record is written.
   */
  private enter(account: string): FleetError | undefined {
    const live = this.live.get(account) ?? 0;
    if (live >= this.maxConcurrent) {
      return new FleetError('RATE_LIMITED', {
        message: `This account already has ${this.maxConcurrent} tool calls in flight; retry when one has ended.`,
        details: { limit: this.maxConcurrent, scope: 'concurrency' },
        headers: { 'retry-after': '1' },
      });
    }
    this.live.set(account, live + 1);
    return undefined;
  }

  private leave(account: string): void {
    const left = (this.live.get(account) ?? 1) - 1;
    if (left === 0) this.live.delete(account);
    else this.live.set(account, left);
  }

  private async run(server: ServerRecord, name: string, args: Record<string, unknown>, options: InvokeOptions): Promise<{ record: ToolCallRecord; result: CallToolResult | null }> {
    const started = performance.now();
    const createdAt = new Date(this.deps.now()).toISOString();
    const retry = server.config.retry;
    const maxAttempts = retry?.enabled === true ? (retry.max_attempts ?? 3) : 1;
    // The whole call, every attempt and wait, within `maxTotalMs`: `timeout` × `max_attempts` could be 50 minutes.
    const budgetEnds = started + this.maxTotalMs;
    let attempts = 0;
    let outcome: AttemptResult;
    for (;;) {
      attempts += 1;
      outcome = await this.attempt(server, name, args, Math.max(1, Math.min(server.config.timeout, Math.round(budgetEnds - performance.now()))), options);
      if (outcome.ok || outcome.rejected || attempts >= maxAttempts || options.signal?.aborted === true || !isRetrySafe(outcome.failure, this.hints(server, name))) break;
      const wait = backoffDelay(attempts, this.deps.backoff, outcome.failure.retryAfterMs);
      // No attempt starts that the budget could not also wait for and give a moment to.
      if (performance.now() + wait >= budgetEnds) break;
      await this.sleep(wait);
    }
    const base = {
      id: newId('toolCall'),
      server_id: server.id,
      server_name: server.config.name,
      tool: name,
      duration_ms: Math.round(performance.now() - started),
      attempts,
      via: options.via ?? 'api',
      created_at: createdAt,
    };
    if (outcome.ok) {
      const isError = outcome.result.isError === true;
      return {
        record: {
          ...base,
          status: isError ? 'error' : 'success',
          error: isError ? { code: 'TOOL_ERROR', message: 'The tool answered with an error (isError).' } : null,
        },
        result: outcome.result,
      };
    }
    const { error } = outcome.failure;
    const code: string = outcome.rejected ? 'TOOL_CALL_REJECTED' : error.code;
    return {
      record: { ...base, status: error.code === 'UPSTREAM_TIMEOUT' && !outcome.rejected ? 'timeout' : 'error', error: { code, message: error.message } },
      result: null,
    };
  }

  /**
   * One attempt within the server's `timeout`. Within it the call is sent again on a new connection when the first one
   * proves unusable without the tool having run: a kept connection found dead before the request left, or a 2025
   * session the server no longer knows (HTTP 404, which the spec answers with a new session), once.
   */
  private async attempt(server: ServerRecord, name: string, args: Record<string, unknown>, timeoutMs: number, options: InvokeOptions): Promise<AttemptResult> {
    const deadline = performance.now() + timeoutMs;
    const remaining = () => Math.max(1, Math.round(deadline - performance.now()));
    for (let reopened = false; ; reopened = true) {
      let lease: Lease;
      try {
        // A kept connection that is ready is taken at once; a new one (or one still opening) is waited for.
        const acquired = this.acquire(server, timeoutMs);
        lease = acquired instanceof Promise ? await acquired : acquired;
      } catch (error) {
        const failure = toUpstreamError(error, timeoutMs);
        return { ok: false, rejected: false, failure: { error: failure, status: httpStatusOf(error), reached: false } };
      }
      try {
        const prepared = this.prepare(server, lease, name, remaining());
        const known = prepared === true || (await prepared);
        if (!known) {
          lease.release();
          return { ok: false, rejected: true, failure: { error: unlisted() } };
        }
        // An `onprogress` makes the SDK send a `progressToken`, so a long tool may report progress instead of none;
        // `null`: the caller asked for none. The tool's definition from the one listing cache: the SDK mirrors its
        // `x-mcp-header` arguments into `Mcp-Param-*` headers and checks its output schema with it (the SDK keeps no
        // listing of its own).
        const definition = this.catalog(server)?.get(name);
        const request: CallToolRequestOptions = { timeout: remaining() };
        if (options.onprogress !== null) request.onprogress = options.onprogress ?? ignoreProgress;
        if (options.signal !== undefined) request.signal = options.signal;
        if (definition !== undefined) request.toolDefinition = definition;
        const result = (await lease.client.callTool({ name, arguments: args }, request)) as CallToolResult;
        lease.release();
        return { ok: true, result };
      } catch (error) {
        const status = httpStatusOf(error);
        const retryAfterMs = lease.takeRetryAfter();
        const failure = performance.now() >= deadline ? timeoutError(timeoutMs) : toUpstreamError(error, timeoutMs, lease.transport);
        const rejected = isJsonRpcRejection(error);
        // The server answered (a JSON-RPC error, or input_required the fleet cannot fulfil): the connection stays good.
        if (rejected || failure.code === 'UPSTREAM_INPUT_REQUIRED') {
          lease.release();
          return { ok: false, rejected, failure: { error: failure, status } };
        }
        if (options.signal?.aborted === true) {
          // The SDK told the server (notifications/cancelled); the connection itself is fine.
          lease.release();
          return { ok: false, rejected: false, failure: { error: cancelled(), status, reached: true } };
        }
        // Not awaited (the pool forgets it at once): ending a 2025 session may take a moment the caller should not wait for.
        void lease.discard();
        const sessionLost = status === 404 && lease.era === '2025' && server.config.type === 'http';
        const reached = !(sessionLost || neverSent(error));
        const deadConnection = lease.reused && failure.code === 'UPSTREAM_UNREACHABLE' && !reached;
        if (!reopened && (sessionLost || deadConnection) && performance.now() < deadline) continue;
        return { ok: false, rejected: false, failure: { error: failure, status, retryAfterMs, reached } };
      }
    }
  }

  private acquire(server: ServerRecord, timeoutMs: number): Lease | Promise<Lease> {
    return this.deps.pool.acquire(server, timeoutMs);
  }
}

/** A tool outside the key's allowlist (`tools` globs over namespaced names): nothing is sent, nothing recorded. */
const outsideAllowlist = (tool: string) =>
  new FleetError('FORBIDDEN', {
    message: "This API key's tool allowlist (its `tools` patterns) does not include this tool; use a key whose `tools` match it, or one without a list.",
    details: { tool },
  });

/** A call its caller cancelled (the MCP endpoint relays `notifications/cancelled`); the upstream was told. */
const cancelled = () => new FleetError('UPSTREAM_PROTOCOL_ERROR', { message: 'The caller cancelled the call; the server was sent notifications/cancelled.' });

/** The refusal of a tool the server's `tools/list` does not offer (recorded as TOOL_CALL_REJECTED; nothing was sent). */
const unlisted = () =>
  new FleetError('UPSTREAM_PROTOCOL_ERROR', {
    message: "The server's tools/list has no usable tool of that name (unknown, or excluded for an invalid x-mcp-header); it was not called.",
  });

/** The payload of a call that keeps neither its arguments nor its result. */
const NO_PAYLOAD: ToolCallPayload = Object.freeze({});

/**
 * What a call's outcome tells the breaker: the server answered (a result, `isError`, a JSON-RPC error) is a success;
 * it did not answer as MCP (unreachable, timeout, protocol error) is a failure; anything else (our own guard or
 * bounds, refused credentials, input required, a caller's cancel) tells it nothing.
 */
function breakerVerdict(record: ToolCallRecord, signal: AbortSignal | undefined): boolean | undefined {
  if (record.status === 'success') return true;
  if (signal?.aborted === true) return undefined;
  const code = record.error?.code;
  if (code === 'TOOL_ERROR' || code === 'TOOL_CALL_REJECTED') return true;
  return code === 'UPSTREAM_UNREACHABLE' || code === 'UPSTREAM_TIMEOUT' || code === 'UPSTREAM_PROTOCOL_ERROR' ? false : undefined;
}

/** A JSON-RPC error answer to the call (the SDK's `ProtocolError`): the server is up and refused this call. */
function isJsonRpcRejection(error: unknown): boolean {
  return errorChain(error).some((item) => item instanceof ProtocolError);
}
