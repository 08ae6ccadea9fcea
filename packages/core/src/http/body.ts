import { err, ok, type Result } from 'neverthrow';
import { FleetError, invalidRequest } from '../errors/fleet-error.js';
import { readLimited } from '../util/read-limited.js';

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
export async function readJsonBody(request: Request, limit: number, withinLength = false): Promise<Result<unknown, FleetError>> {
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
    // it is read whole: no stream to make and read chunk by chunk. Checked again after, whatever the server said.
    if (withinLength && declared !== null && /^\d+$/.test(declared)) {
      bytes = new Uint8Array(await request.arrayBuffer());
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
  try {
    return ok(JSON.parse(text));
  } catch {
    return err(invalidRequest([{ field: 'body', issue: 'is not valid JSON' }], 'The request body is not valid JSON.'));
  }
}

function unsupported(contentType: string | null): FleetError {
  return new FleetError('UNSUPPORTED_MEDIA_TYPE', { details: { content_type: contentType === null ? null : contentType.slice(0, 200) } });
}
