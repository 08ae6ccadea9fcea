import { describe, expect, it } from 'vitest';
import { envelopeHeaders, envelopeText, errorResponse, successResponse } from './envelope.js';

const meta = { timestamp: '2026-11-24T00:00:00.000Z', request_id: 'req_test' };

describe('envelope answers for an adapter that writes them itself (light)', () => {
  it('are Responses with the same status, headers and bytes as the ordinary ones', async () => {
    const light = successResponse(201, { id: 'srv_1' }, meta, undefined, { 'x-ratelimit-limit': '10' }, true);
    const plain = successResponse(201, { id: 'srv_1' }, meta, undefined, { 'x-ratelimit-limit': '10' });
    expect(light).toBeInstanceOf(Response);
    expect(light.status).toBe(201);
    expect(envelopeText(light)).toBe(envelopeText(plain));
    expect(envelopeHeaders(light)).toEqual(Object.fromEntries(plain.headers));
    expect(envelopeHeaders(plain)).toBeUndefined();
    // Anything more: the real Response, made then, with the same answer.
    expect(light.ok).toBe(true);
    expect([...light.headers]).toEqual([...plain.headers]);
    expect(await light.text()).toBe(await plain.text());
    expect(light.bodyUsed).toBe(true);
    expect(envelopeText(light)).toBeUndefined();
    expect(envelopeHeaders(light)).toBeUndefined();
  });

  it('give up their plain headers once the real headers may have changed', () => {
    const light = errorResponse({ code: 'NOT_FOUND', status: 404, message: 'No such route.', details: {} }, meta, {}, true);
    light.headers.set('connection', 'close');
    expect(envelopeHeaders(light)).toBeUndefined();
    expect(light.headers.get('connection')).toBe('close');
    expect(envelopeText(light)).toContain('"NOT_FOUND"');
    expect(light.clone().status).toBe(404);
  });
});
