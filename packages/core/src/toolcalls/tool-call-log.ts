import { errAsync, okAsync, type ResultAsync } from 'neverthrow';
import { type FleetError, toolCallNotFound } from '../errors/fleet-error.js';
import { isId } from '../util/ids.js';
import type { IndexCalls } from '../storage/index-calls.js';
import { readPage } from '../storage/read-page.js';
import type { RecordStore } from '../storage/records.js';
import { type Page, type PageQuery, pagination } from '../util/pagination.js';
import { type EventOutbox, mergeTransactions, type StagedEvent, toolCallCheck } from '../webhooks/outbox.js';

export const TOOL_CALL_STATUSES = ['success', 'error', 'timeout'] as const;
export type ToolCallStatus = (typeof TOOL_CALL_STATUSES)[number];

/** One call of a tool through the service (CONTRACT "Tool calls"). */
export interface ToolCallRecord {
  id: string;
  server_id: string;
  server_name: string;
  tool: string;
  status: ToolCallStatus;
  duration_ms: number;
  attempts: number;
  error: { code: string; message: string } | null;
  created_at: string;
}

/** A record as `get` answers it: with `arguments` and `result` when the embedder has them recorded. */
export interface ToolCallDetail extends ToolCallRecord {
  arguments?: Record<string, unknown>;
  result?: unknown;
}

/** What is kept of a call beyond its record, only when `toolCalls.record` turns it on. */
export interface ToolCallPayload {
  arguments?: Record<string, unknown>;
  result?: unknown;
}

/** Filters of `GET /tool-calls`; each combination has a listing of its own, so totals and pages stay exact. */
export interface ToolCallFilters {
  server_id?: string | undefined;
  status?: ToolCallStatus | undefined;
  tool?: string | undefined;
}

export type ListToolCallsQuery = PageQuery & ToolCallFilters;

interface StoredToolCall extends ToolCallDetail {
  account: string;
}

const recordKey = (id: string) => `toolcall:${id}`;
const FILTERS = ['server_id', 'status', 'tool'] as const;

/** The listing of an account under some filters: `toolcalls:{account}` plus `|field=value` per filter, in a fixed order. */
function listingOf(account: string, filters: ToolCallFilters): string {
  let set = `toolcalls:${encodeURIComponent(account)}`;
  for (const field of FILTERS) {
    const value = filters[field];
    if (value !== undefined) set += `|${field}=${encodeURIComponent(value)}`;
  }
  return set;
}

/** Every listing a record belongs to: one per subset of its filter values (8). */
function listingsOf(account: string, call: ToolCallRecord): string[] {
  const sets: string[] = [];
  for (let mask = 0; mask < 1 << FILTERS.length; mask++) {
    const filters: ToolCallFilters = {};
    FILTERS.forEach((field, bit) => {
      if (mask & (1 << bit)) filters[field] = call[field] as never;
    });
    sets.push(listingOf(account, filters));
  }
  return sets;
}

/** The durable log of tool calls, listed newest first. */
export class ToolCallLog {
  constructor(
    private readonly records: RecordStore,
    private readonly index: IndexCalls,
    /** Where `tool_call.failed` is staged for webhooks; absent when webhooks are off. */
    private readonly outbox?: EventOutbox,
  ) {}

  /**
   * Appends a call in two steps: the record is written, then it is listed (every filter listing in one
   * `index.commit`), so a listed call always has its record. `payload` is stored only as given.
   *
   * A failed call is also the webhook event `tool_call.failed`, staged in the outbox before the record is written and
   * published in the listing commit: the event lands with the call, or recovery publishes it from the record later.
   * Its data is the record alone, never the arguments or result.
   */
  append(account: string, call: ToolCallRecord, payload: ToolCallPayload = {}): ResultAsync<ToolCallRecord, FleetError> {
    const stored: StoredToolCall = { ...call, ...payload, account };
    const score = Date.parse(call.created_at);
    const write = (staged: StagedEvent | undefined) =>
      this.records
        .set(recordKey(call.id), stored)
        .andThen(() =>
          this.index.commit(mergeTransactions({ add: listingsOf(account, call).map((set) => ({ set, member: call.id, score })) }, staged?.publish)),
        )
        .map(() => {
          staged?.published();
          return call;
        });
    if (call.status === 'success' || this.outbox === undefined) return write(undefined);
    // A write that fails leaves the intent to the outbox's recovery: it publishes the event if the record landed
    // (the check is the record's key) and drops it if not, so the event follows the record either way.
    return this.outbox.stage(account, 'tool_call.failed', { tool_call: call }, call.created_at, toolCallCheck(call.id)).andThen(write);
  }

  get(account: string, id: string): ResultAsync<ToolCallDetail, FleetError> {
    if (!isId('toolCall', id)) return errAsync(toolCallNotFound(id));
    return this.records.get<StoredToolCall>(recordKey(id)).andThen((stored) =>
      stored === undefined || stored.account !== account ? errAsync(toolCallNotFound(id)) : okAsync(detail(stored)),
    );
  }

  /** Newest first; filters narrow to the listing of their combination. Records carry no payload here. */
  list(account: string, query: ListToolCallsQuery): ResultAsync<Page<ToolCallRecord>, FleetError> {
    return readPage<StoredToolCall>(this.index, this.records, listingOf(account, query), query, recordKey, { order: 'desc' }).map(({ found, total }) => ({
      data: found.filter((call): call is StoredToolCall => call !== undefined && call.account === account).map(strip),
      pagination: pagination(query, total),
    }));
  }
}

function detail({ account: _account, ...call }: StoredToolCall): ToolCallDetail {
  return call;
}

function strip({ account: _account, arguments: _arguments, result: _result, ...call }: StoredToolCall): ToolCallRecord {
  return call;
}
