import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { newWebhookSecret, sign } from './signature.js';

describe('sign', () => {
  it("gives GitHub's published value for its example secret and body", () => {
    const headers = sign("It's a Secret to Everybody", 'Hello, World!', { id: 'dlv_x', timestamp: 1 });
    expect(headers['x-service-signature']).toBe('sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17');
  });

  it('signs id, timestamp and body the Standard Webhooks way, with the decoded secret', () => {
    const secret = newWebhookSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    const body = '{"a":1}';
    const headers = sign(secret, body, { id: 'dlv_1', timestamp: 1795860000 });
    const expected = createHmac('sha256', Buffer.from(secret.slice(6), 'base64')).update(`dlv_1.1795860000.${body}`).digest('base64');
    expect(headers).toEqual({
      'x-service-signature': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`,
      'webhook-id': 'dlv_1',
      'webhook-timestamp': '1795860000',
      'webhook-signature': `v1,${expected}`,
    });
  });
});
