import type { Duplex } from 'node:stream';
import { FleetError } from '../errors/fleet-error.js';
import { errorResponse } from '../http/envelope.js';
import { newId } from '../util/ids.js';

/**
 * Answers what Node's HTTP parser refused before any handler ran (an unknown method, a bad `Content-Length`, a
 * request that did not arrive in time) in the API's error envelope, with its base headers and an `X-Request-Id`, where
 * the socket can still take it. For `server.on('clientError', answerClientError)`.
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  if (!socket.writable || error.code === 'ECONNRESET') {
    socket.destroy();
    return;
  }
  const timedOut = error.code === 'ERR_HTTP_REQUEST_TIMEOUT';
  const refusal = new FleetError('INVALID_REQUEST', {
    message: timedOut ? 'The request did not arrive in time.' : 'The request is not valid HTTP.',
  });
  const response = errorResponse(refusal, { timestamp: new Date().toISOString(), request_id: newId('request') });
  void response.text().then((body) => {
    const [status, reason] = timedOut ? [408, 'Request Timeout'] : [400, 'Bad Request'];
    const head = [...response.headers].map(([name, value]) => `${name}: ${value}\r\n`).join('');
    socket.end(`HTTP/1.1 ${status} ${reason}\r\n${head}content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
  });
}
