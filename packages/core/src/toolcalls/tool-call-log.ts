import { z } from 'zod';
import { isoTimeSchema } from '../util/iso-time.js';
import { errAsync, okAsync, type ResultAsync } from 'neverthrow';
import { type FleetError, toolCallNotFound } from '../errors/fleet-error.js';
import { isId } from '../util/ids.js';
import type { IndexCalls } from '../storage/index-calls.js';
import { readPage } from '../storage/read-page.js';
import type { RecordStore } from '../storage/records.js';
import { type Page, type PageQuery, pagination } from '../util/pagination.js';
import type { ChangeWriter } from '../events/change-writer.js';
import { mergeTransactions } from '../storage/index-calls.js';
import { kept } from '../util/key-memo.js';
import { okWith, type Ran, chain, chainMap, toAsync } from '../util/result.js';

export const TOOL_CALL_STATUSES = ['success', 'error', 'timeout'] as const;
export type ToolCallStatus = (typeof TOOL_CALL_STATUSES)[number];

/** Which door a call came through: `POST /servers/{id}/tools/call`, the embedder's `fleet.tools.call`, or `/mcp`. */
export const TOOL_CALL_VIAS = ['http', 'api', 'mcp'] as const;
export type ToolCallVia = (typeof TOOL_CALL_VIAS)[number];

/** One call of a tool through the service (docs/http-api.md "Tool calls"). */
export const toolCallRecordSchema = z.strictObject({
  id: z.string(),
  server_id: z.string(),
  server_name: z.string(),
  tool: z.string(),
  status: z.enum(TOOL_CALL_STATUSES),
  duration_ms: z.number(),
  attempts: z.int(),
  error: z.strictObject({ code: z.string(), message: z.string() }).nullable(),
  /** The door the call came through; records written before it existed have none. */
  via: z.enum(TOOL_CALL_VIAS).optional(),
  created_at: isoTimeSchema,
});

export type ToolCallRecord = z.output<typeof toolCallRecordSchema>;

/** A record as `get` answers it: with `arguments` and `result` when the embedder has them recorded. */
export const toolCallDetailSchema = z.strictObject({
  ...toolCallRecordSchema.shape,
  arguments: z.record(z.string(), z.unknown()).optional(),
  result: z.unknown().optional(),
});

export type ToolCallDetail = z.output<typeof toolCallDetailSchema>;

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

const RECORD_KEY = 'toolcall:';
const recordKey = (id: string) => `${RECORD_KEY}${id}`;

/** How recovery tells that a failed call's record landed: its record exists. */
export const toolCallCheck = (id: string) => ({ key: recordKey(id) });
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

/**
 * What every call of one account, server, status and tool writes alike: its 8 listing names, and the parts of its
 * expiry member after the time and before the id (`expiryHead`) and after the id (`expiryTail`), JSON-encoded.
 */
interface Listed {
  readonly account: string;
  readonly server_id: string;
  readonly status: ToolCallStatus;
  readonly tool: string;
  readonly sets: readonly string[];
  readonly expiryHead: string;
  readonly expiryTail: string;
}

/** `listedOf`'s answers by account, server, status and tool (at most 10,000, then forgotten all at once). */
const listedKept = new Map<string, Listed>();
/**
 * The last of them handed out for each server (as bounded): the next call to a server is most often of the same
 * account, status and tool, and a server's id is a string the registry keeps, hashed once.
 */
const lastListed = new Map<string, Listed>();

/**
 * `listingsOf` and the expiry member's fixed parts, the same strings handed out again for the same account, server,
 * status and tool (never to be changed): the index looks each of the 8 sets up by its name, and a name made afresh is
 * a new string that each lookup must flatten and hash again (see `memoKeys`). The server's last answer is compared
 * field by field before any key is made; the map's key puts the account first with its length, so no two combinations
 * share one.
 */
function listedOf(account: string, call: Pick<ToolCallRecord, 'server_id' | 'status' | 'tool'>): Listed {
  const last = lastListed.get(call.server_id);
  if (last !== undefined && last.tool === call.tool && last.status === call.status && last.account === account) return last;
  const listed = kept(listedKept, `${account.length}:${account}|${call.server_id}|${call.status}|${call.tool}`, () => ({
    account,
    server_id: call.server_id,
    status: call.status,
    tool: call.tool,
    sets: listingsOf(account, call),
    expiryHead: `,${JSON.stringify(account)},`,
    expiryTail: `,${JSON.stringify(call.server_id)},${JSON.stringify(call.status)},${JSON.stringify(call.tool)}]`,
  }));
  if (lastListed.size >= 10_000) lastListed.clear();
  lastListed.set(call.server_id, listed);
  return listed;
}

/**
 * Every listing a record belongs to: one per subset of its filter values (8), named as `listingOf` names them. Each
 * part is encoded once, not once per listing: this runs for every tool call.
 */
function listingsOf(account: string, call: Pick<ToolCallRecord, 'server_id' | 'status' | 'tool'>): string[] {
  const base = `toolcalls:${encodeURIComponent(account)}`;
  const parts = FILTERS.map((field) => `|${field}=${encodeURIComponent(call[field])}`);
  const sets = new Array<string>(1 << FILTERS.length);
  for (let mask = 0; mask < sets.length; mask++) {
    let set = base;
    for (let bit = 0; bit < parts.length; bit++) if (mask & (1 << bit)) set += parts[bit];
    sets[mask] = set;
  }
  return sets;
}

/**
 * Every call of every account, oldest first, for expiry: a member carries what finds the call's listings without its
 * record (`[created ms, account, id, server_id, status, tool]` as JSON), so a record already gone still leaves no entry.
 */
const EXPIRY_SET = 'toolcalls-expiry';

type ExpiryEntry = [number, string, string, string, ToolCallStatus, string];

/**
 * `JSON.stringify([createdMs, account, call.id, call.server_id, call.status, call.tool])`, the parts that are the same
 * for every call of its account, server, status and tool encoded once (`listedOf`): the same text, each value encoded
 * by `JSON.stringify` itself.
 */
function expiryMember(listed: Listed, id: string, createdMs: number): string {
  return `[${JSON.stringify(createdMs)}${listed.expiryHead}${JSON.stringify(id)}${listed.expiryTail}`;
}

function parseExpiry(member: string): ExpiryEntry | undefined {
  try {
    const entry = JSON.parse(member) as unknown;
    return Array.isArray(entry) && entry.length === 6 && typeof entry[0] === 'number' ? (entry as ExpiryEntry) : undefined;
  } catch {
    return undefined;
  }
}

/** How long records are kept; the record store's TTL is a day longer, a safety net should sweeps stop. */
export interface ToolCallRetention {
  retentionMs: number;
  now: () => number;
}

const DAY_MS = 86_400_000;

/** The durable log of tool calls, listed newest first. */
export class ToolCallLog {
  constructor(
    private readonly records: RecordStore,
    private readonly index: IndexCalls,
    /** Where a failed call's `tool_call.failed` goes, written with the call. */
    private readonly changes: ChangeWriter,
    /** Absent: records are kept forever (tests of other things). */
    private readonly retention?: ToolCallRetention,
  ) {}

  /**
   * Removes the calls older than the retention, at most `batch` of them: their listing entries (all 8 and the
   * expiry entry) in one commit, then their records, so a listed call always has its record and totals stay exact.
   * Answers how many were removed; `batch` of them means more may be due.
   */
  sweep(batch: number): ResultAsync<number, FleetError> {
    if (this.retention === undefined) return okAsync(0);
    const cutoff = this.retention.now() - this.retention.retentionMs;
    return toAsync(this.index.range(EXPIRY_SET, { offset: 0, limit: batch })).andThen((members) => {
      const due: { member: string; entry: ExpiryEntry | undefined }[] = [];
      for (const member of members) {
        const entry = parseExpiry(member);
        if (entry !== undefined && entry[0] >= cutoff) break;
        due.push({ member, entry });
      }
      if (due.length === 0) return okAsync(0);
      const remove = due.flatMap(({ member, entry }) => {
        const own = { set: EXPIRY_SET, member };
        if (entry === undefined) return [own];
        const [, account, id, server_id, status, tool] = entry;
        return [own, ...listingsOf(account, { server_id, status, tool }).map((set) => ({ set, member: id }))];
      });
      const keys = due.flatMap(({ entry }) => (entry === undefined ? [] : [recordKey(entry[2])]));
      return toAsync(chain(this.index.commit({ remove }), () => this.records.deleteMany(keys))).andThen(okWith(() => due.length));
    });
  }

  /**
   * Appends a call in two steps: the record is written, then it is listed (every filter listing in one
   * `index.commit`), so a listed call always has its record. `payload` is stored only as given.
   *
   * A failed call is also the event `tool_call.failed`, staged before the record is written and published in the
   * listing commit: the event lands with the call, or recovery publishes it from the record later (a write that fails
   * leaves the intent to recovery, which publishes the event if the record landed and drops it if not). Its data is
   * the record alone, never the arguments or result.
   */
  append(account: string, call: ToolCallRecord, payload: ToolCallPayload = {}): Ran<ToolCallRecord, FleetError> {
    const { stored, ttlMs, add } = this.writesOf(account, call, payload);
    const event =
      call.status === 'success'
        ? undefined
        : { account, type: 'tool_call.failed' as const, data: { tool_call: call }, at: call.created_at, check: toolCallCheck(call.id) };
    // Without arguments or result (nor an error object, as a success has none) the record is strings and numbers made
    // for this write: handed over as it is rather than copied.
    const bare = call.error === null && payload.arguments === undefined && payload.result === undefined;
    return this.changes.write(event, ({ publish }) =>
      chainMap(
        chain(bare ? this.records.setAt(RECORD_KEY, call.id, stored, ttlMs) : this.records.set(recordKey(call.id), stored, ttlMs), () => this.index.commit(publish === undefined ? { add } : mergeTransactions({ add }, publish))),
        () => call,
      ),
    );
  }

  /** What a call's append writes: the stored record, its expiry, and its entries in the 8 listings and the expiry set. */
  private writesOf(account: string, call: ToolCallRecord, payload: ToolCallPayload) {
    const stored: StoredToolCall = { ...call, ...payload, account };
    const score = Date.parse(call.created_at);
    const ttlMs = this.retention === undefined ? undefined : this.retention.retentionMs + DAY_MS;
    const listed = listedOf(account, call);
    const { sets } = listed;
    const add: { set: string; member: string; score: number }[] = [];
    for (const set of sets) add.push({ set, member: call.id, score });
    if (this.retention !== undefined) add.push({ set: EXPIRY_SET, member: expiryMember(listed, call.id, score), score });
    return { stored, ttlMs, add };
  }

  get(account: string, id: string): ResultAsync<ToolCallDetail, FleetError> {
    if (!isId('toolCall', id)) return errAsync(toolCallNotFound(id));
    return toAsync(this.records.get<StoredToolCall>(recordKey(id))).andThen((stored) =>
      stored === undefined || stored.account !== account ? errAsync(toolCallNotFound(id)) : okAsync(detail(stored)),
    );
  }

  /** Newest first; filters narrow to the listing of their combination. Records carry no payload here. */
  list(account: string, query: ListToolCallsQuery): ResultAsync<Page<ToolCallRecord>, FleetError> {
    return toAsync(readPage<StoredToolCall>(this.index, this.records, listingOf(account, query), query, recordKey, { order: 'desc', keyPrefix: RECORD_KEY })).andThen(okWith(({ found, total }) => ({
      data: found.filter((call): call is StoredToolCall => call !== undefined && call.account === account).map(strip),
      pagination: pagination(query, total),
    })));
  }
}

function detail({ account: _account, ...call }: StoredToolCall): ToolCallDetail {
  return call;
}

function strip({ account: _account, arguments: _arguments, result: _result, ...call }: StoredToolCall): ToolCallRecord {
  return call;
}
