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

describe('readJsonBody and lone surrogates', () => {
  it('refuses a string or a key with an unpaired \\uD800-\\uDFFF escape, naming where; a pair is a character', async () => {
    const invalid = async (body: string) => (await readJsonBody(post(body, null), 1_000_000))._unsafeUnwrapErr();
    for (const [body, field] of [
      ['{"name":"x\\ud800"}', 'name'],
      ['{"args":["a","\\udfff"]}', 'args[1]'],
      ['{"env":{"K\\uDBFF":"v"}}', 'env'],
      ['"\\ud800"', 'body'],
      ['{"a":{"b":"\\udc00\\ud800"}}', 'a.b'],
    ] as const) {
      const error = await invalid(body);
      expect(error.code, body).toBe('INVALID_REQUEST');
      expect(error.details, body).toMatchObject({ field, issue: expect.stringMatching(/lone surrogate/) });
    }
    expect((await readJsonBody(post('{"name":"\\ud83d\\udef0 and \\\\ud800"}', null), 1000))._unsafeUnwrap()).toEqual({ name: '\u{1F6F0} and \\ud800' });
  });

  it('walks a deep body without recursion, and finds the surrogate at the bottom', async () => {
    const depth = 20_000;
    const error = (await readJsonBody(post(`${'['.repeat(depth)}"\\ud800"${']'.repeat(depth)}`, null), 1_000_000))._unsafeUnwrapErr();
    expect(error.details.field).toBe('[0]'.repeat(depth));
  });
});

