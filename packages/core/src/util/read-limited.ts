/**
 * The whole body of a Web `Request` (or `Response`), or `undefined` as soon as it passes `limit` bytes: the rest is
 * never read, so memory stays bounded whatever the peer sends. The API's body reader and the webhook receiver use it.
 */
export async function readLimited(request: Pick<Request, 'body'>, limit: number): Promise<Uint8Array | undefined> {
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
