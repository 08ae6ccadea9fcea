import type { IncomingMessage } from 'node:http';

/**
 * The whole body of a Node request nobody has read from yet, as the parser hands it over: a body that came in one
 * chunk is that chunk, not copied. For an adapter whose Web `Request` would copy the body into a new `ArrayBuffer`
 * first (`@hono/node-server`'s `arrayBuffer()`: an allocation outside the JavaScript heap on every request):
 * `RequestContext.readBody`. The caller's limits still apply: the core asks for it only for a body whose
 * `Content-Length` is within the limit on a server whose parser holds the body to it (`bodyWithinLength`).
 *
 * `undefined` when the stream was read from already (a body parser, a middleware that read `c.req`), or decodes to
 * strings: then the Web `Request` has the body. Rejects when the request ends before its body does.
 */
export function readWholeBody(req: IncomingMessage): Promise<Uint8Array> | undefined {
  if (req.readableDidRead || req.readableEnded || req.destroyed || req.readableEncoding !== null) return undefined;
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const onData = (chunk: Buffer) => chunks.push(chunk);
    const onEnd = () => {
      done();
      resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks));
    };
    const onFail = () => {
      done();
      reject(new Error('The request ended before its body did.'));
    };
    const onClose = () => {
      if (!req.readableEnded) onFail();
    };
    const done = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onFail);
      req.off('close', onClose);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onFail);
    req.on('close', onClose);
  });
}
