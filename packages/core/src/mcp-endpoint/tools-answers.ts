import type { Tool } from '@modelcontextprotocol/client';
import { type CatalogRevision, sameSources } from './catalog.js';

/** One view's `tools/list` answer, with what it was built from. */
export interface ToolsAnswer {
  tools: Tool[];
  /** The visible tool names, sorted: what a listener last saw. */
  names: string[];
  /**
   * `JSON.stringify(tools)` as UTF-8, made once (a view of `message`'s bytes): the kept bytes, weighed against the
   * bound.
   */
  json: Buffer;
  /**
   * The JSON-RPC answer's bytes up to its id, made once with `json` (one allocation): `{"result":{"tools":` + json +
   * `}`. The lean road sends it as it is, followed by the request's own tail (`answerTail`), so that a list from the
   * cache neither serializes, encodes nor copies the list.
   */
  message: Buffer;
}

/** What a `tools/list` answer's message holds before the list (`JSON.stringify` puts `result` first, as the SDK's road builds it). */
const LIST_HEAD = '{"result":{"tools":';

/** The rest of a `tools/list` answer's message after `message`: its `jsonrpc` and the request's id, as `JSON.stringify` gives them. */
export const answerTail = (id: string | number): Buffer => Buffer.from(`,"jsonrpc":"2.0","id":${JSON.stringify(id)}}`);

interface Kept extends ToolsAnswer {
  /** What the answer was built from, compared by identity: each server's id, name and listed items, in order. */
  basis: readonly unknown[];
  /** When it was built from what the catalog keeps alone: where the catalog's sources stood, and until when it holds. */
  stamp: AnswerStamp | undefined;
}

/**
 * An answer built from what the catalog keeps alone (`gather`'s `until`), over stores that count their changes: the
 * catalog's revision it was read at, unchanged until its end, and the earliest end of a listing's TTL among those
 * it shows. While the catalog's sources are the same and its clock is before `until`, a new gather would read the very
 * same servers and listings, and build this answer again.
 */
export interface AnswerStamp {
  revision: CatalogRevision;
  until: number;
  /** The servers whose listings it shows, in order. */
  sources: readonly string[];
  /** When (the catalog's clock) its sources were last marked used (`ToolsAnswers`' `touch`). */
  touchedAt: number;
}

/**
 * How often an answer taken as kept marks the listings it was built from used (`ListingCache.touch`), in ms: often
 * enough for the listing cache's least-recently-used order, and not on every list (500 servers' listings are 500
 * moves).
 */
export const TOUCH_EVERY_MS = 1000;

/** What is kept of a `tools` array this made, for as long as the array lives. */
interface Serialized {
  message: Buffer;
  /** Each wire encoding asked (`messageOf`), and whether it leaves the list as it is. */
  plainTo: WeakMap<object, boolean>;
}

/**
 * The `tools/list` answers of the views that listed lately (a view: account, server, key allowlists), each kept with
 * the basis it was built from — every server's id and name and the very listing it read (the listing cache's own
 * object, replaced whenever an upstream's list is fetched again: after its `list_changed`, its TTL, a change of the
 * server) — and reused only while a new listing's basis is the same, element for element. So an answer is never kept
 * past a change of what it shows: a server added, renamed, deleted or left out, a listing renewed. The key's scopes
 * are checked on every list before any answer is looked at. Bounded by the bytes of the answers' JSON, least recently
 * used out first; an answer larger than the bound is not kept.
 */
export class ToolsAnswers {
  private readonly kept = new Map<string, Kept>();
  private bytes = 0;
  private readonly serialized = new WeakMap<Tool[], Serialized>();

  /**
   * `touch`: told the servers of an answer taken as kept (`current`), at most every `TOUCH_EVERY_MS`, so that the
   * listings in use stay the most recently used in the listing cache although no gather reads them.
   */
  constructor(
    private readonly maxBytes: number,
    private readonly touch?: (serverIds: readonly string[]) => void,
  ) {}

  /**
   * The answer kept for `view` when it bears a stamp (`AnswerStamp`) that still holds at `revision`: nothing it was
   * built from has changed since, so it is what `get` would find after a gather, without the gather.
   */
  current(view: string, revision: CatalogRevision): ToolsAnswer | undefined {
    const kept = this.kept.get(view);
    const stamp = kept?.stamp;
    if (stamp === undefined || revision.at >= stamp.until || !sameSources(stamp.revision, revision)) return undefined;
    if (this.touch !== undefined && revision.at - stamp.touchedAt >= TOUCH_EVERY_MS) {
      stamp.touchedAt = revision.at;
      this.touch(stamp.sources);
    }
    return this.used(view, kept as Kept);
  }

  /** The answer kept for `view` when it was built from the same basis; it takes `stamp` (or none) from now on. */
  get(view: string, basis: readonly unknown[], stamp?: AnswerStamp): ToolsAnswer | undefined {
    const kept = this.kept.get(view);
    if (kept === undefined) return undefined;
    if (kept.basis.length !== basis.length || kept.basis.some((part, i) => part !== basis[i])) return undefined;
    kept.stamp = stamp;
    return this.used(view, kept);
  }

  /** Keeps a new answer of `view` (in place of the one it had), with its stamp if it has one, and returns it. */
  set(view: string, basis: readonly unknown[], tools: Tool[], stamp?: AnswerStamp): ToolsAnswer {
    const message = Buffer.from(`${LIST_HEAD}${JSON.stringify(tools)}}`);
    const json = message.subarray(LIST_HEAD.length, message.length - 1);
    const answer: Kept = { basis, stamp, tools, names: tools.map((tool) => tool.name).sort(), json, message };
    this.serialized.set(tools, { message, plainTo: new WeakMap() });
    this.drop(view);
    if (answer.json.length > this.maxBytes) return answer;
    this.kept.set(view, answer);
    this.bytes += answer.json.length;
    for (const [oldest] of this.kept) {
      if (this.bytes <= this.maxBytes) break;
      this.drop(oldest);
    }
    return answer;
  }

  /**
   * The answer's message up to its id (`ToolsAnswer.message`) of a `tools` array this made (an answer's), for as long
   * as the array lives, when the wire encoding `era` (the SDK's codec of a protocol era) leaves the list as it is;
   * `undefined` otherwise. `leaves` asks the codec; it is asked once per array and era, as neither changes: a kept
   * array is never altered, and a codec's `tools/list` encoding depends on the tools alone (the 2025 one wraps a
   * non-object `outputSchema`, SEP-2106). So a list from the cache costs no look at its tools.
   */
  messageOf(tools: Tool[], era: object, leaves: (tools: Tool[]) => boolean): Buffer | undefined {
    const kept = this.serialized.get(tools);
    if (kept === undefined) return undefined;
    let plain = kept.plainTo.get(era);
    if (plain === undefined) kept.plainTo.set(era, (plain = leaves(tools)));
    return plain ? kept.message : undefined;
  }

  /** The bytes kept (tests, metrics). */
  get size(): number {
    return this.bytes;
  }

  clear(): void {
    this.kept.clear();
    this.bytes = 0;
  }

  /** `kept`, now the most recently used (last). */
  private used(view: string, kept: Kept): Kept {
    this.kept.delete(view);
    this.kept.set(view, kept);
    return kept;
  }

  private drop(view: string): void {
    const kept = this.kept.get(view);
    if (kept === undefined) return;
    this.kept.delete(view);
    this.bytes -= kept.json.length;
  }
}
