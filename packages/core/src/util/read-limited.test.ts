import { describe, expect, it } from 'vitest';
import { readLimited } from './read-limited.js';

const post = (body: string | ReadableStream<Uint8Array>, headers: Record<string, string> = {}) => new Request('http://fleet.invalid/', { method: 'POST', body, headers, duplex: 'half' } as RequestInit);

/** A streamed body (no Content-Length) of `size` bytes in pieces of 100, counting the pieces read. */
function streamed(size: number) {
  let pulled = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (pulled * 100 >= size) return controller.close();
      controller.enqueue(new Uint8Array(Math.min(100, size - pulled * 100)).fill(120));
      pulled += 1;
    },
  });
  return { stream, pulled: () => pulled };
}

describe('readLimited', () => {
  it('reads a body with a Content-Length within the limit whole', async () => {
    const bytes = await readLimited(post('{"name":"ping"}', { 'content-length': '15' }), 15);
    expect(new TextDecoder().decode(bytes)).toBe('{"name":"ping"}');
  });

  it('refuses a body longer than the limit, declared or not', async () => {
    expect(await readLimited(post('x'.repeat(16), { 'content-length': '16' }), 15)).toBeUndefined();
    expect(await readLimited(post(streamed(1000).stream), 150)).toBeUndefined();
  });

  it('refuses a body longer than its Content-Length said when that passes the limit', async () => {
    expect(await readLimited(post('x'.repeat(20), { 'content-length': '5' }), 10)).toBeUndefined();
  });

  it('stops reading a streamed body as soon as it passes the limit', async () => {
    const body = streamed(100_000);
    expect(await readLimited(post(body.stream), 250)).toBeUndefined();
    expect(body.pulled()).toBeLessThan(10);
  });

  it('reads a body declared within the limit from the request underneath when asked to, the Request otherwise', async () => {
    const underneath = new TextEncoder().encode('{"from":"node"}');
    const whole = await readLimited(post('{"from":"web"}', { 'content-length': '14' }), 64, () => Promise.resolve(underneath));
    expect(whole).toBe(underneath);
    // Nothing underneath (already read by someone else): the Request's body.
    expect(new TextDecoder().decode(await readLimited(post('{"from":"web"}', { 'content-length': '14' }), 64, () => undefined))).toBe('{"from":"web"}');
    // Past the limit, whatever it declared: refused; and a body declared past the limit is never read whole.
    expect(await readLimited(post('{}', { 'content-length': '2' }), 10, () => Promise.resolve(new Uint8Array(11)))).toBeUndefined();
    let asked = false;
    expect(await readLimited(post('x'.repeat(16), { 'content-length': '16' }), 15, () => ((asked = true), Promise.resolve(new Uint8Array(16))))).toBeUndefined();
    expect(asked).toBe(false);
  });

  it('reads a streamed body within the limit, and an empty one', async () => {
    expect((await readLimited(post(streamed(250).stream), 250))?.byteLength).toBe(250);
    expect((await readLimited(new Request('http://fleet.invalid/'), 10))?.byteLength).toBe(0);
  });
});
