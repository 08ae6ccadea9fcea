import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Result } from 'neverthrow';
import { ERROR_HINTS } from '../errors/codes.js';
import type { FieldIssue, FleetError } from '../errors/fleet-error.js';
import { issuesOf } from '../validation/test-helpers.js';
import { DEFAULT_TIMEOUT_MS, type ServerConfig, ServerValidator } from './schema.js';

const validator = new ServerValidator({ stdioCommands: ['node', '/usr/bin/python3'] });

const http = { name: 'weather', type: 'http', endpoint: 'https://weather.example/mcp' } as const;
const ws = { name: 'stream', type: 'websocket', endpoint: 'wss://stream.example/mcp' } as const;
const stdio = { name: 'local', type: 'stdio', command: 'node' } as const;

type Validated = Result<ServerConfig, FleetError>;

function valid(result: Validated): ServerConfig {
  if (result.isErr()) throw new Error(`expected a valid configuration, got ${JSON.stringify(result.error.details)}`);
  return result.value;
}

const issues = (result: Validated): FieldIssue[] => issuesOf(result);

/** The issue reported for `field`, failing when there is none. */
function issueOf(result: Validated, field: string): string {
  const found = issues(result).find((i) => i.field === field);
  if (found === undefined) throw new Error(`no issue for ${field} in ${JSON.stringify(issues(result))}`);
  return found.issue;
}

describe('ServerValidator.config', () => {
  describe('defaults', () => {
    it('applies the default timeout and leaves optional fields absent', () => {
      expect(valid(validator.config(http))).toEqual({ ...http, timeout: DEFAULT_TIMEOUT_MS });
      expect(DEFAULT_TIMEOUT_MS).toBe(30_000);
    });

    it('fills retry.max_attempts (3) and retry.backoff, and heartbeat.interval (30000)', () => {
      expect(valid(validator.config({ ...ws, retry: { enabled: true }, heartbeat: { enabled: true } }))).toMatchObject({
        retry: { enabled: true, max_attempts: 3, backoff: 'exponential' },
        heartbeat: { enabled: true, interval: 30_000 },
      });
    });

    it('keeps the values given', () => {
      const config = valid(
        validator.config({ ...ws, timeout: 5000, retry: { enabled: false, max_attempts: 7 }, heartbeat: { enabled: false, interval: 2000 } }),
      );
      expect(config).toMatchObject({ timeout: 5000, retry: { enabled: false, max_attempts: 7 }, heartbeat: { enabled: false, interval: 2000 } });
    });
  });

  describe('per-type fields', () => {
    it('requires endpoint for http and websocket, command for stdio', () => {
      expect(issueOf(validator.config({ name: 'a', type: 'http' }), 'endpoint')).toBe('is required');
      expect(issueOf(validator.config({ name: 'a', type: 'websocket' }), 'endpoint')).toBe('is required');
      expect(issueOf(validator.config({ name: 'a', type: 'stdio' }), 'command')).toBe('is required');
    });

    it('stdio takes an optional endpoint of any scheme', () => {
      expect(valid(validator.config(stdio))).not.toHaveProperty('endpoint');
      expect(valid(validator.config({ ...stdio, endpoint: 'file:///tmp/x' }))).toMatchObject({ endpoint: 'file:///tmp/x' });
    });

    it('refuses fields of another type', () => {
      const result = validator.config({ ...http, heartbeat: { enabled: true }, command: 'node', args: [], env: {}, working_directory: '/' });
      for (const field of ['heartbeat', 'command', 'args', 'env', 'working_directory']) {
        expect(issueOf(result, field)).toBe('does not apply to http servers');
      }
      expect(issueOf(validator.config({ ...stdio, authentication: { type: 'bearer', token: 't' } }), 'authentication')).toBe(
        'does not apply to stdio servers',
      );
      expect(issueOf(validator.config({ ...stdio, heartbeat: { enabled: true } }), 'heartbeat')).toBe('does not apply to stdio servers');
      expect(issueOf(validator.config({ ...ws, command: 'node' }), 'command')).toBe('does not apply to websocket servers');
    });

    it('refuses read-only and unknown fields, each by name', () => {
      const result = validator.config({ ...http, id: 'srv_x', status: 'active', health: 'healthy', created_at: 'x', updated_at: 'x', env_keys: [], colour: 'red' });
      for (const field of ['id', 'status', 'health', 'created_at', 'updated_at', 'env_keys']) expect(issueOf(result, field)).toBe('is read-only');
      expect(issueOf(result, 'colour')).toBe('is not a known field');
      expect(issues(result)).toHaveLength(7);
    });

    it('refuses a missing or unknown type', () => {
      expect(issueOf(validator.config({ name: 'a' }), 'type')).toBe('is required');
      expect(issueOf(validator.config({ ...http, type: 'grpc' }), 'type')).toBe('must be "http", "websocket" or "stdio"');
      expect(issueOf(validator.config({ ...http, type: 5 }), 'type')).toBe('must be "http", "websocket" or "stdio"');
    });

    it('refuses a body that is not an object', () => {
      for (const body of [null, [], 'x', 1, undefined]) {
        expect(issues(validator.config(body))).toEqual([{ field: 'body', issue: 'must be a JSON object' }]);
      }
    });

    it('reports every problem at once', () => {
      const result = validator.config({ type: 'http', name: '', endpoint: 'ftp://x', timeout: 0, bogus: true });
      expect(issues(result).map((i) => i.field).sort()).toEqual(['bogus', 'endpoint', 'name', 'timeout']);
    });

    it('names nested fields with dots and indexes', () => {
      const result = validator.config({ ...stdio, args: ['ok', 5], retry: { enabled: true, max_attempts: 0 } });
      expect(issueOf(result, 'args[1]')).toBe('must be a string, not number');
      expect(issueOf(result, 'retry.max_attempts')).toBe('must be at least 1');
    });

    it('says "an object" and "an integer" in type issues', () => {
      expect(issueOf(validator.config({ ...http, authentication: 'x' }), 'authentication')).toBe('must be an object, not string');
      expect(issueOf(validator.config({ ...http, retry: [] }), 'retry')).toBe('must be an object, not array');
      expect(issueOf(validator.config({ ...stdio, env: 'x' }), 'env')).toBe('must be an object, not string');
      expect(issueOf(validator.config({ ...http, timeout: 1.5 }), 'timeout')).toBe('must be an integer');
      expect(issueOf(validator.config({ ...stdio, args: 'x' }), 'args')).toBe('must be an array, not string');
    });
  });

  describe('endpoints', () => {
    it('http takes http: and https: only', () => {
      expect(valid(validator.config({ ...http, endpoint: 'http://weather.example/mcp' })).endpoint).toBe('http://weather.example/mcp');
      for (const endpoint of ['ws://x.example', 'wss://x.example', 'ftp://x.example', 'file:///etc/passwd']) {
        expect(issueOf(validator.config({ ...http, endpoint }), 'endpoint')).toBe('must use the http or https scheme');
      }
    });

    it('websocket takes ws: and wss: only', () => {
      expect(valid(validator.config({ ...ws, endpoint: 'ws://stream.example' })).endpoint).toBe('ws://stream.example');
      expect(issueOf(validator.config({ ...ws, endpoint: 'https://stream.example' }), 'endpoint')).toBe('must use the ws or wss scheme');
    });

    it('refuses what is not an absolute URL', () => {
      for (const endpoint of ['weather.example/mcp', '/mcp', '', 'http//x']) {
        expect(issueOf(validator.config({ ...http, endpoint }), 'endpoint')).toBe('must be a valid absolute URL');
      }
      expect(issueOf(validator.config({ ...http, endpoint: 42 }), 'endpoint')).toBe('must be a string, not number');
    });

    it('refuses credentials in the URL, in every URL field', () => {
      for (const endpoint of ['https://user:pw@weather.example', 'https://user@weather.example', 'https://:pw@weather.example']) {
        expect(issueOf(validator.config({ ...http, endpoint }), 'endpoint')).toBe('must not carry credentials; use the authentication object');
      }
      expect(issueOf(validator.config({ ...ws, endpoint: 'wss://u:p@stream.example' }), 'endpoint')).toMatch(/credentials/);
      expect(issueOf(validator.config({ ...stdio, endpoint: 'http://u:p@x.example' }), 'endpoint')).toMatch(/credentials/);
      const oauth = { type: 'oauth2', client_id: 'id', client_secret: 's', token_url: 'https://u:p@auth.example/token' };
      expect(issueOf(validator.config({ ...http, authentication: oauth }), 'authentication.token_url')).toMatch(/credentials/);
    });

    it('requireTls leaves only https: and wss:', () => {
      const tls = new ServerValidator({ requireTls: true });
      expect(valid(tls.config(http)).endpoint).toBe('https://weather.example/mcp');
      expect(valid(tls.config(ws)).endpoint).toBe('wss://stream.example/mcp');
      expect(issueOf(tls.config({ ...http, endpoint: 'http://weather.example' }), 'endpoint')).toBe('must use the https scheme');
      expect(issueOf(tls.config({ ...ws, endpoint: 'ws://stream.example' }), 'endpoint')).toBe('must use the wss scheme');
    });

    it('requireTls is off by default', () => {
      expect(validator.config({ ...http, endpoint: 'http://weather.example' }).isOk()).toBe(true);
      expect(new ServerValidator().config({ ...ws, endpoint: 'ws://stream.example' }).isOk()).toBe(true);
    });
  });

  describe('bounds', () => {
    const cases: [string, Record<string, unknown>, boolean][] = [
      ['timeout 0', { ...http, timeout: 0 }, false],
      ['timeout 1', { ...http, timeout: 1 }, true],
      ['timeout 300000', { ...http, timeout: 300_000 }, true],
      ['timeout 300001', { ...http, timeout: 300_001 }, false],
      ['timeout -5', { ...http, timeout: -5 }, false],
      ['timeout 1.5', { ...http, timeout: 1.5 }, false],
      ['timeout "100"', { ...http, timeout: '100' }, false],
      ['max_attempts 0', { ...http, retry: { enabled: true, max_attempts: 0 } }, false],
      ['max_attempts 1', { ...http, retry: { enabled: true, max_attempts: 1 } }, true],
      ['max_attempts 10', { ...http, retry: { enabled: true, max_attempts: 10 } }, true],
      ['max_attempts 11', { ...http, retry: { enabled: true, max_attempts: 11 } }, false],
      ['max_attempts 2.5', { ...http, retry: { enabled: true, max_attempts: 2.5 } }, false],
      ['retry without enabled', { ...http, retry: { max_attempts: 2 } }, false],
      ['retry with linear backoff', { ...http, retry: { enabled: true, backoff: 'linear' } }, false],
      ['interval 999', { ...ws, heartbeat: { enabled: true, interval: 999 } }, false],
      ['interval 1000', { ...ws, heartbeat: { enabled: true, interval: 1000 } }, true],
      ['interval 3600000', { ...ws, heartbeat: { enabled: true, interval: 3_600_000 } }, true],
      ['interval 3600001', { ...ws, heartbeat: { enabled: true, interval: 3_600_001 } }, false],
      ['name of 1 character', { ...http, name: 'x' }, true],
      ['name of 100 characters', { ...http, name: 'n'.repeat(100) }, true],
      ['name of 101 characters', { ...http, name: 'n'.repeat(101) }, false],
      ['empty name', { ...http, name: '' }, false],
      ['name with a newline', { ...http, name: 'a\nb' }, false],
      ['name with DEL', { ...http, name: 'a\u007fb' }, false],
      ['name with spaces and unicode', { ...http, name: 'Wetter – München ☀' }, true],
      ['missing name', { type: 'http', endpoint: 'https://x.example' }, false],
      ['unknown key in retry', { ...http, retry: { enabled: true, jitter: true } }, false],
      ['unknown key in heartbeat', { ...ws, heartbeat: { enabled: true, every: 5 } }, false],
      ['relative working_directory', { ...stdio, working_directory: 'srv' }, false],
      ['absolute working_directory', { ...stdio, working_directory: '/srv/mcp' }, true],
      ['windows working_directory', { ...stdio, working_directory: 'C:\\mcp' }, true],
      ['257 args', { ...stdio, args: Array.from({ length: 257 }, () => 'a') }, false],
      ['256 args', { ...stdio, args: Array.from({ length: 256 }, () => 'a') }, true],
      ['101 env variables', { ...stdio, env: Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`V${i}`, 'x'])) }, false],
      ['100 env variables', { ...stdio, env: Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`V${i}`, 'x'])) }, true],
    ];
    it.each(cases)('%s', (_label, body, ok) => {
      expect(validator.config(body).isOk()).toBe(ok);
    });

    it('phrases bounds in words', () => {
      expect(issueOf(validator.config({ ...http, timeout: 0 }), 'timeout')).toBe('must be at least 1');
      expect(issueOf(validator.config({ ...http, timeout: 300_001 }), 'timeout')).toBe('must be at most 300000');
      expect(issueOf(validator.config({ ...http, name: '' }), 'name')).toBe('must not be empty');
      expect(issueOf(validator.config({ ...http, name: 'n'.repeat(101) }), 'name')).toBe('must be at most 100 characters');
      expect(issueOf(validator.config({ ...http, name: 'a\tb' }), 'name')).toBe('must not contain control characters');
    });
  });

  describe('authentication', () => {
    it('bearer needs a token; responses are built elsewhere, the token is kept here', () => {
      expect(valid(validator.config({ ...http, authentication: { type: 'bearer', token: 'tok' } }))).toMatchObject({
        authentication: { type: 'bearer', token: 'tok' },
      });
      expect(issueOf(validator.config({ ...http, authentication: { type: 'bearer' } }), 'authentication.token')).toBe('is required');
      expect(issueOf(validator.config({ ...http, authentication: { type: 'bearer', token: '' } }), 'authentication.token')).toBe('must not be empty');
    });

    it('oauth2 needs client_id and client_secret; token_url and scope are optional', () => {
      expect(valid(validator.config({ ...http, authentication: { type: 'oauth2', client_id: 'id', client_secret: 's' } }))).toMatchObject({
        authentication: { type: 'oauth2', client_id: 'id', client_secret: 's' },
      });
      const full = { type: 'oauth2', client_id: 'id', client_secret: 's', token_url: 'https://auth.example/token', scope: 'mcp' };
      expect(valid(validator.config({ ...ws, authentication: full }))).toMatchObject({ authentication: full });
      const missing = validator.config({ ...http, authentication: { type: 'oauth2' } });
      expect(issueOf(missing, 'authentication.client_id')).toBe('is required');
      const noSecret = validator.config({ ...http, authentication: { type: 'oauth2', client_id: 'id' } });
      expect(issueOf(noSecret, 'authentication.client_secret')).toBe('is required (or private_key, for private_key_jwt)');
      const badUrl = validator.config({ ...http, authentication: { type: 'oauth2', client_id: 'i', client_secret: 's', token_url: 'ftp://x' } });
      expect(issueOf(badUrl, 'authentication.token_url')).toBe('must use the http or https scheme');
    });

    describe('oauth2 private_key_jwt: exactly one of client_secret and private_key', () => {
      const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
      const pem = rsa.export({ format: 'pem', type: 'pkcs8' }).toString();
      const ecJwk = JSON.stringify({ ...generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' }), kid: 'k1' });
      const oauth = (extra: Record<string, unknown>) => ({ ...http, authentication: { type: 'oauth2', client_id: 'id', ...extra } });

      it('takes a PEM or JWK private key with an optional key_id and algorithm', () => {
        expect(valid(validator.config(oauth({ private_key: pem })))).toMatchObject({ authentication: { type: 'oauth2', client_id: 'id', private_key: pem } });
        const full = { type: 'oauth2', client_id: 'id', private_key: ecJwk, key_id: 'k1', algorithm: 'ES256', token_url: 'https://auth.example/token' };
        expect(valid(validator.config({ ...ws, authentication: full }))).toMatchObject({ authentication: full });
      });

      it('refuses both, a key that is not a private key, an algorithm that does not fit it, key options without a key', () => {
        expect(issueOf(validator.config(oauth({ client_secret: 's', private_key: pem })), 'authentication.private_key')).toBe(
          'must not be set together with client_secret: give one of them',
        );
        const notKey = 'must be a private key in PEM (PKCS#8, PKCS#1 or SEC1) or a JWK as a JSON string';
        expect(issueOf(validator.config(oauth({ private_key: 'not a key' })), 'authentication.private_key')).toBe(notKey);
        const publicOnly = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ format: 'pem', type: 'spki' }).toString();
        expect(issueOf(validator.config(oauth({ private_key: publicOnly })), 'authentication.private_key')).toBe(notKey);
        expect(issueOf(validator.config(oauth({ private_key: ecJwk, algorithm: 'RS256' })), 'authentication.algorithm')).toBe('does not fit this key: use ES256');
        expect(issueOf(validator.config(oauth({ private_key: pem, algorithm: 'HS256' })), 'authentication.algorithm')).toMatch(/^must be "RS256" or /);
        expect(issueOf(validator.config(oauth({ client_secret: 's', key_id: 'k' })), 'authentication.key_id')).toBe('applies only with private_key');
      });

      it('never echoes the key in an issue', () => {
        const broken = pem.replace('PRIVATE KEY-----\n', 'PRIVATE KEY-----\nBROKEN');
        const result = validator.config(oauth({ private_key: broken, algorithm: 'ES256' }));
        expect(JSON.stringify(issues(result))).not.toContain('BROKEN');
        expect(JSON.stringify(issues(result))).not.toContain(pem.split('\n')[1]);
      });
    });

    it('refuses an unknown type, fields of the other type and unknown fields', () => {
      expect(issueOf(validator.config({ ...http, authentication: { type: 'basic', token: 't' } }), 'authentication.type')).toBe(
        'must have a type of "bearer" or "oauth2"',
      );
      expect(issueOf(validator.config({ ...http, authentication: { token: 't' } }), 'authentication.type')).toBe(
        'must have a type of "bearer" or "oauth2"',
      );
      const mixed = validator.config({ ...http, authentication: { type: 'bearer', token: 't', client_secret: 's' } });
      expect(issueOf(mixed, 'authentication.client_secret')).toBe('is not a known field');
    });
  });

  describe('stdio', () => {
    it('is disabled when the allowlist is empty', () => {
      const off = new ServerValidator();
      expect(issueOf(off.config(stdio), 'command')).toBe('is not allowed: stdio servers are disabled on this service');
      expect(issueOf(new ServerValidator({ stdioCommands: [] }).config(stdio), 'command')).toMatch(/disabled/);
      // The answer names what turns stdio on: the option and the reference server's variable.
      const refused = off.config(stdio);
      expect(refused.isErr() && refused.error.details.hint).toBe(ERROR_HINTS.stdioDisabled);
      expect(ERROR_HINTS.stdioDisabled).toMatch(/stdio\.commands.*MCP_FLEET_STDIO_COMMANDS/);
      const offList = new ServerValidator({ stdioCommands: ['node'] }).config({ ...stdio, command: 'python3' });
      expect(offList.isErr() && offList.error.details.hint).toBe(ERROR_HINTS.stdioCommand);
      // An allowed command's other mistakes carry no hint.
      const otherMistake = new ServerValidator({ stdioCommands: ['node'] }).config({ ...stdio, command: 'node', working_directory: 'relative' });
      expect(otherMistake.isErr() && otherMistake.error.details.hint).toBeUndefined();
    });

    it('takes only commands on the allowlist, compared exactly', () => {
      expect(valid(validator.config({ ...stdio, command: '/usr/bin/python3' })).name).toBe('local');
      for (const command of ['python3', 'node ', 'NODE', 'node; rm -rf /', '/usr/bin/node']) {
        expect(issueOf(validator.config({ ...stdio, command }), 'command')).toBe('is not on the allowlist of stdio commands');
      }
    });

    it('reports a refused command together with the body\'s other mistakes', () => {
      // An invalid env name used to hide the refused command until it was fixed.
      const result = validator.config({ ...stdio, command: 'python3', env: { 'A B': 'x' }, working_directory: 'relative' });
      expect(issueOf(result, 'command')).toBe('is not on the allowlist of stdio commands');
      expect(issueOf(result, 'env.A B')).toBe('has an invalid variable name');
      expect(issueOf(result, 'working_directory')).toBe('must be an absolute path');
    });

    it('takes args, env and working_directory', () => {
      const config = valid(validator.config({ ...stdio, args: ['server.js', '--port=0'], env: { API_KEY: 'k', _X: '' }, working_directory: '/srv' }));
      expect(config).toMatchObject({ args: ['server.js', '--port=0'], env: { API_KEY: 'k', _X: '' }, working_directory: '/srv' });
    });

    const dangerous = [
      'LD_PRELOAD',
      'LD_LIBRARY_PATH',
      'ld_audit',
      'DYLD_INSERT_LIBRARIES',
      'NODE_OPTIONS',
      'node_options',
      'NODE_PATH',
      'PYTHONPATH',
      'BASH_ENV',
      'OPENSSL_CONF',
      'OPENSSL_MODULES',
      'HTTP_PROXY',
      'HTTPS_PROXY',
      'https_proxy',
      'ALL_PROXY',
      'NO_PROXY',
    ];
    it.each(dangerous)('refuses the env name %s, saying why', (name) => {
      expect(issueOf(validator.config({ ...stdio, env: { SAFE: '1', [name]: 'x' } }), `env.${name}`)).toBe(
        'is not allowed: it changes how the program loads',
      );
    });

    it('takes names that merely resemble dangerous ones', () => {
      for (const name of ['NODE_ENV', 'MY_LD_FLAG', 'PROXY', 'PROXY_URL', 'PYTHONHOME_X', 'OPENSSL']) {
        expect(validator.config({ ...stdio, env: { [name]: 'x' } }).isOk(), name).toBe(true);
      }
    });

    it('refuses env names that are not identifiers and values that are not strings', () => {
      expect(issueOf(validator.config({ ...stdio, env: { '1ABC': 'x' } }), 'env.1ABC')).toBe('has an invalid variable name');
      expect(issueOf(validator.config({ ...stdio, env: { 'A-B': 'x' } }), 'env.A-B')).toBe('has an invalid variable name');
      expect(issueOf(validator.config({ ...stdio, env: { A: 5 } }), 'env.A')).toBe('must be a string, not number');
    });
  });

  describe('issue texts never echo a submitted value', () => {
    const SECRET = 'SECRET-XYZ';
    const oauth = (extra: Record<string, unknown>) => ({ ...http, authentication: { type: 'oauth2', client_id: 'id', client_secret: 's', ...extra } });
    const bodies: [string, unknown][] = [
      ['as the type', { ...http, type: SECRET }],
      ['as the endpoint', { ...http, endpoint: SECRET }],
      ['as the password in the endpoint', { ...http, endpoint: `https://user:${SECRET}@weather.example` }],
      ['as the user in the endpoint', { ...ws, endpoint: `wss://${SECRET}@stream.example` }],
      ['as the endpoint of another scheme', { ...http, endpoint: `ftp://${SECRET}.example/` }],
      ['as a timeout', { ...http, timeout: SECRET }],
      ['as retry.enabled', { ...http, retry: { enabled: SECRET } }],
      ['as retry.backoff', { ...http, retry: { enabled: true, backoff: SECRET } }],
      ['as the value of an unknown retry field', { ...http, retry: { enabled: true, extra: SECRET } }],
      ['as heartbeat', { ...ws, heartbeat: SECRET }],
      ['as the authentication object', { ...http, authentication: SECRET }],
      ['as the authentication type', { ...http, authentication: { type: SECRET, token: SECRET } }],
      ['as a too long bearer token', { ...http, authentication: { type: 'bearer', token: SECRET.repeat(1000) } }],
      ['as a bearer token beside an unknown field', { ...http, authentication: { type: 'bearer', token: SECRET, extra: 1 } }],
      ['as a client_secret of the wrong type', oauth({ client_secret: [SECRET] })],
      ['as a private_key that is no key', oauth({ client_secret: undefined, private_key: `-----BEGIN PRIVATE KEY-----\n${SECRET}\n-----END PRIVATE KEY-----` })],
      ['as a private_key beside a client_secret', oauth({ private_key: SECRET })],
      ['as an algorithm', oauth({ client_secret: undefined, private_key: SECRET, algorithm: SECRET })],
      ['as a client_id with a control character', oauth({ client_id: `${SECRET}\u0000` })],
      ['as a token_url', oauth({ token_url: SECRET })],
      ['as a token_url with credentials', oauth({ token_url: `https://a:${SECRET}@auth.example` })],
      ['as a scope that is too long', oauth({ scope: SECRET.repeat(200) })],
      ['as a name with a control character', { ...http, name: `${SECRET}\n` }],
      ['as a name that is too long', { ...http, name: SECRET.repeat(20) }],
      ['as the value of a read-only field', { ...http, id: SECRET }],
      ['as the value of an unknown field', { ...http, api_key: SECRET }],
      ['as the value of a field of another type', { ...http, command: SECRET }],
      ['as a command off the allowlist', { ...stdio, command: SECRET }],
      ['as a working_directory', { ...stdio, working_directory: SECRET }],
      ['as an env value of a dangerous name', { ...stdio, env: { LD_PRELOAD: SECRET } }],
      ['as an env value that is too long', { ...stdio, env: { TOKEN: SECRET.repeat(4000) } }],
      ['as an env value beside a bad name', { ...stdio, env: { TOKEN: SECRET, '1BAD': SECRET } }],
      ['as the env object', { ...stdio, env: SECRET }],
      ['as an arg', { ...stdio, args: SECRET }],
      ['as an arg that is too long', { ...stdio, args: [SECRET.repeat(4000)] }],
    ];

    it.each(bodies)('%s', (_label, body) => {
      const result = validator.config(body);
      expect(result.isOk()).toBe(false);
      expect(JSON.stringify(issues(result))).not.toContain(SECRET);
    });

    it('in updates either', () => {
      const current = valid(validator.config({ ...http, authentication: { type: 'bearer', token: 'old' } }));
      for (const patch of [{ authentication: { type: 'bearer', token: SECRET, extra: 1 } }, { endpoint: `https://x:${SECRET}@h.example` }, { timeout: SECRET }, { id: SECRET }]) {
        const result = validator.update(current, patch);
        expect(JSON.stringify(issues(result))).not.toContain(SECRET);
      }
    });
  });
});

describe('ServerValidator.update', () => {
  const base = valid(
    validator.config({
      ...ws,
      timeout: 1234,
      retry: { enabled: true, max_attempts: 5 },
      heartbeat: { enabled: true, interval: 5000 },
      authentication: { type: 'oauth2', client_id: 'id', client_secret: 'cs', scope: 'mcp' },
    }),
  );

  it('changes only the fields given', () => {
    const next = valid(validator.update(base, { name: 'renamed' }));
    expect(next).toEqual({ ...base, name: 'renamed' });
  });

  it('replaces nested objects whole: omitted nested fields fall back to defaults, not to the old values', () => {
    const next = valid(validator.update(base, { retry: { enabled: false }, heartbeat: { enabled: false } }));
    expect(next).toMatchObject({ retry: { enabled: false, max_attempts: 3, backoff: 'exponential' }, heartbeat: { enabled: false, interval: 30_000 } });
  });

  it('replaces authentication whole: switching to bearer keeps no oauth2 field', () => {
    const next = valid(validator.update(base, { authentication: { type: 'bearer', token: 't' } }));
    expect(next).toMatchObject({ authentication: { type: 'bearer', token: 't' } });
    expect((next as { authentication?: object }).authentication).toEqual({ type: 'bearer', token: 't' });
  });

  it('refuses a partial nested object instead of merging it', () => {
    expect(issueOf(validator.update(base, { authentication: { scope: 'other' } }), 'authentication.type')).toMatch(/bearer/);
    expect(issueOf(validator.update(base, { retry: { max_attempts: 2 } }), 'retry.enabled')).toBe('is required');
  });

  it('null clears an optional field, and resets a field with a default to it', () => {
    const next = valid(validator.update(base, { retry: null, heartbeat: null, authentication: null, timeout: null }));
    expect(next).toEqual({ name: ws.name, type: 'websocket', endpoint: ws.endpoint, timeout: DEFAULT_TIMEOUT_MS });
  });

  it('null on a required field is refused', () => {
    expect(issueOf(validator.update(base, { endpoint: null }), 'endpoint')).toBe('is required');
    expect(issueOf(validator.update(base, { name: null }), 'name')).toBe('is required');
    expect(issueOf(validator.update(base, { type: null }), 'type')).toBe('is required');
  });

  it('clears stdio fields with null', () => {
    const current = valid(validator.config({ ...stdio, args: ['a'], env: { A: '1' }, working_directory: '/srv', endpoint: 'http://x.example' }));
    expect(valid(validator.update(current, { args: null, env: null, working_directory: null, endpoint: null }))).toEqual({
      ...stdio,
      timeout: DEFAULT_TIMEOUT_MS,
    });
  });

  it('the result must be a whole valid configuration', () => {
    // Changing the type keeps fields that do not belong to the new one: they must be cleared in the same update.
    expect(issueOf(validator.update(base, { type: 'http' }), 'endpoint')).toBe('must use the http or https scheme');
    const r = validator.update(base, { type: 'http', endpoint: 'https://x.example' });
    expect(issueOf(r, 'heartbeat')).toBe('does not apply to http servers');
    const ok = valid(validator.update(base, { type: 'http', endpoint: 'https://x.example', heartbeat: null }));
    expect(ok.type).toBe('http');
    expect(issueOf(validator.update(base, { type: 'stdio', endpoint: null, heartbeat: null, authentication: null }), 'command')).toBe('is required');
  });

  it('refuses an empty patch, read-only and unknown fields, and a body that is not an object', () => {
    expect(issues(validator.update(base, {}))).toEqual([{ field: 'body', issue: 'must name at least one field to change' }]);
    expect(issueOf(validator.update(base, { id: 'srv_x' }), 'id')).toBe('is read-only');
    expect(issueOf(validator.update(base, { created_at: null }), 'created_at')).toBe('is read-only');
    expect(issueOf(validator.update(base, { colour: 'red' }), 'colour')).toBe('is not a known field');
    expect(issues(validator.update(base, [1]))).toEqual([{ field: 'body', issue: 'must be a JSON object' }]);
    expect(issues(validator.update(base, null))).toEqual([{ field: 'body', issue: 'must be a JSON object' }]);
  });

  it('refuses a field of another type than the stored one', () => {
    const current = valid(validator.config(http));
    expect(issueOf(validator.update(current, { heartbeat: { enabled: true } }), 'heartbeat')).toBe('does not apply to http servers');
    expect(issueOf(validator.update(current, { command: 'node' }), 'command')).toBe('does not apply to http servers');
  });

  it('applies the fleet’s options: requireTls and the stdio allowlist', () => {
    const tls = new ServerValidator({ requireTls: true });
    const current = valid(tls.config(http));
    expect(issueOf(tls.update(current, { endpoint: 'http://weather.example' }), 'endpoint')).toBe('must use the https scheme');
    const sv = new ServerValidator({ stdioCommands: ['node'] });
    const proc = valid(sv.config(stdio));
    expect(issueOf(sv.update(proc, { command: 'bash' }), 'command')).toBe('is not on the allowlist of stdio commands');
    expect(issueOf(sv.update(proc, { env: { NODE_OPTIONS: '--require=/tmp/x.js' } }), 'env.NODE_OPTIONS')).toBe(
      'is not allowed: it changes how the program loads',
    );
  });

  it('never changes the configuration it was given', () => {
    const snapshot = structuredClone(base);
    validator.update(base, { name: 'x', retry: null, authentication: { type: 'bearer', token: 't' } });
    validator.update(base, { timeout: 'bad' });
    expect(base).toEqual(snapshot);
  });
});

describe('ServerValidator.plainConfig, the usual create body checked without zod', () => {
  const names: unknown[] = ['a', 'x'.repeat(100), 'x'.repeat(101), '', 'tab\there', 'del\u007f', 'ünïcode name', '😀'.repeat(50), '😀'.repeat(51), 1, null];
  const types: unknown[] = ['http', 'websocket', 'stdio', 'HTTP', undefined];
  const endpoints: unknown[] = [
    'https://a.example/mcp', 'http://a.example', 'ws://a.example', 'wss://a.example/x?q=1', 'ftp://a.example', 'https://user:pw@a.example',
    'https://:pw@a.example', 'not a url', '', '/relative', 'HTTPS://A.EXAMPLE', 1, undefined,
  ];
  const timeouts: unknown[] = ['absent', undefined, 1, 300_000, 0, 300_001, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '100', null, -1];

  function* bodies(): Generator<unknown> {
    for (const name of names) for (const type of types) for (const endpoint of endpoints) for (const timeout of timeouts) {
      const body: Record<string, unknown> = { name, type, endpoint };
      if (timeout !== 'absent') body.timeout = timeout;
      yield body;
    }
    yield { ...http, retry: { enabled: true } };
    yield { ...http, authentication: { type: 'bearer', token: 't' } };
    yield { ...http, id: 'srv_x' };
    yield { ...http, extra: 1 };
    yield JSON.parse('{"__proto__":{"x":1},"name":"a","type":"http","endpoint":"https://a.example"}');
    yield Object.assign(Object.create(null), http);
    yield Object.assign(Object.create({ retry: { enabled: true } }), http);
    yield [http];
  }

  it.each([false, true])('accepts only what the schema accepts, and answers what it answers (requireTls: %s)', (requireTls) => {
    const fast = new ServerValidator({ requireTls });
    // The same validator with the schema alone: an own property shadows the method.
    const schemaOnly = Object.assign(new ServerValidator({ requireTls }), { plainConfig: () => undefined });
    let accepted = 0;
    for (const body of bodies()) {
      const bySchema = schemaOnly.config(body);
      const plain = Array.isArray(body) ? undefined : fast.plainConfig(body as Record<string, unknown>);
      if (plain !== undefined) {
        accepted++;
        expect(bySchema.isOk(), JSON.stringify(body)).toBe(true);
        expect(plain).toStrictEqual(bySchema._unsafeUnwrap());
      }
      // And `config` answers as the schema alone does, errors included.
      const answered = fast.config(body);
      expect(answered.isOk()).toBe(bySchema.isOk());
      if (answered.isOk()) expect(answered.value).toStrictEqual(bySchema._unsafeUnwrap());
      else expect(answered.error.details).toStrictEqual(bySchema._unsafeUnwrapErr().details);
    }
    expect(accepted).toBeGreaterThan(30);
  });
});

describe('the declared body schemas (the route table’s createBody and updateBody)', () => {
  const bodies: unknown[] = [
    http,
    ws,
    stdio,
    { ...http, timeout: 5000, retry: { enabled: true } },
    { ...ws, heartbeat: { enabled: true, interval: 1000 } },
    { ...stdio, args: ['server.js'], env: { TOKEN: 'x' }, working_directory: '/srv' },
    { ...http, authentication: { type: 'bearer', token: 't' } },
    { ...http, type: 'ftp' },
    { name: 'no-type', endpoint: 'https://x.example' },
    { ...http, id: 'srv_1' },
    { ...http, command: 'node' },
    { ...http, endpoint: 'ftp://x.example' },
    { ...http, endpoint: 'https://user:pw@x.example' },
    { ...http, name: '' },
    { ...http, name: 'a\u0001b' },
    { ...http, timeout: 0 },
    { ...stdio, command: 'bash' },
    { ...stdio, env: { LD_PRELOAD: 'x' } },
    { ...ws, endpoint: 'https://not-ws.example' },
    [http],
    null,
  ];

  it('createBody accepts exactly what config accepts: the members it dispatches to are the union’s own', () => {
    for (const body of bodies) {
      expect(validator.createBody.safeParse(body).success, JSON.stringify(body)).toBe(validator.config(body).isOk());
    }
    expect(validator.createBody.options).toHaveLength(3);
  });

  it('updateBody accepts every patch update accepts, and refuses the fields no type has and the read-only ones', () => {
    const current = valid(validator.config({ ...http, retry: { enabled: true } }));
    const patches: unknown[] = [{ name: 'renamed' }, { timeout: 1000 }, { retry: null }, { endpoint: 'https://other.example/mcp' }, { type: 'websocket', endpoint: 'wss://other.example/ws' }, { endpoint: null, type: 'stdio', command: 'node' }];
    for (const patch of patches) {
      expect(validator.update(current, patch).isOk(), JSON.stringify(patch)).toBe(true);
      expect(validator.updateBody.safeParse(patch).success, JSON.stringify(patch)).toBe(true);
    }
    for (const patch of [{ id: 'srv_1' }, { status: 'active' }, { unknown: 1 }, { timeout: 'slow' }]) {
      expect(validator.update(current, patch).isOk(), JSON.stringify(patch)).toBe(false);
      expect(validator.updateBody.safeParse(patch).success, JSON.stringify(patch)).toBe(false);
    }
  });
});
