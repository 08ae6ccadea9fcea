import { errAsync, okAsync, type ResultAsync } from 'neverthrow';
import { type FleetError, toolCallNotFound } from '../errors/fleet-error.js';
import { isId } from '../util/ids.js';
import type { IndexCalls } from '../storage/index-calls.js';
import type { RecordStore } from '../storage/records.js';
import { type Page, type PageQuery, pagination } from '../util/pagination.js';

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

interface StoredToolCall extends ToolCallRecord {
  account: string;
}

const recordKey = (id: string) => `toolcall:${id}`;
const accountSet = (account: string) => `toolcalls:${encodeURIComponent(account)}`;

/** The durable log of tool calls, listed newest first. */
export class ToolCallLog {
  constructor(
    private readonly records: RecordStore,
    private readonly index: IndexCalls,
  ) {}

  /** Appends a record: written before it is listed, so a listed call always has its record. */
  append(account: string, call: ToolCallRecord): ResultAsync<ToolCallRecord, FleetError> {
    return this.records
      .set(recordKey(call.id), { ...call, account } satisfies StoredToolCall)
      .andThen(() => this.index.commit({ add: [{ set: accountSet(account), member: call.id, score: Date.parse(call.created_at) }] }))
      .map(() => call);
  }

  get(account: string, id: string): ResultAsync<ToolCallRecord, FleetError> {
    if (!isId('toolCall', id)) return errAsync(toolCallNotFound(id));
    return this.records.get<StoredToolCall>(recordKey(id)).andThen((stored) =>
      stored === undefined || stored.account !== account
        ? errAsync(toolCallNotFound(id))
        : okAsync(strip(stored)),
    );
  }

  list(account: string, query: PageQuery): ResultAsync<Page<ToolCallRecord>, FleetError> {
    const set = accountSet(account);
    return this.index.count(set).andThen((total) =>
      this.index
        .range(set, { offset: (query.page - 1) * query.limit, limit: query.limit, order: 'desc' })
        .andThen((ids) => this.records.getMany<StoredToolCall>(ids.map(recordKey)))
        .map((found) => ({
          data: found.filter((call): call is StoredToolCall => call !== undefined && call.account === account).map(strip),
          pagination: pagination(query, total),
        })),
    );
  }
}

function strip({ account: _account, ...call }: StoredToolCall): ToolCallRecord {
  return call;
}
