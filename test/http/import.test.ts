import { readFileSync } from 'node:fs';
import { type CommitResult, createMemoryStore, exportClientConfig, EXPORT_FORMATS, type IndexTransaction, MemoryIndexStore } from '@mcp-fleet/core';
import { describe, expect, it } from 'vitest';
import { ADAPTERS, serveFleet } from '../support/adapters.js';
import { oneWindow } from '../support/clock.js';
import { type ApiClient, type ApiResponse, createKey, api, expectError, expectSuccess, freshClient, httpServer, serveForSuite, total } from '../support/http-client.js';

/**
 * `POST /servers/import` (docs/import.md) through both adapters, with the real-world files of test/fixtures/import/:
 * what a dry run plans and does not write, all or nothing, skip_invalid, names against the account's servers, the
 * stdio allowlist, the quota and the create limit, and the export read back in.
 */

const fixture = (file: string) => readFileSync(new URL(`../fixtures/import/${file}`, import.meta.url), 'utf8');
const DESKTOP = fixture('claude_desktop_config.json');
const CODE = fixture('claude-code.mcp.json');
const CURSOR = fixture('cursor.mcp.json');
const VSCODE = fixture('vscode.mcp.json');
const REGISTRY = fixture('server.json');

/** Secrets the fixtures hold: no answer may carry them. */
const SECRETS = ['ghp_exampleExampleExample0000000000', 'BSAexampleexampleexample', 'atl-example-token-0000'];

const importing = (client: ApiClient, body: Record<string, unknown>) => client.post('/servers/import', body);

/** The account's server names, sorted (servers created in one millisecond are listed by id). */
async function names(client: ApiClient): Promise<string[]> {
  return expectSuccess(await client.get('/servers?limit=100'), 200)
    .map((s: { name: string }) => s.name)
    .sort();
}

function noSecrets(res: ApiResponse): void {
  for (const secret of SECRETS) expect(res.text).not.toContain(secret);
}

describe.each(ADAPTERS)('POST /servers/import ($name)', (adapter) => {
  const suite = serveForSuite(adapter, { stdio: { commands: ['npx', 'uvx', 'docker', 'node', 'pnpm'] }, webhooks: { worker: false } });

  it('a dry run answers the plan of a JSONC file (format detected) and writes nothing, not even an event', async () => {
    const client = await freshClient(suite.served);
    const told: string[] = [];
    const stop = suite.served.fleet.events.on('server.created', ({ account }) => void (account === client.account && told.push(account)));
    try {
      const res = await importing(client, { document: VSCODE, dry_run: true });
      const plan = expectSuccess(res, 200);
      expect(plan).toMatchObject({ format: 'vscode', detected: true, dry_run: true, skipped: [] });
      expect(plan.created.map((c: { entry: string }) => c.entry)).toEqual(['github', 'fetch', 'perplexity', 'my-weather', 'microsoft.docs.mcp']);
      expect(plan.created[0].server).toEqual({
        name: 'github',
        type: 'http',
        endpoint: 'https://api.githubcopilot.com/mcp/',
        command: null,
        args: null,
        working_directory: null,
        authentication: { type: 'bearer' },
        env_keys: null,
      });
      expect(plan.created[2].server).toMatchObject({ type: 'stdio', command: 'npx', env_keys: ['PERPLEXITY_API_KEY'] });
      expect(plan.renamed).toEqual([{ entry: 'microsoft.docs.mcp', from: 'microsoft.docs.mcp', to: 'microsoft-docs-mcp' }]);
      expect(plan.unresolved).toEqual([
        { entry: 'github', field: 'authentication.token', placeholder: '${input:github-token}', description: 'GitHub Personal Access Token' },
        { entry: 'perplexity', field: 'env.PERPLEXITY_API_KEY', placeholder: '${input:perplexity-key}', description: 'Perplexity API Key' },
        { entry: 'my-weather', field: 'args[0]', placeholder: '${workspaceFolder}' },
      ]);
      expect(plan.ignored).toEqual([
        { entry: 'perplexity', field: 'envFile' },
        { entry: 'my-weather', field: 'dev' },
      ]);
      expect(await total(client)).toBe(0);
      expect(told).toEqual([]);
    } finally {
      stop();
    }
  });

  it('imports a Claude Desktop file: stdio servers with their env (never shown), mcp-remote bridges as http servers', async () => {
    const client = await freshClient(suite.served);
    const created: string[] = [];
    const stop = suite.served.fleet.events.on('server.created', ({ account, server }) => void (account === client.account && created.push(server.name)));
    try {
      const res = await importing(client, { document: DESKTOP });
      noSecrets(res);
      const plan = expectSuccess(res, 200);
      expect(plan).toMatchObject({ format: 'claude-desktop', detected: true, dry_run: false, skipped: [], unresolved: [] });
      expect(plan.renamed).toEqual([{ entry: 'Sequential Thinking', from: 'Sequential Thinking', to: 'Sequential-Thinking' }]);
      expect(plan.ignored).toEqual([{ entry: 'atlassian', field: 'mcp-remote --transport' }]);
      // As the create route answers: the eight fields.
      for (const { server } of plan.created) expect(Object.keys(server).sort()).toEqual(['created_at', 'endpoint', 'health', 'id', 'name', 'status', 'type', 'updated_at']);
      expect(await names(client)).toEqual(['filesystem', 'github', 'brave-search', 'sqlite', 'Sequential-Thinking', 'linear', 'atlassian'].sort());
      expect(created).toHaveLength(7);
      const byName = Object.fromEntries(plan.created.map((c: { server: { name: string; id: string } }) => [c.server.name, c.server.id]));
      const github = await client.get(`/servers/${byName.github}`);
      noSecrets(github);
      expect(expectSuccess(github, 200)).toMatchObject({ type: 'stdio', command: 'docker', env_keys: ['GITHUB_PERSONAL_ACCESS_TOKEN'] });
      expect(expectSuccess(await client.get(`/servers/${byName.atlassian}`), 200)).toMatchObject({
        type: 'http',
        endpoint: 'https://mcp.atlassian.com/v1/sse',
        authentication: { type: 'bearer' },
        command: null,
      });
      // The token went through the one road: stored and used as a create stores it.
      const revealed = await suite.served.fleet.servers.get(client.account, byName.atlassian);
      expect(revealed._unsafeUnwrap().authentication).toEqual({ type: 'bearer' });
    } finally {
      stop();
    }
  });

  it('all or nothing: one entry that cannot be imported refuses the import with every invalid entry listed; skip_invalid imports the rest', async () => {
    const client = await freshClient(suite.served);
    const refused = await importing(client, { document: CODE });
    const details = expectError(refused, 400, 'INVALID_REQUEST');
    expect(details.field).toBe('document.mcpServers.internal-api.headers');
    expect(refused.body.error.message).toMatch(/skip_invalid/);
    expect(await total(client)).toBe(0);

    const broken = JSON.stringify({ mcpServers: { ok: { command: 'npx', args: ['x'] }, bad: { url: 'not a url' }, env: { command: 'npx', env: { LD_PRELOAD: '/tmp/x.so' } }, none: {} } });
    const all = expectError(await importing(client, { document: broken }), 400, 'INVALID_REQUEST');
    expect(all.issues.map((i: { field: string }) => i.field)).toEqual(['document.mcpServers.bad.url', 'document.mcpServers.env.env.LD_PRELOAD', 'document.mcpServers.none']);
    expect(await total(client)).toBe(0);

    const plan = expectSuccess(await importing(client, { document: CODE, skip_invalid: true }), 200);
    expect(plan.format).toBe('claude-code');
    expect(plan.skipped).toEqual([{ entry: 'internal-api', code: 'HEADERS_NOT_IMPORTABLE', message: expect.stringMatching(/^headers: "X-API-Key" cannot be imported/) }]);
    expect(plan.created.map((c: { server: { name: string } }) => c.server.name)).toEqual(['sentry', 'stripe', 'asana', 'airtable', 'postgres']);
    expect(plan.unresolved).toEqual([
      { entry: 'stripe', field: 'authentication.token', placeholder: '${STRIPE_SECRET_KEY}' },
      { entry: 'airtable', field: 'env.AIRTABLE_API_KEY', placeholder: '${AIRTABLE_API_KEY}' },
      { entry: 'postgres', field: 'args[2]', placeholder: '${DATABASE_URL:-…}' },
    ]);
    expect(await total(client)).toBe(5);
  });

  it('names: renamed against the account’s servers (and the tool namespace), while another account’s servers are untouched', async () => {
    const one = await freshClient(suite.served);
    const two = await freshClient(suite.served);
    expectSuccess(await one.post('/servers', httpServer({ name: 'github' })), 201);
    expectSuccess(await one.post('/servers', httpServer({ name: 'fetch__tools' })), 201);
    const before = expectSuccess(await two.post('/servers', httpServer({ name: 'fetch' })), 201);
    const plan = expectSuccess(await importing(one, { document: VSCODE }), 200);
    expect(plan.renamed).toEqual([
      { entry: 'github', from: 'github', to: 'github-2' },
      // `fetch` would make `fetch__tools__x` ambiguous: tools are {prefix}__{tool}.
      { entry: 'fetch', from: 'fetch', to: 'fetch-2' },
      { entry: 'microsoft.docs.mcp', from: 'microsoft.docs.mcp', to: 'microsoft-docs-mcp' },
    ]);
    expect(await names(one)).toEqual(['github', 'fetch__tools', 'github-2', 'fetch-2', 'perplexity', 'my-weather', 'microsoft-docs-mcp'].sort());
    // The other account: its servers as they were, and its own import takes the names it wants.
    expect(await names(two)).toEqual(['fetch']);
    expect(expectSuccess(await two.get(`/servers/${before.id}`), 200).updated_at).toBe(before.updated_at);
    const theirs = expectSuccess(await importing(two, { document: VSCODE }), 200);
    expect(theirs.renamed.map((r: { to: string }) => r.to)).toEqual(['fetch-2', 'microsoft-docs-mcp']);
    expect(await total(one)).toBe(7);
  });

  it('importing the same file again creates nothing: each entry the account has (name and endpoint, or command and args) is skipped as ALREADY_REGISTERED', async () => {
    const client = await freshClient(suite.served);
    const first = expectSuccess(await importing(client, { document: CODE, skip_invalid: true }), 200);
    const before = await names(client);
    expect(before).toHaveLength(first.created.length);
    for (const dryRun of [true, false]) {
      const again = expectSuccess(await importing(client, { document: CODE, skip_invalid: true, dry_run: dryRun }), 200);
      expect(again.created).toEqual([]);
      expect(again.renamed).toEqual([]);
      const already = again.skipped.filter((s: { code: string }) => s.code === 'ALREADY_REGISTERED');
      expect(already.map((s: { entry: string }) => s.entry)).toEqual(first.created.map((c: { entry: string }) => c.entry));
      const sentry = first.created.find((c: { entry: string }) => c.entry === 'sentry').server;
      expect(already[0].message).toContain(`"sentry" (${sentry.id}), with the same endpoint`);
      expect(await names(client)).toEqual(before);
    }
    // The same name elsewhere is another server: renamed and created, as before.
    const moved = expectSuccess(await client.put(`/servers/${first.created[0].server.id}`, { ...httpServer({ name: first.created[0].server.name }), endpoint: 'https://moved.example.com/mcp' }), 200);
    const third = expectSuccess(await importing(client, { document: CODE, skip_invalid: true }), 200);
    expect(third.created.map((c: { entry: string }) => c.entry)).toEqual([first.created[0].entry]);
    expect(third.renamed).toEqual([{ entry: first.created[0].entry, from: first.created[0].entry, to: `${moved.name}-2` }]);
  });

  it('a registry server.json: each package and remote a server of its own; what cannot be imported is skipped with its reason', async () => {
    const client = await freshClient(suite.served);
    const plan = expectSuccess(await importing(client, { format: 'registry', document: JSON.parse(REGISTRY), skip_invalid: true }), 200);
    expect(plan).toMatchObject({ format: 'registry', detected: false });
    expect(plan.created.map((c: { entry: string; server: { name: string; type: string } }) => [c.entry, c.server.name, c.server.type])).toEqual([
      ['packages[0]', 'weather-npm', 'stdio'],
      ['packages[1]', 'weather-pypi', 'stdio'],
      ['packages[2]', 'weather-oci', 'stdio'],
      ['remotes[0]', 'weather-http', 'http'],
    ]);
    expect(plan.skipped).toEqual([{ entry: 'remotes[1]', code: 'HEADERS_NOT_IMPORTABLE', message: expect.any(String) }]);
    expect(plan.renamed.map((r: { from: string }) => r.from)).toEqual(Array(4).fill('io.github.acme/weather'));
    const oci = plan.created[2].server.id;
    expect(expectSuccess(await client.get(`/servers/${oci}`), 200)).toMatchObject({
      command: 'docker',
      args: ['run', '-i', '--rm', '--network', 'host', '-e', 'ACME_WEATHER_API_KEY', 'docker.io/acme/weather-mcp:1.4.2'],
      env_keys: ['ACME_WEATHER_API_KEY'],
    });
  });

  it('a Cursor file with comments and trailing commas, as text', async () => {
    const client = await freshClient(suite.served);
    const plan = expectSuccess(await importing(client, { document: CURSOR }), 200);
    expect(plan.format).toBe('cursor');
    expect(plan.created.map((c: { server: { name: string; type: string } }) => `${c.server.name}:${c.server.type}`)).toEqual([
      'playwright:stdio',
      'notion:stdio',
      'context7:http',
      'figma:http',
      'supabase:http',
    ]);
    expect(plan.ignored).toEqual([{ entry: 'notion', field: 'envFile' }]);
  });

  it('export round trip: each client file the exporter writes imports back as the fleet’s endpoint, an http server', async () => {
    const client = await freshClient(suite.served);
    const endpoint = `${suite.served.url}/mcp`;
    for (const format of EXPORT_FORMATS) {
      const document = JSON.stringify(exportClientConfig({ endpoint, format, name: `fleet-${format}` }), null, 2);
      const plan = expectSuccess(await importing(client, { document }), 200);
      expect(plan.format).toBe(format);
      expect(plan.created).toHaveLength(1);
      expect(plan.created[0].server).toMatchObject({ name: `fleet-${format}`, type: 'http', endpoint });
      expect(expectSuccess(await client.get(`/servers/${plan.created[0].server.id}`), 200).authentication).toEqual({ type: 'bearer' });
    }
  });

  it('what the body and the document may be: the format given must fit, a document must be read whole, 500 entries at most', async () => {
    const client = await freshClient(suite.served);
    expectError(await importing(client, { format: 'vscode', document: DESKTOP }), 400, 'INVALID_REQUEST', {
      field: 'document.servers',
      issue: expect.stringMatching(/VS Code/),
    });
    const unreadable = expectError(await importing(client, { document: '{ "mcpServers": { "a": { "command": "npx", "env": { "K": "s3cr3t" } } ' }), 400, 'INVALID_REQUEST');
    expect(unreadable.field).toBe('document');
    expect(JSON.stringify(unreadable)).not.toContain('s3cr3t');
    expectError(await importing(client, { document: '[1, 2]' }), 400, 'INVALID_REQUEST', { field: 'document', issue: 'must be a JSON object (or the text of one)' });
    expectError(await importing(client, { document: { hello: 'world' } }), 400, 'INVALID_REQUEST');
    expect((await importing(client, { document: VSCODE, extra: true })).body.error.details.field).toBe('extra');
    const many = { mcpServers: Object.fromEntries(Array.from({ length: 501 }, (_, i) => [`s${i}`, { command: 'npx' }])) };
    expectError(await importing(client, { document: many, dry_run: true }), 400, 'INVALID_REQUEST', { field: 'document', issue: expect.stringMatching(/501 servers; at most 500/) });
    const readOnly = await freshClient(suite.served, ['servers:read']);
    expectError(await importing(readOnly, { document: VSCODE, dry_run: true }), 403, 'FORBIDDEN', { required_scope: 'servers:write' });
    expect(await total(client)).toBe(0);
  });

  it('a document larger than a create body (64 KiB) is read; past 1 MiB the body is 413', async () => {
    const client = await freshClient(suite.served);
    const padded = `// ${'x'.repeat(200_000)}\n${VSCODE}`;
    expect(expectSuccess(await importing(client, { document: padded, dry_run: true }), 200).created).toHaveLength(5);
    expectError(await importing(client, { document: `// ${'x'.repeat(1_100_000)}\n${VSCODE}`, dry_run: true }), 413, 'PAYLOAD_TOO_LARGE', { limit_bytes: 1_048_576 });
    expectError(await client.post('/servers', { ...httpServer(), padding: 'x'.repeat(100_000) }), 413, 'PAYLOAD_TOO_LARGE', { limit_bytes: 65_536 });
  });

  it('GET /servers/import is 405 (the path is the import route’s, not a server id)', async () => {
    const client = await freshClient(suite.served);
    const res = await client.get('/servers/import');
    expectError(res, 405, 'METHOD_NOT_ALLOWED');
    expect(res.headers.get('allow')).toBe('POST');
  });
});

describe.each(ADAPTERS)('POST /servers/import: the stdio allowlist ($name)', (adapter) => {
  const suite = serveForSuite(adapter, { stdio: { commands: ['npx'] } });

  it('a command outside the allowlist is reported as such, with the option that allows it', async () => {
    const client = await freshClient(suite.served);
    const refused = expectError(await importing(client, { document: DESKTOP }), 400, 'INVALID_REQUEST');
    expect(refused.issues.map((i: { field: string }) => i.field)).toEqual(['document.mcpServers.github.command', 'document.mcpServers.sqlite.command']);
    expect(refused.hint).toMatch(/stdio\.commands/);
    const plan = expectSuccess(await importing(client, { document: DESKTOP, skip_invalid: true, dry_run: true }), 200);
    expect(plan.skipped.map((s: { entry: string; code: string }) => [s.entry, s.code])).toEqual([
      ['github', 'STDIO_COMMAND_NOT_ALLOWED'],
      ['sqlite', 'STDIO_COMMAND_NOT_ALLOWED'],
    ]);
    expect(plan.created).toHaveLength(5);
    expect(await total(client)).toBe(0);
  });
});

describe.each(ADAPTERS)('POST /servers/import: quota and create limit ($name)', (adapter) => {
  const suite = serveForSuite(adapter, { now: oneWindow(), quotas: { serversPerAccount: 6 }, rateLimit: { operations: { 'servers.create': 4 } } });
  const five = JSON.stringify({ mcpServers: Object.fromEntries(['a', 'b', 'c', 'd', 'e'].map((n) => [n, { url: `https://${n}.example.com/mcp` }])) });

  it('counts each created server against the create limit: refused whole (429) unless skip_invalid, which creates what the limit admits', async () => {
    const client = await freshClient(suite.served);
    const dry = await importing(client, { document: five, dry_run: true });
    expectSuccess(dry, 200);
    const refused = await importing(client, { document: five });
    expectError(refused, 429, 'RATE_LIMITED', { limit: 4, reset: expect.any(Number), scope: 'operation' });
    expect(refused.body.error.message).toMatch(/rateLimit\.operations\['servers\.create'\]/);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await total(client)).toBe(0);
    // The dry run and the refusal spent none of the budget: four creates are left.
    const partial = await importing(client, { document: five, skip_invalid: true });
    const plan = expectSuccess(partial, 200);
    expect(plan.created.map((c: { server: { name: string } }) => c.server.name)).toEqual(['a', 'b', 'c', 'd']);
    // The answer's rate-limit headers are the create limit's: it binds now.
    expect([partial.headers.get('x-ratelimit-limit'), partial.headers.get('x-ratelimit-remaining')]).toEqual(['4', '0']);
    expect(plan.skipped).toEqual([{ entry: 'e', code: 'RATE_LIMITED', message: expect.any(String) }]);
    const after = await client.post('/servers', httpServer());
    expectError(after, 429, 'RATE_LIMITED', { limit: 4, reset: expect.any(Number), scope: 'operation' });
    expect(await total(client)).toBe(4);
  });

  it('counts against the quota: past it nothing is created (409) unless skip_invalid, which creates as many as fit', async () => {
    const client = await freshClient(suite.served);
    const three = JSON.stringify({ mcpServers: { x: { url: 'https://x.example/mcp' }, y: { url: 'https://y.example/mcp' }, z: { url: 'https://z.example/mcp' } } });
    expectSuccess(await importing(client, { document: three }), 200);
    // Three of six used; four would not fit.
    const four = JSON.stringify({ mcpServers: Object.fromEntries(['p', 'q', 'r', 's'].map((n) => [`${n}.1`, { url: `https://${n}.example.com/mcp` }])) });
    const refused = await importing(client, { document: four });
    expectError(refused, 409, 'QUOTA_EXCEEDED', { resource: 'servers', limit: 6 });
    expect(refused.body.error.message).toMatch(/would create 4 servers; the account holds 3 of the 6/);
    expectError(await importing(client, { document: four, dry_run: true }), 409, 'QUOTA_EXCEEDED');
    expect(await total(client)).toBe(3);
    const plan = expectSuccess(await importing(client, { document: four, skip_invalid: true, dry_run: true }), 200);
    expect(plan.created.map((c: { server: { name: string } }) => c.server.name)).toEqual(['p-1', 'q-1', 'r-1']);
    expect(plan.skipped).toEqual([{ entry: 's.1', code: 'QUOTA_EXCEEDED', message: expect.stringMatching(/quotas\.serversPerAccount/) }]);
    // What the plan says of an entry is said of those it creates alone.
    expect(plan.renamed.map((r: { entry: string }) => r.entry)).toEqual(['p.1', 'q.1', 'r.1']);
    expect(await total(client)).toBe(3);
  });
});

/** A memory index whose naming commits fail from the `after`-th on, while `failing.on`: a store going down midway. */
const failing = { on: false, after: 0, seen: 0 };
class FailingMidway extends MemoryIndexStore {
  override commit(tx: IndexTransaction): CommitResult {
    const names = (tx.claims ?? []).some(({ key }) => key.startsWith('name:'));
    if (failing.on && names && ++failing.seen >= failing.after) return Promise.reject(new Error('index down')) as unknown as CommitResult;
    return super.commit(tx);
  }
}

describe.each(ADAPTERS)('POST /servers/import: a failure midway ($name)', (adapter) => {
  it('deletes the servers the import created before it (each with its server.deleted event) and says so', async () => {
    const served = await serveFleet(adapter, { store: { ...createMemoryStore(), index: new FailingMidway() }, webhooks: false, onError: () => {} });
    try {
      const account = 'acct-midway';
      const client = api(served, await createKey(served, { account }));
      const events: string[] = [];
      served.fleet.events.on('server.created', ({ server }) => void events.push(`created ${server.name}`));
      served.fleet.events.on('server.deleted', ({ server }) => void events.push(`deleted ${server.name}`));
      Object.assign(failing, { on: true, after: 3, seen: 0 });
      const res = await importing(client, { document: JSON.stringify({ mcpServers: { a: { url: 'https://a.example/mcp' }, b: { url: 'https://b.example/mcp' }, c: { url: 'https://c.example/mcp' } } }) });
      failing.on = false;
      const details = expectError(res, 503, 'STORAGE_UNAVAILABLE');
      expect(details).toEqual({ entry: 'c' });
      expect(res.body.error.message).toMatch(/Importing "c" failed: .* Nothing was imported: the 2 servers created before it were deleted\./);
      expect(events).toEqual(['created a', 'created b', 'deleted b', 'deleted a']);
      expect(await total(client)).toBe(0);
      // The names are free again.
      expectSuccess(await importing(client, { document: JSON.stringify({ mcpServers: { a: { url: 'https://a.example/mcp' } } }) }), 200);
      expect(await names(client)).toEqual(['a']);
    } finally {
      failing.on = false;
      await served.close();
    }
  });
});

describe('fleet.servers.import', () => {
  it('is the same operation for the embedder: details of the created servers, no rate limit', async () => {
    const served = await serveFleet(ADAPTERS[0]!, { stdio: { commands: ['npx', 'uvx', 'node'] }, rateLimit: { operations: { 'servers.create': 1 } } });
    try {
      const result = await served.fleet.servers.import('acct-embedder', { document: VSCODE });
      const plan = result._unsafeUnwrap();
      expect(plan.created).toHaveLength(5);
      expect(plan.created[0]!.server).toMatchObject({ name: 'github', authentication: { type: 'bearer' }, timeout: 30_000 });
      const refused = await served.fleet.servers.import('acct-embedder', { document: { nothing: true } });
      expect(refused._unsafeUnwrapErr().code).toBe('INVALID_REQUEST');
    } finally {
      await served.close();
    }
  });
});
