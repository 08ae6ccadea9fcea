import { describe, expect, it } from 'vitest';
import { issuesOf } from '../validation/test-helpers.js';
import { WebhookValidator } from './schema.js';

describe('WebhookValidator', () => {
  const strict = new WebhookValidator();
  const open = new WebhookValidator({ allowPrivateNetworks: true });
  const listed = new WebhookValidator({ allowPrivateNetworks: ['10.0.0.0/8', 'hooks.internal'] });
  const fields = (result: ReturnType<WebhookValidator['input']>) => (result.isOk() ? [] : issuesOf(result).map((i) => i.field));

  it('takes url, events and an optional description', () => {
    expect(strict.input({ url: 'https://hooks.example.com/a', events: ['server.created'] })._unsafeUnwrap()).toEqual({
      url: 'https://hooks.example.com/a',
      events: ['server.created'],
    });
    expect(strict.input({ url: 'https://h.example.com/', events: ['tool_call.failed'], description: 'x' }).isOk()).toBe(true);
  });

  it('requires https unless private networks are allowed', () => {
    expect(fields(strict.input({ url: 'http://hooks.example.com/a', events: ['server.created'] }))).toEqual(['url']);
    expect(open.input({ url: 'http://hooks.example.com/a', events: ['server.created'] }).isOk()).toBe(true);
    expect(listed.input({ url: 'http://hooks.example.com/a', events: ['server.created'] }).isOk()).toBe(true);
  });

  it('refuses addresses the guard would refuse, unless allowed', () => {
    for (const url of ['https://10.1.2.3/', 'https://[fd00::1]/', 'https://169.254.169.254/', 'https://127.0.0.1/', 'https://localhost/']) {
      expect(fields(strict.input({ url, events: ['server.created'] })), url).toEqual(['url']);
    }
    expect(listed.input({ url: 'https://10.1.2.3/', events: ['server.created'] }).isOk()).toBe(true);
    expect(fields(listed.input({ url: 'https://192.168.1.1/', events: ['server.created'] }))).toEqual(['url']);
    expect(open.input({ url: 'https://localhost:8080/', events: ['server.created'] }).isOk()).toBe(true);
  });

  it('names every problem, never echoing the value', () => {
    const result = strict.input({ url: 'https://a:SECRETPW@h.example.com/', events: ['nope'], id: 'wh_x', extra: 1 });
    expect(result.isOk()).toBe(false);
    expect(issuesOf(result).map((i) => i.field).sort()).toEqual(['events[0]', 'extra', 'id', 'url']);
    expect(JSON.stringify(issuesOf(result))).not.toContain('SECRETPW');
  });

  it('patches: at least one field, enabled a boolean, description nullable', () => {
    expect(strict.update({}).isOk()).toBe(false);
    expect(strict.update({ enabled: 'yes' }).isOk()).toBe(false);
    expect(strict.update({ description: null, enabled: true })._unsafeUnwrap()).toEqual({ description: null, enabled: true });
    expect(strict.update({ events: [] }).isOk()).toBe(false);
  });
});
