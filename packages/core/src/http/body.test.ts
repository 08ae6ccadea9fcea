import { describe, expect, it } from 'vitest';
import { readJsonBody } from './body.js';

const post = (body: string, length: string | null, contentType = 'application/json') =>
  new Request('http://x/v1/servers', {
    method: 'POST',
    headers: { 'content-type': contentType, ...(length === null ? {} : { 'content-length': length }) },
    body,
  });

describe('readJsonBody, with a server that holds bodies to their Content-Length (withinLength)', () => {
  it('reads a body that declares its length whole, with the same answers as the streamed read', async () => {
    const body = JSON.stringify({ name: 'é', n: 1 });
    for (const withinLength of [false, true]) {
      expect((await readJsonBody(post(body, String(Buffer.byteLength(body))), 100, withinLength))._unsafeUnwrap()).toEqual({ name: 'é', n: 1 });
      expect((await readJsonBody(post('{"a":', '5'), 100, withinLength))._unsafeUnwrapErr().code).toBe('INVALID_REQUEST');
      expect((await readJsonBody(post('{}', '2', 'text/plain'), 100, withinLength))._unsafeUnwrapErr().code).toBe('UNSUPPORTED_MEDIA_TYPE');
      expect((await readJsonBody(post('x'.repeat(200), '200'), 100, withinLength))._unsafeUnwrapErr().code).toBe('PAYLOAD_TOO_LARGE');
    }
  });

  it('still refuses a body longer than the limit when the declared length lied', async () => {
    const long = JSON.stringify({ pad: 'x'.repeat(500) });
    const lying = post(long, '10');
    expect(lying.headers.get('content-length')).toBe('10');
    expect((await readJsonBody(lying, 100, true))._unsafeUnwrapErr().code).toBe('PAYLOAD_TOO_LARGE');
  });
});
