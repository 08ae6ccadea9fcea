import { err, ok, type Result } from 'neverthrow';
import { FleetError, invalidRequest } from '../errors/fleet-error.js';
import { readLimited } from '../util/read-limited.js';
import { formatPath } from '../validation/zod-issues.js';

export const DEFAULT_BODY_LIMIT = 64 * 1024;

/** One decoder for every body: a whole-input `decode` (no `stream`) keeps no state from one call to the next. */
const UTF8 = new TextDecoder('utf-8', { fatal: true });

const tooLarge = (limit: number) =>
  new FleetError('PAYLOAD_TOO_LARGE', { message: `The request body is larger than ${limit} bytes.`, details: { limit_bytes: limit } });

function isJson(contentType: string): boolean {
  if (contentType === 'application/json') return true;
  const media = contentType.split(';', 1)[0]?.trim().toLowerCase();
  return media === 'application/json';
}

/**
 * Reads a JSON request body: 413 from `Content-Length` before reading and again as soon as the stream passes the
 * limit (`withinLength`: the adapter's server holds the body to its `Content-Length`, so a body that declares one is
 * read whole), 415 for another media type, 400 for no body or malformed JSON. The JSON parser's own message is never
 * returned: it quotes the body, which may hold secrets.
 */
export async function readJsonBody(
  request: Request,
  limit: number,
  withinLength = false,
  readBody?: () => Promise<Uint8Array> | undefined,
): Promise<Result<unknown, FleetError>> {
  const declared = request.headers.get('content-length');
  if (declared !== null && Number(declared) > limit) return err(tooLarge(limit));
  const contentType = request.headers.get('content-type');
  if (contentType !== null && !isJson(contentType)) {
    return err(unsupported(contentType));
  }
  // A compressed body would be read as bytes that are not JSON: say what is wrong instead (docs/errors.md).
  const encoding = request.headers.get('content-encoding');
  if (encoding !== null && encoding.trim().toLowerCase() !== 'identity') {
    return err(
      new FleetError('UNSUPPORTED_MEDIA_TYPE', {
        message: 'The request body must not be compressed: send it without Content-Encoding (or identity).',
        details: { content_encoding: encoding.slice(0, 100) },
      }),
    );
  }
  let bytes: Uint8Array | undefined;
  try {
    // When the server guarantees the body is no longer than its declared length (checked above against the limit),
    // it is read whole: no stream to make and read chunk by chunk (and, when the adapter reads it from the Node
    // request itself, no copy of it). Checked again after, whatever the server said.
    if (withinLength && declared !== null && /^\d+$/.test(declared)) {
      bytes = (await readBody?.()) ?? new Uint8Array(await request.arrayBuffer());
      if (bytes.byteLength > limit) bytes = undefined;
    } else bytes = await readLimited(request, limit);
  } catch {
    // The client went away (or the stream broke) mid-body: its answer goes nowhere, and this is no fault of ours.
    return err(invalidRequest([{ field: 'body', issue: 'was not received whole: the connection ended before it did' }]));
  }
  if (bytes === undefined) return err(tooLarge(limit));
  if (bytes.byteLength === 0) return err(invalidRequest([{ field: 'body', issue: 'is required: a JSON object' }]));
  if (contentType === null) return err(unsupported(null));
  let text: string;
  try {
    text = UTF8.decode(bytes);
  } catch {
    return err(invalidRequest([{ field: 'body', issue: 'is not valid UTF-8' }]));
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return err(invalidRequest([{ field: 'body', issue: 'is not valid JSON' }], 'The request body is not valid JSON.'));
  }
  // Only a `\uD8xx`-`\uDFxx` escape can put a lone surrogate in (UTF-8 holds none): most bodies skip the walk.
  const lone = SURROGATE_ESCAPE.test(text) ? loneSurrogateAt(value) : undefined;
  if (lone !== undefined) return err(invalidRequest([{ field: lone, issue: 'must be well-formed Unicode: it holds a lone surrogate (an unpaired \\uD800-\\uDFFF escape)' }]));
  return ok(value);
}

const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;
/** An unpaired UTF-16 surrogate: no Unicode text holds one, and stores refuse it (PostgreSQL's json) or mangle it. */
const LONE_SURROGATE = /\p{Cs}/u;

/** A value of a body being walked, with the way to it: its key and the entry that holds it. */
interface Walked {
  value: unknown;
  key: PropertyKey | undefined;
  parent: Walked | undefined;
}

/**
 * Where in a parsed body a string or a key holds a lone surrogate (`name`, `args[2]`; `body` for the body itself), if
 * anywhere. Walks with a stack of its own, each entry linked to its parent (no path copied per level): a body may nest
 * as deep as `JSON.parse` goes.
 */
function loneSurrogateAt(body: unknown): string | undefined {
  const where = (entry: Walked): string => {
    const path: PropertyKey[] = [];
    for (let at: Walked | undefined = entry; at?.key !== undefined; at = at.parent) path.unshift(at.key);
    return formatPath(path) || 'body';
  };
  const pending: Walked[] = [{ value: body, key: undefined, parent: undefined }];
  for (let entry = pending.pop(); entry !== undefined; entry = pending.pop()) {
    const { value } = entry;
    if (typeof value === 'string') {
      if (LONE_SURROGATE.test(value)) return where(entry);
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) pending.push({ value: value[i], key: i, parent: entry });
    } else if (value !== null && typeof value === 'object') {
      for (const [key, item] of Object.entries(value)) {
        if (LONE_SURROGATE.test(key)) return where(entry);
        pending.push({ value: item, key, parent: entry });
      }
    }
  }
  return undefined;
}

function unsupported(contentType: string | null): FleetError {
  return new FleetError('UNSUPPORTED_MEDIA_TYPE', { details: { content_type: contentType === null ? null : contentType.slice(0, 200) } });
}
