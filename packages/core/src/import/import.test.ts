import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { exportClientConfig, EXPORT_FORMATS } from './export.js';
import { detectFormat, readDocument, type ReadDocument, type SourceEntry } from './formats.js';
import { readJsonc } from './jsonc.js';
import { bearerOf, mapEntry, type Mapped, NameBook, toolPrefixName, unwrapBridge } from './mapping.js';

const fixture = (file: string) => readFileSync(new URL(`../../../../test/fixtures/import/${file}`, import.meta.url), 'utf8');

function read(text: string, format?: Parameters<typeof readDocument>[1]): ReadDocument {
  const document = readJsonc(text);
  if (document.isErr()) throw new Error(document.error);
  const outcome = readDocument(document.value as Record<string, unknown>, format);
  if (!('entries' in outcome)) throw new Error(`${outcome.field} ${outcome.issue}`);
  return outcome;
}

/** Each entry's mapping by its name in the document. */
function mapped(text: string): Record<string, ReturnType<typeof mapEntry> & { source: SourceEntry }> {
  return Object.fromEntries(read(text).entries.map((entry) => [entry.entry, { ...mapEntry(entry), source: entry }]));
}

const body = (outcome: ReturnType<typeof mapEntry>) => {
  if ('problem' in outcome) throw new Error(`expected a body, got ${outcome.problem.message}`);
  return (outcome as Mapped).body;
};

describe('readJsonc', () => {
  it('reads comments and trailing commas, leaving strings that look like them alone', () => {
    const text = '\uFEFF{\n  // a comment\n  "url": "https://a.example//x", /* block, } */\n  "s": "/* not */ a, ]",\n  "list": [1, 2, ],\n}\n';
    expect(readJsonc(text)._unsafeUnwrap()).toEqual({ url: 'https://a.example//x', s: '/* not */ a, ]', list: [1, 2] });
    expect(readJsonc('{"a": "quote \\" // still a string", }')._unsafeUnwrap()).toEqual({ a: 'quote " // still a string' });
  });

  it('says where reading stopped, never quoting the text (it may hold a secret)', () => {
    const secret = 'sk-live-0123456789';
    for (const text of [`{\n  "token": "${secret}" "x": 1\n}`, `{ "token": "${secret}`, `{ "token": 1 /* ${secret}`, `{"a": ${secret}}`]) {
      const error = readJsonc(text)._unsafeUnwrapErr();
      expect(error).not.toContain(secret);
      expect(error).toMatch(/JSON/);
    }
    expect(readJsonc('{\n  "a": 1\n  "b": 2\n}')._unsafeUnwrapErr()).toMatch(/line 3, column 3/);
    expect(readJsonc('{ "a": "open')._unsafeUnwrapErr()).toMatch(/a string is not closed/);
    expect(readJsonc('{ /* open')._unsafeUnwrapErr()).toMatch(/comment is not closed/);
  });
});

describe('formats', () => {
  it('detects each fixture’s format from its shape', () => {
    expect(read(fixture('claude_desktop_config.json')).format).toBe('claude-desktop');
    expect(read(fixture('claude-code.mcp.json')).format).toBe('claude-code');
    expect(read(fixture('cursor.mcp.json')).format).toBe('cursor');
    expect(read(fixture('vscode.mcp.json')).format).toBe('vscode');
    expect(read(fixture('server.json')).format).toBe('registry');
    expect(read(fixture('server.json')).detected).toBe(true);
    expect(read(fixture('cursor.mcp.json'), 'claude-desktop')).toMatchObject({ format: 'claude-desktop', detected: false });
    expect(detectFormat({ mcp: { servers: {} } })).toBe('vscode');
    expect(detectFormat({ server: { name: 'x' } })).toBe('registry');
    expect(detectFormat({ servers: [{ server: { name: 'x' } }] })).toBe('registry');
    expect(detectFormat({ something: 1 })).toBeUndefined();
  });

  it('refuses a document that is not in the format given, saying where the servers were expected', () => {
    const outcome = readDocument({ mcpServers: {} }, 'vscode');
    expect(outcome).toMatchObject({ field: 'document.servers' });
    expect(readDocument({ servers: {} }, 'cursor')).toMatchObject({ field: 'document.mcpServers' });
    expect(readDocument({ hello: 1 }, undefined)).toMatchObject({ field: 'document' });
  });

  it('Claude Desktop: stdio entries keep command, args and env; names as written', () => {
    const entries = mapped(fixture('claude_desktop_config.json'));
    expect(Object.keys(entries)).toEqual(['filesystem', 'github', 'brave-search', 'sqlite', 'Sequential Thinking', 'linear', 'atlassian']);
    expect(body(entries.github!)).toEqual({
      type: 'stdio',
      command: 'docker',
      args: ['run', '-i', '--rm', '-e', 'GITHUB_PERSONAL_ACCESS_TOKEN', 'ghcr.io/github/github-mcp-server'],
      env: { GITHUB_PERSONAL_ACCESS_TOKEN: 'ghp_exampleExampleExample0000000000' },
    });
    expect(body(entries.sqlite!)).toEqual({ type: 'stdio', command: 'uvx', args: ['mcp-server-sqlite', '--db-path', '/Users/ada/test.db'] });
  });

  it('Claude Desktop: mcp-remote bridges become the remote servers they bridge, the header filled from the bridge’s env', () => {
    const entries = mapped(fixture('claude_desktop_config.json'));
    expect(body(entries.linear!)).toEqual({ type: 'http', endpoint: 'https://mcp.linear.app/sse' });
    expect(body(entries.atlassian!)).toEqual({ type: 'http', endpoint: 'https://mcp.atlassian.com/v1/sse', authentication: { type: 'bearer', token: 'atl-example-token-0000' } });
    expect((entries.atlassian as Mapped).ignored).toEqual(['mcp-remote --transport']);
    expect((entries.atlassian as Mapped).bridged).toBe(true);
  });

  it('Claude Code: typed entries; ${VAR} and ${VAR:-default} kept and reported, the default withheld', () => {
    const entries = mapped(fixture('claude-code.mcp.json'));
    expect(body(entries.asana!)).toEqual({ type: 'http', endpoint: 'https://mcp.asana.com/sse' });
    expect(body(entries.stripe!)).toEqual({ type: 'http', endpoint: 'https://mcp.stripe.com', authentication: { type: 'bearer', token: '${STRIPE_SECRET_KEY}' } });
    expect((entries.stripe as Mapped).unresolved).toEqual([{ field: 'authentication.token', placeholder: '${STRIPE_SECRET_KEY}' }]);
    expect((entries.postgres as Mapped).unresolved).toEqual([{ field: 'args[2]', placeholder: '${DATABASE_URL:-…}' }]);
    expect(entries['internal-api']).toMatchObject({ problem: { code: 'HEADERS_NOT_IMPORTABLE', field: 'headers' } });
  });

  it('Cursor (JSONC): url entries with ${env:…} bearer headers, envFile reported as ignored, a pnpm dlx bridge unwrapped', () => {
    const entries = mapped(fixture('cursor.mcp.json'));
    expect(body(entries.context7!)).toEqual({ type: 'http', endpoint: 'https://mcp.context7.com/mcp', authentication: { type: 'bearer', token: '${env:CONTEXT7_API_KEY}' } });
    expect(body(entries.figma!)).toEqual({ type: 'http', endpoint: 'http://127.0.0.1:3845/mcp' });
    expect(entries.notion!.source.ignored).toEqual(['envFile']);
    expect(body(entries.supabase!)).toEqual({
      type: 'http',
      endpoint: 'https://mcp.supabase.com/mcp?project_ref=abcdefghij',
      authentication: { type: 'bearer', token: '${env:SUPABASE_ACCESS_TOKEN}' },
    });
  });

  it('VS Code (JSONC): servers with types, ${input:…} reported with the input’s description, dev settings ignored', () => {
    const entries = mapped(fixture('vscode.mcp.json'));
    expect((entries.github as Mapped).unresolved).toEqual([{ field: 'authentication.token', placeholder: '${input:github-token}', description: 'GitHub Personal Access Token' }]);
    expect((entries.perplexity as Mapped).unresolved).toEqual([{ field: 'env.PERPLEXITY_API_KEY', placeholder: '${input:perplexity-key}', description: 'Perplexity API Key' }]);
    expect((entries['my-weather'] as Mapped).unresolved).toEqual([{ field: 'args[0]', placeholder: '${workspaceFolder}' }]);
    expect(entries['my-weather']!.source.ignored).toEqual(['dev']);
    expect(entries.perplexity!.source.ignored).toEqual(['envFile']);
    // The settings.json form: `mcp.servers`.
    const settings = read(JSON.stringify({ 'editor.fontSize': 14, mcp: { servers: { fetch: { type: 'stdio', command: 'uvx', args: ['mcp-server-fetch'] } } } }));
    expect(settings).toMatchObject({ format: 'vscode', entries: [{ entry: 'fetch', path: 'mcp.servers.fetch' }] });
  });

  it('registry server.json: npm → npx, pypi → uvx, oci → docker run with -e per variable; remotes with their Authorization header', () => {
    const entries = mapped(fixture('server.json'));
    expect(Object.keys(entries)).toEqual(['packages[0]', 'packages[1]', 'packages[2]', 'remotes[0]', 'remotes[1]']);
    expect(entries['packages[0]']!.source).toMatchObject({ from: 'io.github.acme/weather', name: 'weather-npm' });
    expect(body(entries['packages[0]']!)).toEqual({
      type: 'stdio',
      command: 'npx',
      args: ['-y', '@acme/weather-mcp@1.4.2', '--units', 'metric', '${region}'],
      // A required variable without a value is a placeholder; an optional one without a default is left out.
      env: { ACME_WEATHER_API_KEY: '${ACME_WEATHER_API_KEY}', ACME_WEATHER_CACHE: 'on' },
    });
    expect(body(entries['packages[1]']!)).toEqual({ type: 'stdio', command: 'uvx', args: ['acme-weather-mcp@1.4.2'], env: { ACME_WEATHER_API_KEY: '${ACME_WEATHER_API_KEY}' } });
    expect(body(entries['packages[2]']!)).toMatchObject({
      command: 'docker',
      args: ['run', '-i', '--rm', '--network', 'host', '-e', 'ACME_WEATHER_API_KEY', 'docker.io/acme/weather-mcp:1.4.2'],
    });
    expect(body(entries['remotes[0]']!)).toEqual({ type: 'http', endpoint: 'https://weather.acme.example/mcp', authentication: { type: 'bearer', token: '${api_key}' } });
    expect(entries['remotes[0]']!.source.name).toBe('weather-http');
    expect(entries['remotes[1]']).toMatchObject({ problem: { code: 'HEADERS_NOT_IMPORTABLE' } });
  });

  it('registry: the API’s { server } and listing forms, 2025-07 snake_case fields, and what cannot run here', () => {
    const server = { name: 'io.github.x/tool', packages: [{ registry_type: 'npm', identifier: 'tool-mcp', version: '2.0.0', runtime_hint: 'bunx', package_arguments: [{ type: 'positional', value: 'serve' }] }] };
    expect(body(mapEntry(read(JSON.stringify({ server, _meta: {} })).entries[0]!))).toEqual({ type: 'stdio', command: 'bunx', args: ['-y', 'tool-mcp@2.0.0', 'serve'] });
    const listing = read(JSON.stringify({ servers: [{ server }, { server: { ...server, name: 'io.github.y/other' } }], metadata: { count: 2 } }));
    expect(listing.entries.map((e) => [e.path, e.name])).toEqual([
      ['servers[0].packages[0]', 'tool-npm'],
      ['servers[1].packages[0]', 'other-npm'],
    ]);
    const odd = read(
      JSON.stringify({
        name: 'io.github.x/odd',
        packages: [
          { registryType: 'mcpb', identifier: 'https://github.com/x/odd/releases/download/v1/odd.mcpb' },
          { registryType: 'npm', identifier: 'odd', transport: { type: 'streamable-http', url: 'http://localhost:{port}/mcp' } },
          { registryType: 'oci', identifier: 'ghcr.io/x/odd:1.0.0', version: '1.0.0' },
        ],
      }),
    );
    expect(mapEntry(odd.entries[0]!)).toMatchObject({ problem: { code: 'UNSUPPORTED', field: 'registryType' } });
    expect(mapEntry(odd.entries[1]!)).toMatchObject({ problem: { code: 'UNSUPPORTED', field: 'transport.type' } });
    // A tag in the identifier is not tagged again.
    expect((body(mapEntry(odd.entries[2]!)).args as string[]).at(-1)).toBe('ghcr.io/x/odd:1.0.0');
  });

  it('entries that are no server are named as such, with the field at fault', () => {
    const { entries } = read(JSON.stringify({ mcpServers: { a: 'npx', b: {}, c: { command: 'npx', args: 'x' }, d: { type: 'carrier-pigeon', command: 'x' }, e: { url: 5 } } }));
    expect(entries.map((e) => [e.entry, e.problem?.code, e.problem?.field])).toEqual([
      ['a', 'NOT_A_SERVER', ''],
      ['b', 'NOT_A_SERVER', ''],
      ['c', 'NOT_A_SERVER', 'args'],
      ['d', 'UNSUPPORTED', 'type'],
      ['e', 'NOT_A_SERVER', 'url'],
    ]);
  });
});

describe('mapping', () => {
  it('unwraps every spelling of the mcp-remote bridge, and leaves other stdio servers alone', () => {
    const stdio = (command: string, args: string[], env: Record<string, string> = {}) => ({ command, args, env });
    expect(unwrapBridge(stdio('mcp-remote', ['https://a.example/mcp']))?.url).toBe('https://a.example/mcp');
    expect(unwrapBridge(stdio('/usr/local/bin/npx', ['--yes', 'mcp-remote@0.1.29', 'https://a.example/sse', '--header=Authorization: Bearer t0k'])))
      .toEqual({ url: 'https://a.example/sse', headers: { Authorization: 'Bearer t0k' }, ignored: [] });
    expect(unwrapBridge(stdio('cmd', ['/c', 'npx', '-y', 'mcp-remote', 'https://a.example/mcp', '9696', '--allow-http']))).toEqual({
      url: 'https://a.example/mcp',
      headers: {},
      ignored: ['mcp-remote --allow-http'],
    });
    expect(unwrapBridge(stdio('bunx', ['mcp-remote', 'https://a.example/mcp', '--header', 'Authorization:${AUTH}'], { AUTH: 'Bearer x', OTHER: '1' }))).toEqual({
      url: 'https://a.example/mcp',
      headers: { Authorization: 'Bearer x' },
      ignored: ['env.OTHER'],
    });
    // A header whose variable the bridge's env does not hold keeps its placeholder.
    expect(unwrapBridge(stdio('npx', ['mcp-remote', 'https://a.example/mcp', '--header', 'Authorization: Bearer ${TOKEN}']))?.headers).toEqual({ Authorization: 'Bearer ${TOKEN}' });
    expect(unwrapBridge(stdio('npx', ['-y', 'mcp-remote']))).toBeUndefined();
    expect(unwrapBridge(stdio('node', ['mcp-remote', 'https://a.example/mcp']))).toBeUndefined();
    expect(unwrapBridge(stdio('npx', ['-y', '@modelcontextprotocol/server-everything']))).toBeUndefined();
  });

  it('takes exactly one Authorization: Bearer header as the bearer token; names other headers, never their values', () => {
    expect(bearerOf({})).toEqual({});
    expect(bearerOf({ authorization: 'bearer   abc def ' })).toEqual({ token: 'abc def' });
    const cases: Record<string, string>[] = [{ Authorization: 'Basic c2VjcmV0' }, { 'X-API-Key': 'secret-value' }, { Authorization: 'Bearer secret-value', 'X-Tenant': 'acme' }];
    for (const headers of cases) {
      const outcome = bearerOf(headers);
      expect(outcome).toHaveProperty('problem');
      const { problem } = outcome as { problem: string };
      expect(problem).not.toMatch(/secret-value|c2VjcmV0|acme/);
      for (const name of Object.keys(headers)) expect(problem).toContain(`"${name}"`);
    }
  });

  it('a ws: or wss: URL is a websocket server', () => {
    const [entry] = read(JSON.stringify({ mcpServers: { live: { url: 'wss://live.example/mcp' } } })).entries;
    expect(body(mapEntry(entry!))).toEqual({ type: 'websocket', endpoint: 'wss://live.example/mcp' });
  });

  it('makes names the fleet’s tool prefixes: [A-Za-z0-9_-], at most 64, without "__"', () => {
    expect(toolPrefixName('Sequential Thinking')).toBe('Sequential-Thinking');
    expect(toolPrefixName('io.github.acme/weather')).toBe('io-github-acme-weather');
    expect(toolPrefixName('a__b___c')).toBe('a_b_c');
    expect(toolPrefixName('Café ☕ server!')).toBe('Cafe-server');
    expect(toolPrefixName('***')).toBe('server');
    expect(toolPrefixName('x'.repeat(80))).toHaveLength(64);
  });

  it('gives unique names, against the account’s servers and each other, never a prefix of another server’s P__ name', () => {
    const book = new NameBook(['github', 'github-2', 'search__web', 'Fetch']);
    expect(book.take('github')).toBe('github-3');
    expect(book.take('github')).toBe('github-4');
    expect(book.take('search')).toBe('search-2');
    expect(book.take('fetch')).toBe('fetch');
    expect(book.take('fetch')).toBe('fetch-2');
    const long = 'y'.repeat(64);
    expect(book.take(long)).toBe(long);
    expect(book.take(long)).toBe(`${'y'.repeat(62)}-2`);
  });
});

describe('exportClientConfig', () => {
  const endpoint = 'https://fleet.example.com/v1/mcp';

  it('writes each client’s configuration with the key read from where that client keeps secrets, never a key', () => {
    expect(exportClientConfig({ endpoint, format: 'claude-desktop' })).toEqual({
      mcpServers: {
        'mcp-fleet': { command: 'npx', args: ['-y', 'mcp-remote', endpoint, '--header', 'Authorization:${MCP_FLEET_KEY_HEADER}'], env: { MCP_FLEET_KEY_HEADER: 'Bearer <your mcp-fleet API key>' } },
      },
    });
    expect(exportClientConfig({ endpoint, format: 'claude-code', name: 'fleet' })).toEqual({
      mcpServers: { fleet: { type: 'http', url: endpoint, headers: { Authorization: 'Bearer ${MCP_FLEET_KEY}' } } },
    });
    expect(exportClientConfig({ endpoint, format: 'cursor', apiKeyVariable: 'FLEET_KEY' })).toEqual({
      mcpServers: { 'mcp-fleet': { url: endpoint, headers: { Authorization: 'Bearer ${env:FLEET_KEY}' } } },
    });
    expect(exportClientConfig({ endpoint, format: 'vscode' })).toEqual({
      inputs: [{ type: 'promptString', id: 'mcp-fleet-key', description: 'mcp-fleet API key', password: true }],
      servers: { 'mcp-fleet': { type: 'http', url: endpoint, headers: { Authorization: 'Bearer ${input:mcp-fleet-key}' } } },
    });
    const local = exportClientConfig({ endpoint: 'http://127.0.0.1:3000/v1/mcp', format: 'claude-desktop' }) as { mcpServers: Record<string, { args: string[] }> };
    expect(local.mcpServers['mcp-fleet']?.args).toContain('--allow-http');
  });

  it('round-trips: what it writes imports back as the endpoint, an http server with bearer authentication', () => {
    for (const format of EXPORT_FORMATS) {
      const text = JSON.stringify(exportClientConfig({ endpoint, format }), null, 2);
      const document = read(text);
      expect(document.format).toBe(format);
      expect(document.entries).toHaveLength(1);
      const outcome = body(mapEntry(document.entries[0]!));
      expect(outcome).toMatchObject({ type: 'http', endpoint, authentication: { type: 'bearer' } });
    }
  });

  it('refuses what would make a broken file', () => {
    expect(() => exportClientConfig({ endpoint: '/v1/mcp', format: 'vscode' })).toThrow(TypeError);
    expect(() => exportClientConfig({ endpoint: 'ftp://x.example/mcp', format: 'vscode' })).toThrow(/http/);
    expect(() => exportClientConfig({ endpoint: 'https://u:p@x.example/mcp', format: 'vscode' })).toThrow(/credentials/);
    expect(() => exportClientConfig({ endpoint, format: 'vscode', apiKeyVariable: 'not a name' })).toThrow(/apiKeyVariable/);
    expect(() => exportClientConfig({ endpoint, format: 'windsurf' as never })).toThrow(/format/);
  });
});
