import { type CallToolResult, ProtocolError, type Tool } from '@modelcontextprotocol/client';
import { ResultAsync } from 'neverthrow';
import { z } from 'zod';
import { errorChain, type FleetError, isFleetError } from '../errors/fleet-error.js';
import type { HealthLog } from '../health/health-log.js';
import { timeoutError, toUpstreamError } from '../mcp/errors.js';
import type { ServerRegistry } from '../registry/registry.js';
import type { ServerRecord } from '../registry/views.js';
import { newId } from '../util/ids.js';
import { parse } from '../validation/parse.js';
import { isPlainObject } from '../validation/zod-issues.js';
import type { ConnectionPool, Lease } from './connection-pool.js';
import { type AttemptFailure, backoffDelay, type BackoffOptions, httpStatusOf, isRetrySafe } from './retry.js';
import type { ToolCallLog, ToolCallRecord } from './tool-call-log.js';

/** What `fleet.tools.call` answers: the record written, plus the MCP result when the tool answered. */
export interface ToolCallOutcome extends ToolCallRecord {
  /** The MCP `tools/call` result (also when it is `isError`); `null` when no answer came. */
  result: CallToolResult | null;
}

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
  pool: ConnectionPool;
  now: () => number;
  record?: ToolCallRecording;
  backoff?: BackoffOptions;
  /** Waits between attempts; tests may shorten it. @default setTimeout */
  sleep?: (ms: number) => Promise<void>;
}

const MAX_TOOL_NAME = 256;
/** tools/list pages followed at most, so a server that always answers a cursor cannot keep a request forever. */
const MAX_LIST_PAGES = 100;

const sleepFor = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

type AttemptResult = { ok: true; result: CallToolResult } | { ok: false; rejected: boolean; failure: AttemptFailure };

/** The body of `tools/call`: `{ name, arguments? }`. The arguments go to the tool as sent, so they are not copied. */
const callInputSchema = z.strictObject({
  name: z.string().min(1).max(MAX_TOOL_NAME),
  arguments: z.custom<Record<string, unknown>>(isPlainObject, 'must be a JSON object').optional(),
});

/**
 * Tools of registered servers, through their proxy settings: the server's `timeout` per attempt, `retry` for
 * failures that are safe to repeat, its authentication, the kept connections of `ConnectionPool`.
 */
export class ToolService {
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(private readonly deps: ToolServiceDeps) {
    this.sleep = deps.sleep ?? sleepFor;
  }

  /** As {@link invoke}, for the embedder's typed `fleet.tools.call`. */
  call(account: string, serverId: string, name: string, args: Record<string, unknown>): ResultAsync<ToolCallOutcome, FleetError> {
    return this.invoke(account, serverId, { name, arguments: args });
  }

  /**
   * Calls a tool and records the call; the `{ name, arguments }` body is parsed here, once per call. Upstream failures
   * are outcomes, not errors: the record says `error` (TOOL_ERROR when the tool answered `isError`,
   * TOOL_CALL_REJECTED for a JSON-RPC error, an upstream code otherwise) or `timeout`. Errors are the service's own:
   * unknown server, invalid input, storage.
   */
  invoke(account: string, serverId: string, body: unknown): ResultAsync<ToolCallOutcome, FleetError> {
    return parse(callInputSchema, body).asyncAndThen(({ name, arguments: args = {} }) =>
      this.deps.registry.get(account, serverId).andThen((server) =>
        ResultAsync.fromSafePromise(this.run(server, name, args)).andThen(({ record, result }) => {
          const payload = {
            ...(this.deps.record?.arguments === true ? { arguments: args } : {}),
            ...(this.deps.record?.results === true && result !== null ? { result } : {}),
          };
          return this.deps.log
            .append(account, record, payload)
            .andThen(() =>
              this.deps.health.record(server.id, {
                kind: 'call',
                ok: record.status === 'success',
                at: this.deps.now(),
                responseTimeMs: record.duration_ms,
                error: record.error,
              }),
            )
            .map(() => ({ ...record, result }));
        }),
      ),
    );
  }

  /** The server's tools (MCP `tools/list`, every page). Upstream failures answer 502/504 with their code. */
  list(account: string, serverId: string): ResultAsync<Tool[], FleetError> {
    return this.deps.registry.get(account, serverId).andThen((server) =>
      // An upstream failure is the answer itself (502/504 with its code): a listing writes no record.
      ResultAsync.fromPromise(this.listTools(server), (error) => (isFleetError(error) ? error : toUpstreamError(error, server.config.timeout))),
    );
  }

  private async listTools(server: ServerRecord): Promise<Tool[]> {
    const timeoutMs = server.config.timeout;
    const lease = await this.acquire(server, timeoutMs);
    const tools: Tool[] = [];
    try {
      let cursor: string | undefined;
      for (let page = 0; page < MAX_LIST_PAGES; page++) {
        const answer = await lease.client.listTools(cursor === undefined ? {} : { cursor }, { timeout: timeoutMs });
        tools.push(...answer.tools);
        cursor = answer.nextCursor;
        if (cursor === undefined) break;
      }
      this.giveBack(server, lease);
      return tools;
    } catch (error) {
      // Not awaited: ending a 2025 session may take a moment the caller should not wait for.
      void lease.discard();
      throw toUpstreamError(error, timeoutMs);
    }
  }

  private async run(server: ServerRecord, name: string, args: Record<string, unknown>): Promise<{ record: ToolCallRecord; result: CallToolResult | null }> {
    const started = performance.now();
    const createdAt = new Date(this.deps.now()).toISOString();
    const retry = server.config.retry;
    const maxAttempts = retry?.enabled === true ? (retry.max_attempts ?? 3) : 1;
    let attempts = 0;
    let outcome: AttemptResult;
    for (;;) {
      attempts += 1;
      outcome = await this.attempt(server, name, args);
      if (outcome.ok || outcome.rejected || attempts >= maxAttempts || !isRetrySafe(outcome.failure)) break;
      await this.sleep(backoffDelay(attempts, this.deps.backoff, outcome.failure.retryAfterMs));
    }
    const base = {
      id: newId('toolCall'),
      server_id: server.id,
      server_name: server.config.name,
      tool: name,
      duration_ms: Math.round(performance.now() - started),
      attempts,
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

  /** One attempt within the server's `timeout`; a kept connection that proves dead is reopened once. */
  private async attempt(server: ServerRecord, name: string, args: Record<string, unknown>): Promise<AttemptResult> {
    const timeoutMs = server.config.timeout;
    const deadline = performance.now() + timeoutMs;
    for (let reopened = false; ; reopened = true) {
      let lease: Lease;
      try {
        lease = await this.acquire(server, timeoutMs);
      } catch (error) {
        const failure = toUpstreamError(error, timeoutMs);
        return { ok: false, rejected: false, failure: { error: failure, status: httpStatusOf(error) } };
      }
      const remaining = Math.max(1, Math.round(deadline - performance.now()));
      try {
        const result = (await lease.client.callTool({ name, arguments: args }, { timeout: remaining })) as CallToolResult;
        this.giveBack(server, lease);
        return { ok: true, result };
      } catch (error) {
        const status = httpStatusOf(error);
        const retryAfterMs = lease.takeRetryAfter();
        const failure = performance.now() >= deadline ? timeoutError(timeoutMs) : toUpstreamError(error, timeoutMs);
        const rejected = isJsonRpcRejection(error);
        if (rejected) {
          this.giveBack(server, lease);
          return { ok: false, rejected, failure: { error: failure, status } };
        }
        // Not awaited (the pool forgets it at once): ending a 2025 session may take a moment the caller should not wait for.
        void lease.discard();
        if (lease.reused && !reopened && failure.code === 'UPSTREAM_UNREACHABLE' && performance.now() < deadline) continue;
        return { ok: false, rejected: false, failure: { error: failure, status, retryAfterMs } };
      }
    }
  }

  private acquire(server: ServerRecord, timeoutMs: number): Promise<Lease> {
    return this.deps.pool.acquire(server, timeoutMs);
  }

  /**
   * stdio: the process stays with the supervisor, but its channel takes one MCP client at a time, so the client is
   * let go after each call (a health probe would otherwise wait for the idle timeout). Others keep their connection.
   */
  private giveBack(server: ServerRecord, lease: Lease): void {
    if (server.config.type === 'stdio') void lease.discard();
    else lease.release();
  }
}

/** A JSON-RPC error answer to the call (the SDK's `ProtocolError`): the server is up and refused this call. */
function isJsonRpcRejection(error: unknown): boolean {
  return errorChain(error).some((item) => item instanceof ProtocolError);
}
