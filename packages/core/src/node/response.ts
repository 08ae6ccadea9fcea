import type { ServerResponse } from 'node:http';
import { envelopeHeaders, envelopeText } from '../http/envelope.js';

/**
 * Sends a Web `Response` on a Node `ServerResponse`: status, headers (each `Set-Cookie` on its own line, which
 * `Headers.forEach` would not give) and the body streamed chunk by chunk, waiting for `drain` when the socket is
 * full, never buffered whole. A client that goes away cancels the body. Headers already set on `res` (by the host
 * app) stay unless the response sets the same name.
 *
 * An API answer (the JSON envelope, whose text is already in memory) goes out whole instead: headers, a
 * `Content-Length` and the body in one write, as `res.json` would send it, not as a chunked stream.
 */
export async function writeWebResponse(res: ServerResponse, response: Response): Promise<void> {
  // An envelope made for us (`writesAnswer`): its plain headers and text as they are, no Headers, no body stream.
  const plain = envelopeHeaders(response);
  const plainText = plain === undefined ? undefined : envelopeText(response);
  if (plain !== undefined && plainText !== undefined) {
    res.writeHead(response.status, { ...plain, 'content-length': String(Buffer.byteLength(plainText)) });
    res.end(plainText);
    return;
  }
  // One pass over the headers: iteration gives each Set-Cookie on its own, as getSetCookie() would.
  const headers: Record<string, string | string[]> = {};
  let cookies: string[] | undefined;
  response.headers.forEach((value, name) => {
    if (name !== 'set-cookie') headers[name] = value;
    else (cookies ??= []).push(value);
  });
  if (cookies !== undefined) headers['set-cookie'] = cookies;
  const text = envelopeText(response);
  if (text !== undefined && headers['content-encoding'] === undefined) {
    headers['content-length'] = String(Buffer.byteLength(text));
    res.writeHead(response.status, headers);
    res.end(text);
    return;
  }
  res.writeHead(response.status, headers);
  if (response.body === null) {
    res.end();
    return;
  }
  // An event stream may stay silent a long time (an MCP GET stream until its first notification): the client gets
  // its status now, not with the first event (Node holds the headers until the first write otherwise).
  if (/^text\/event-stream\b/i.test(response.headers.get('content-type') ?? '')) res.flushHeaders();
  const reader = response.body.getReader();
  const cancel = () => {
    reader.cancel().catch(() => {});
  };
  res.once('close', cancel);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done || res.destroyed) break;
      if (!res.write(value)) await drained(res);
    }
    res.end();
  } catch (error) {
    // The status is sent: all that is left to say is that the body is incomplete.
    res.destroy();
    throw error;
  } finally {
    res.off('close', cancel);
  }
}

/** Resolves when `res` can take more, or is closed (a `drain` that never comes must not hang us). */
function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}
