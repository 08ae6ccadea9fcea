import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { FleetError } from '../errors/fleet-error.js';
import { describe, expect, it } from 'vitest';
import {
  isWebhookSecret,
  newWebhookSecret,
  serviceSignature,
  sign,
  verify,
  verifyServiceSignature,
} from './signature.js';

// The Standard Webhooks libraries' own test vector (standard-webhooks/standard-webhooks, libraries' tests).
const VECTOR = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};
const at = (seconds: number) => () => seconds * 1000;

describe('serviceSignature (docs/webhooks.md)', () => {
  it("gives GitHub's published value for its documented example", () => {
    // docs.github.com, "Validating webhook deliveries": the same HMAC-SHA256 scheme as X-Hub-Signature-256.
    expect(serviceSignature("It's a Secret to Everybody", 'Hello, World!')).toBe(
      'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17',
    );
  });

  it('signs the exact bytes: a string and its UTF-8 bytes sign alike, one changed byte does not', () => {
    const secret = newWebhookSecret();
    const body = '{"name":"café"}';
    expect(serviceSignature(secret, Buffer.from(body))).toBe(serviceSignature(secret, body));
    expect(serviceSignature(secret, body.replace('é', 'e'))).not.toBe(serviceSignature(secret, body));
    expect(verifyServiceSignature(secret, body, serviceSignature(secret, body))).toBe(true);
    expect(verifyServiceSignature(secret, `${body} `, serviceSignature(secret, body))).toBe(false);
    expect(verifyServiceSignature(newWebhookSecret(), body, serviceSignature(secret, body))).toBe(false);
    expect(verifyServiceSignature(secret, body, 'sha256=abc')).toBe(false);
    expect(verifyServiceSignature(secret, body, undefined)).toBe(false);
  });
});

describe('secrets', () => {
  it('are whsec_ and 32 base64 characters, each one new', () => {
    const a = newWebhookSecret();
    expect(a).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    expect(isWebhookSecret(a)).toBe(true);
    expect(newWebhookSecret()).not.toBe(a);
    expect(isWebhookSecret('whsec_short')).toBe(false);
  });

  it('refuses a secret without the whsec_ form, without echoing it', () => {
    expect(() => sign('plain-secret-value', '{}', { id: 'dlv_1', timestamp: 1 })).toThrow(TypeError);
    expect(() => sign('plain-secret-value', '{}', { id: 'dlv_1', timestamp: 1 })).not.toThrow(/plain-secret-value/);
    // A typo that base64 decoding would silently drop is refused too.
    expect(() => sign('whsec_MfKQ9r8GKYqrTwjUPD8I!PZIo2LaLaSw', '{}', { id: 'dlv_1', timestamp: 1 })).toThrow(TypeError);
  });
});

describe('Standard Webhooks headers', () => {
  it("reproduce the library's own test vector", () => {
    const headers = sign(VECTOR.secret, VECTOR.body, { id: VECTOR.id, timestamp: VECTOR.timestamp });
    expect(headers['webhook-signature']).toBe(VECTOR.signature);
    expect(headers['webhook-id']).toBe(VECTOR.id);
    expect(headers['webhook-timestamp']).toBe(String(VECTOR.timestamp));
  });

  it("verify the library's test vector with our verify", () => {
    const headers = { 'webhook-id': VECTOR.id, 'webhook-timestamp': String(VECTOR.timestamp), 'webhook-signature': VECTOR.signature };
    expect(verify(VECTOR.secret, VECTOR.body, headers, { now: at(VECTOR.timestamp) })._unsafeUnwrap()).toEqual({
      id: VECTOR.id,
      timestamp: VECTOR.timestamp,
    });
  });

  it('are accepted by the standardwebhooks package, and its signatures by us', () => {
    const secret = newWebhookSecret();
    const body = JSON.stringify({ id: 'evt_1', type: 'server.created', data: { server: { name: 'x' } } });
    const timestamp = Math.floor(Date.now() / 1000);
    const ours = sign(secret, body, { id: 'dlv_abc', timestamp });
    expect(new Webhook(secret).verify(body, ours)).toEqual(JSON.parse(body));

    const theirs = new Webhook(secret).sign('dlv_xyz', new Date(timestamp * 1000), body);
    const headers = { 'webhook-id': 'dlv_xyz', 'webhook-timestamp': String(timestamp), 'webhook-signature': theirs };
    expect(verify(secret, body, headers).isOk()).toBe(true);
  });

  it('the seed header matches an independent HMAC of the same bytes', () => {
    const secret = newWebhookSecret();
    const body = '{"a":1}';
    const headers = sign(secret, body, { id: 'dlv_1', timestamp: 1_700_000_000 });
    expect(headers['x-service-signature']).toBe(`sha256=${createHmac('sha256', secret).update(body).digest('hex')}`);
  });
});

describe('verify refuses', () => {
  const secret = newWebhookSecret();
  const body = '{"id":"evt_1","type":"server.created"}';
  const timestamp = 1_800_000_000;
  const headers = sign(secret, body, { id: 'dlv_1', timestamp });
  const code = (result: ReturnType<typeof verify>) => (result.isErr() ? result.error.code : 'OK');

  it('a tampered body, a wrong secret, a changed id', () => {
    expect(code(verify(secret, body, headers, { now: at(timestamp) }))).toBe('OK');
    expect(code(verify(secret, body.replace('created', 'deleted'), headers, { now: at(timestamp) }))).toBe('BAD_SIGNATURE');
    expect(code(verify(newWebhookSecret(), body, headers, { now: at(timestamp) }))).toBe('BAD_SIGNATURE');
    expect(code(verify(secret, body, { ...headers, 'webhook-id': 'dlv_2' }, { now: at(timestamp) }))).toBe('BAD_SIGNATURE');
    const wrongSeed = serviceSignature(newWebhookSecret(), body);
    expect(code(verify(secret, body, { ...headers, 'x-service-signature': wrongSeed }, { now: at(timestamp) }))).toBe('BAD_SIGNATURE');
  });

  it('a timestamp more than 5 minutes off either way, but not one within', () => {
    expect(code(verify(secret, body, headers, { now: at(timestamp + 360) }))).toBe('TIMESTAMP_OUT_OF_TOLERANCE');
    expect(code(verify(secret, body, headers, { now: at(timestamp - 360) }))).toBe('TIMESTAMP_OUT_OF_TOLERANCE');
    expect(code(verify(secret, body, headers, { now: at(timestamp + 299) }))).toBe('OK');
    expect(code(verify(secret, body, headers, { now: at(timestamp + 360), toleranceSeconds: 600 }))).toBe('OK');
  });

  it('missing or malformed headers, with 400', () => {
    const missing = verify(secret, body, { 'webhook-id': 'dlv_1' }, { now: at(timestamp) });
    expect(missing._unsafeUnwrapErr()).toBeInstanceOf(FleetError);
    expect(missing._unsafeUnwrapErr()).toMatchObject({ code: 'MISSING_HEADERS', status: 400, details: { missing: ['webhook-timestamp', 'webhook-signature'] } });
    expect(code(verify(secret, body, { ...headers, 'webhook-timestamp': 'soon' }, { now: at(timestamp) }))).toBe('INVALID_HEADERS');
    expect(code(verify(secret, body, { ...headers, 'webhook-signature': 'v2,abc' }, { now: at(timestamp) }))).toBe('BAD_SIGNATURE');
    expect(code(verify(secret, body, { ...headers, 'webhook-signature': `${headers['webhook-signature']}!!` }, { now: at(timestamp) }))).toBe('BAD_SIGNATURE');
  });

  it('accepts one good signature among several (secret rotation), from Fetch Headers too', () => {
    const other = sign(newWebhookSecret(), body, { id: 'dlv_1', timestamp })['webhook-signature'];
    const both = new Headers({ ...headers, 'webhook-signature': `${other} ${headers['webhook-signature']}` });
    // Node gives a repeated header as an array.
    expect(code(verify(secret, body, { ...headers, 'webhook-signature': [other, headers['webhook-signature']] }, { now: at(timestamp) }))).toBe('OK');
    expect(code(verify(secret, body, both, { now: at(timestamp) }))).toBe('OK');
    expect(code(verify(secret, body, new Headers({ ...headers, 'webhook-signature': other }), { now: at(timestamp) }))).toBe('BAD_SIGNATURE');
  });
});
