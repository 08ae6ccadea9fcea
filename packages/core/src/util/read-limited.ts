/** A decimal `Content-Length`, the only form HTTP allows. */
const DECIMAL = /^\d{1,15}$/;

/**
 * The whole body of a Web `Request` (or `Response`), or `undefined` as soon as it passes `limit` bytes: the rest is
 * never read, so memory stays bounded whatever the peer sends. The API's body reader and the webhook receiver use it.
 *
 * A body whose `Content-Length` is within the limit is read in one `arrayBuffer()`: HTTP framing ends it at that
 * length, and adapters such as `@hono/node-server` then read the socket directly instead of through a
 * `ReadableStream` (a stream, a reader and a promise per chunk less on every POST). A body longer than it declared
 * is still refused.
 */
export async function readLimited(
  request: Pick<Request, 'body'> & Partial<Pick<Request, 'headers' | 'arrayBuffer'>>,
  limit: number,
  /** Reads such a body whole from the request underneath, without the `Request`'s copy (`RequestContext.readBody`); `undefined` from it: the `Request` reads it. */
  readWhole?: () => Promise<Uint8Array> | undefined,
): Promise<Uint8Array | undefined> {
  const declared = request.headers?.get('content-length');
  if (declared !== null && declared !== undefined && DECIMAL.test(declared) && Number(declared) <= limit && request.arrayBuffer !== undefined) {
    const bytes = (await readWhole?.()) ?? new Uint8Array(await request.arrayBuffer());
    return bytes.byteLength > limit ? undefined : bytes;
  }
  if (request.body === null) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      return undefined;
    }
    chunks.push(value);
  }
  const out = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}
