/**
 * The `mcp-fleet` command as operators run it: the built bin (dist/mcp-fleet.js, what bin/mcp-fleet.mjs runs) as a
 * child process against one real reference server on a temporary store, with a real MCP server behind it. Tables and
 * `--json`, exit codes 0/1/2/4, NO_COLOR, profiles written 0600, and secrets never on the command line nor in output.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../packages/client/src/index.js';
import { exportClientConfig } from '../../packages/core/src/import/export.js';
import { IMPORT_BODY_LIMIT } from '../../packages/core/src/import/importer.js';
import { MAX_INPUT_BYTES } from '../../examples/reference-server/src/cli/connection.js';
import { startV2ToolServer, type ToolServer } from '../../packages/core/src/mcp/fixtures/tool-servers.js';
import { api, killLeftovers, removeTempDirs, type RunningServer, startServer, tempDir } from '../support/reference-server.js';
import { staticImports } from '../support/static-imports.js';

const CLI = fileURLToPath(new URL('../../examples/reference-server/dist/mcp-fleet.js', import.meta.url));
const BIN = fileURLToPath(new URL('../../examples/reference-server/bin/mcp-fleet.mjs', import.meta.url));

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

const FIXTURES = fileURLToPath(new URL('../fixtures/import/', import.meta.url));

/**
 * Whether the client has the methods of `/keys` and `POST /servers/import` (its facade gains them with its next
 * generation from the served document; until then the CLI says so, and these tests wait for them).
 */
/** An escape sequence of a terminal color. */
const ANSI = /\u001b\[/;

let server: RunningServer;
let upstream: ToolServer;
let key: string;
let cwd: string;
/** The CLI's own config home: never the user's. */
let config: string;
/** The bearer token the upstream accepts: it must reach the upstream, and never the CLI's output or argv. */
const upstreamToken = `tok-${randomBytes(12).toString('hex')}`;

/** Runs the CLI (or `command`, e.g. the bin) with a clean environment (no MCP_FLEET_*), `env` on top, `input` on stdin. */
function cli(args: string[], options: { env?: Record<string, string | undefined>; input?: string; command?: string[] } = {}): Promise<Run> {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) if (!name.startsWith('MCP_FLEET_') && name !== 'NO_COLOR' && name !== 'FORCE_COLOR') env[name] = value;
  Object.assign(env, { XDG_CONFIG_HOME: config, HOME: config });
  for (const [name, value] of Object.entries(options.env ?? {})) {
    if (value === undefined) delete env[name];
    else env[name] = value;
  }
  const [file, ...before] = options.command ?? [process.execPath, CLI];
  const child = spawn(file as string, [...before, ...args], { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
  // A CLI that stops reading early (an input over its bound) closes the pipe: EPIPE is its answer, not the test's error.
  child.stdin.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
  });
  child.stdin.end(options.input ?? '');
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  return new Promise((resolve) => {
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The CLI connected by the environment, as a script would run it. */
const fleet = (args: string[], env: Record<string, string | undefined> = {}, input?: string) =>
  cli(args, { env: { MCP_FLEET_URL: server.url, MCP_FLEET_KEY: key, ...env }, ...(input !== undefined && { input }) });

function json(run: Run): any {
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout);
}

beforeAll(async () => {
  upstream = await startV2ToolServer({ authorize: (header) => header === `Bearer ${upstreamToken}` });
  cwd = await tempDir('mcp-fleet-cli-');
  config = await tempDir('mcp-fleet-cli-config-');
  server = await startServer({ cwd, env: { MCP_FLEET_ALLOW_PRIVATE_NETWORKS: '1', MCP_FLEET_HEALTH_INTERVAL_MS: '0' } });
  key = server.printedKeys[0] as string;
}, 60_000);

afterAll(async () => {
  await server?.stop('SIGTERM');
  await upstream?.close();
  await killLeftovers();
  await removeTempDirs();
});

describe('usage (exit 2): refused before any request, saying what to set', () => {
  it('names the variable or flag to set when the URL or the key is missing', async () => {
    const noUrl = await cli(['servers', 'list']);
    expect(noUrl.code).toBe(2);
    expect(noUrl.stderr).toContain('MCP_FLEET_URL');
    expect(noUrl.stderr).toContain('--url');
    const noKey = await cli(['servers', 'list'], { env: { MCP_FLEET_URL: server.url } });
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain('MCP_FLEET_KEY');
    expect(noKey.stderr).toContain('--key-stdin');
    expect(noKey.stdout).toBe('');
  });

  it('an unknown command, an unknown flag or a bad value is a usage error; --help is not', async () => {
    expect((await fleet(['servers', 'lisst'])).code).toBe(2);
    const flag = await fleet(['servers', 'list', '--colour']);
    expect(flag.code).toBe(2);
    expect(flag.stderr).toContain("unknown option '--colour'");
    const limit = await fleet(['servers', 'list', '--limit', 'many']);
    expect(limit.code).toBe(2);
    expect(limit.stderr).toContain('--limit must be an integer');
    expect((await cli([])).code).toBe(2);
    const help = await cli(['--help']);
    expect(help.code).toBe(0);
    for (const command of ['servers', 'tools', 'tool-calls', 'webhooks', 'keys', 'import', 'export', 'profile', 'start', 'secrets']) expect(help.stdout).toContain(command);
  });

  it('refuses a secret value on the command line, naming the ways that keep it off', async () => {
    const secret = `s-${randomBytes(8).toString('hex')}`;
    const env = await fleet(['servers', 'create', '--name', 'x', '--type', 'stdio', '--command', 'node', '--env', `API_TOKEN=${secret}`]);
    expect(env.code).toBe(2);
    expect(env.stderr).toContain('export API_TOKEN and pass --env API_TOKEN');
    expect(env.stderr + env.stdout).not.toContain(secret);
    const unset = await fleet(['servers', 'create', '--name', 'x', '--type', 'http', '--endpoint', upstream.url, '--token-env', 'NOT_SET_ANYWHERE']);
    expect(unset.code).toBe(2);
    expect(unset.stderr).toContain('NOT_SET_ANYWHERE is not set');
  });
});

describe('servers, tools and tool calls against the running fleet', () => {
  let id: string;

  it('creates a server with its bearer token from a variable: the token reaches the upstream, never the output', async () => {
    const created = await fleet(['servers', 'create', '--name', 'weather', '--type', 'http', '--endpoint', upstream.url, '--token-env', 'UPSTREAM_TOKEN', '--timeout', '5000'], { UPSTREAM_TOKEN: upstreamToken });
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toMatch(/^id +srv_[0-9A-Za-z]{24}$/m);
    expect(created.stdout).toMatch(/^name +weather$/m);
    id = /srv_[0-9A-Za-z]{24}/.exec(created.stdout)?.[0] as string;

    // Get by name, --json: exactly the API's data.
    const detail = json(await fleet(['servers', 'get', 'weather', '--json']));
    expect(detail).toEqual((await api(server.url, key, 'GET', `/servers/${id}`)).body.data);
    expect(detail.authentication).toEqual({ type: 'bearer' });

    const health = await fleet(['servers', 'health', 'weather']);
    expect(health.code, health.stderr).toBe(0);
    expect(health.stdout).toMatch(/^status +healthy$/m);
    expect(upstream.authorizations).toContain(`Bearer ${upstreamToken}`);

    for (const run of [created, health, await fleet(['servers', 'get', id]), await fleet(['servers', 'list', '--json'])]) expect(run.stdout + run.stderr).not.toContain(upstreamToken);
  });

  it('lists servers as an aligned table without color when stdout is not a terminal, and as the API\'s data with --json', async () => {
    const table = await fleet(['servers', 'list']);
    expect(table.code, table.stderr).toBe(0);
    const [header, row] = table.stdout.trimEnd().split('\n') as [string, string];
    expect(header).toMatch(/^ID +NAME +TYPE +HEALTH +ENDPOINT +CREATED$/);
    // Aligned: each column starts where its header does.
    for (const column of ['NAME', 'TYPE', 'HEALTH', 'ENDPOINT']) expect(row[header.indexOf(column) - 1]).toBe(' ');
    expect(row.slice(header.indexOf('NAME'))).toMatch(/^weather +http +healthy +http:\/\/127\.0\.0\.1:\d+/);
    expect(table.stdout).not.toMatch(ANSI);
    expect(table.stderr).toBe('');

    const data = json(await fleet(['servers', 'list', '--json']));
    expect(data).toEqual((await api(server.url, key, 'GET', '/servers')).body.data);
  });

  it('follows pages: --limit cuts and says so on stderr, --all reads every page, --page moves on', async () => {
    for (const name of ['p1', 'p2', 'p3']) expect((await api(server.url, key, 'POST', '/servers', { name, type: 'http', endpoint: 'https://mcp.example.com/mcp' })).status).toBe(201);
    const all = (await api(server.url, key, 'GET', '/servers?limit=100')).body.data.map((s: { name: string }) => s.name);
    expect(all).toHaveLength(4);
    const two = await fleet(['servers', 'list', '--limit', '2', '--json']);
    expect(json(two).map((s: { name: string }) => s.name)).toEqual(all.slice(0, 2));
    expect(two.stderr).toContain('2 of 4 servers shown; --all for every one');
    expect(json(await fleet(['servers', 'list', '--limit', '2', '--page', '2', '--json'])).map((s: { name: string }) => s.name)).toEqual(all.slice(2));
    const every = await fleet(['servers', 'list', '--all', '--json']);
    expect(json(every).map((s: { name: string }) => s.name)).toEqual(all);
    expect(every.stderr).toBe('');
    for (const name of ['p1', 'p2', 'p3']) expect((await fleet(['servers', 'delete', name])).code).toBe(0);
  });

  it('lists and calls tools; a failed call prints its record and exits 1', async () => {
    const tools = await fleet(['tools', 'list', 'weather']);
    expect(tools.code, tools.stderr).toBe(0);
    expect(tools.stdout).toMatch(/^NAME +DESCRIPTION$/m);
    expect(tools.stdout).toMatch(/^echo +Echoes text$/m);

    const call = await fleet(['tools', 'call', 'weather', 'echo', '--args', '{"text":"hi there"}']);
    expect(call.code, call.stderr).toBe(0);
    expect(call.stdout).toMatch(/^status +success$/m);
    expect(call.stdout.trimEnd().endsWith('\n\nhi there')).toBe(true);

    const fromStdin = json(await fleet(['tools', 'call', id, 'echo', '--args-file', '-', '--json'], {}, '{"text":"piped"}'));
    expect(fromStdin).toMatchObject({ tool: 'echo', status: 'success', result: { content: [{ type: 'text', text: 'piped' }] } });

    const failed = await fleet(['tools', 'call', 'weather', 'fail', '--json']);
    expect(failed.code).toBe(1);
    expect(JSON.parse(failed.stdout)).toMatchObject({ tool: 'fail', status: 'error', error: { code: 'TOOL_ERROR' } });

    const listed = json(await fleet(['tool-calls', 'list', '--server', 'weather', '--status', 'error', '--json']));
    expect(listed.map((c: { id: string }) => c.id)).toEqual([JSON.parse(failed.stdout).id]);
    const one = json(await fleet(['tool-calls', 'get', fromStdin.id, '--json']));
    expect(one).toEqual((await api(server.url, key, 'GET', `/tool-calls/${fromStdin.id}`)).body.data);
    const table = await fleet(['tool-calls', 'list', '--tool', 'echo']);
    expect(table.stdout).toMatch(/^ID +SERVER +TOOL +STATUS +MS +ATTEMPTS +VIA +ERROR +CREATED$/m);
    expect(table.stdout).toMatch(/ weather +echo +success /);
  });

  it('updates and deletes by name; what is gone is exit 4 with the fleet\'s code and request id', async () => {
    const updated = json(await fleet(['servers', 'update', 'weather', '--timeout', '7000', '--json']));
    expect(updated.timeout).toBe(7000);
    const empty = await fleet(['servers', 'update', 'weather']);
    expect(empty.code).toBe(2);
    expect(json(await fleet(['servers', 'delete', 'weather', '--json']))).toEqual({ id, deleted: true });
    const gone = await fleet(['servers', 'get', id]);
    expect(gone.code).toBe(4);
    expect(gone.stderr).toMatch(/^mcp-fleet: SERVER_NOT_FOUND: .* \(request [\w-]+\)$/m);
    expect(gone.stdout).toBe('');
    const byName = await fleet(['servers', 'get', 'weather']);
    expect(byName.code).toBe(4);
    expect(byName.stderr).toContain('no server named "weather"');
  });

  it('a refused key is exit 4 (UNAUTHORIZED) without the key in the output; no fleet at the URL is exit 1', async () => {
    const wrong = `mcpf_${'x'.repeat(40)}`;
    const refused = await cli(['servers', 'list'], { env: { MCP_FLEET_URL: server.url, MCP_FLEET_KEY: wrong } });
    expect(refused.code).toBe(4);
    expect(refused.stderr).toContain('UNAUTHORIZED');
    expect(refused.stderr + refused.stdout).not.toContain(wrong);
    const nobody = await cli(['servers', 'list'], { env: { MCP_FLEET_URL: 'http://127.0.0.1:9/v1', MCP_FLEET_KEY: key } });
    expect(nobody.code).toBe(1);
    expect(nobody.stderr).toMatch(/^mcp-fleet: /);
    expect(nobody.stderr + nobody.stdout).not.toContain(key);
  });
});

describe('webhooks', () => {
  it('creates one (its secret printed once), lists, tests, shows deliveries, updates and deletes it', async () => {
    const created = await fleet(['webhooks', 'create', `${upstream.url}/hook`, '--events', 'server.created,server.deleted', '--description', 'ops']);
    expect(created.code, created.stderr).toBe(0);
    const secret = /signing secret \(shown this once\): (whsec_\S+)/.exec(created.stdout)?.[1] as string;
    expect(secret).toBeDefined();
    const id = /wh_[0-9A-Za-z]{24}/.exec(created.stdout)?.[0] as string;

    const listed = await fleet(['webhooks', 'list']);
    expect(listed.stdout).toMatch(/^ID +URL +EVENTS +ENABLED +CREATED$/m);
    expect(listed.stdout).toContain('server.created,server.deleted');
    const got = json(await fleet(['webhooks', 'get', id, '--json']));
    expect(got).toEqual((await api(server.url, key, 'GET', `/webhooks/${id}`)).body.data);
    for (const run of [listed, await fleet(['webhooks', 'get', id])]) expect(run.stdout).not.toContain(secret);

    const tested = json(await fleet(['webhooks', 'test', id, '--json']));
    expect(tested).toMatchObject({ event_id: expect.any(String), delivery_id: expect.any(String) });
    const deliveries = json(await fleet(['webhooks', 'deliveries', id, '--json']));
    expect(deliveries.map((d: { id: string }) => d.id)).toContain(tested.delivery_id);

    expect(json(await fleet(['webhooks', 'update', id, '--disable', '--description', '', '--json']))).toMatchObject({ enabled: false, description: null });
    expect((await fleet(['webhooks', 'update', id])).code).toBe(2);
    expect(json(await fleet(['webhooks', 'delete', id, '--json']))).toEqual({ id, deleted: true });
    expect((await fleet(['webhooks', 'get', id])).code).toBe(4);
  });
});

describe('profiles', () => {
  it('saves a profile with the key from stdin, in a file of mode 0600 that `profile list` does not print', async () => {
    const saved = await cli(['profile', 'set', 'local', '--url', server.url, '--key-stdin'], { input: `${key}\n` });
    expect(saved.code, saved.stderr).toBe(0);
    const file = join(config, 'mcp-fleet', 'config.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(config, 'mcp-fleet')).mode & 0o777).toBe(0o700);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ current: 'local', profiles: { local: { url: server.url, key } } });

    const listed = await cli(['profile', 'list']);
    expect(listed.stdout).toMatch(/^\* +local +http:\/\/127\.0\.0\.1:\d+\/v1 +saved$/m);
    expect(listed.stdout + listed.stderr).not.toContain(key);

    // The current profile connects without a variable; a named one beats the variables; an unknown one is usage.
    expect(json(await cli(['servers', 'list', '--json']))).toEqual([]);
    expect((await cli(['servers', 'list', '--profile', 'local'], { env: { MCP_FLEET_URL: 'http://127.0.0.1:9/v1' } })).code).toBe(0);
    const unknown = await cli(['servers', 'list', '--profile', 'prod']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('--profile names the profile "prod", which does not exist; known: local');
    expect((await cli(['profile', 'use', 'prod'])).code).toBe(4);
    expect((await cli(['profile', 'remove', 'local'])).code).toBe(0);
    expect((await cli(['servers', 'list'])).code).toBe(2);
  });

  it('--key works but warns that ps shows it', async () => {
    const run = await cli(['servers', 'list', '--url', server.url, '--key', key]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain('--key puts the key in the process list');
    expect(run.stderr).not.toContain(key);
  });
});

describe('import and export', () => {
  it('export prints the fleet\'s MCP endpoint as a client\'s config, the key a placeholder, never the key', async () => {
    const run = await fleet(['export', '--format', 'claude-code']);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual(exportClientConfig({ endpoint: `${server.url}/mcp`, format: 'claude-code' }));
    expect(run.stdout).toContain('${MCP_FLEET_KEY}');
    expect(run.stdout + run.stderr).not.toContain(key);
    expect(run.stderr).toContain('.mcp.json');
    const vscode = JSON.parse((await fleet(['export', '--format', 'vscode', '--name', 'fleet'])).stdout);
    expect(vscode).toEqual(exportClientConfig({ endpoint: `${server.url}/mcp`, format: 'vscode', name: 'fleet' }));
    // Only the URL is needed.
    expect((await cli(['export', '--format', 'cursor'], { env: { MCP_FLEET_URL: server.url } })).code).toBe(0);
    const format = await fleet(['export', '--format', 'word']);
    expect(format.code).toBe(2);
    expect(format.stderr).toContain('--format must be one of claude-desktop, claude-code, cursor, vscode');
    expect((await cli(['export', '--format', 'cursor'])).code).toBe(2);
  });

  it('import plans a Claude Desktop config (--dry-run), refuses it whole with an invalid entry (4), imports the valid ones with --skip-invalid', async () => {
    const file = join(FIXTURES, 'claude_desktop_config.json');
    const before = json(await fleet(['servers', 'list', '--all', '--json']));
    const plan = json(await fleet(['import', file, '--dry-run', '--skip-invalid', '--json']));
    expect(plan).toMatchObject({ format: 'claude-desktop', detected: true, dry_run: true });
    expect(plan.created.length).toBeGreaterThan(0);
    expect(plan.skipped.length).toBeGreaterThan(0);
    const table = await fleet(['import', file, '--dry-run', '--skip-invalid']);
    expect(table.stdout).toContain('format claude-desktop (detected); dry run: nothing was created');
    expect(table.stdout).toMatch(/^would create\nENTRY +NAME +TYPE +ID +ENDPOINT$/m);
    expect(table.stdout).toMatch(/^skipped\nENTRY +CODE +WHY$/m);
    expect(json(await fleet(['servers', 'list', '--all', '--json']))).toEqual(before);

    const whole = await fleet(['import', file]);
    expect(whole.code).toBe(4);
    expect(whole.stderr).toContain('INVALID_REQUEST');
    const done = json(await fleet(['import', file, '--skip-invalid', '--json']));
    expect(done.created.map((c: { server: { name: string } }) => c.server.name)).toEqual(plan.created.map((c: { server: { name: string } }) => c.server.name));
    const names = json(await fleet(['servers', 'list', '--all', '--json'])).map((s: { name: string }) => s.name);
    for (const { server: created } of done.created) expect(names).toContain(created.name);
    // The bearer token of the file reached the fleet, not the output.
    expect(JSON.stringify(done) + table.stdout).not.toContain('atl-example-token-0000');
    for (const { server: created } of done.created) expect((await fleet(['servers', 'delete', created.id])).code).toBe(0);
  });

  it('reads at most what the fleet accepts from a file or stdin: /dev/zero and a 2 MiB stdin are usage errors (2), nothing sent', async () => {
    const before = json(await fleet(['servers', 'list', '--all', '--json']));
    const zero = await fleet(['import', '/dev/zero']);
    expect(zero.code).toBe(2);
    expect(zero.stderr).toContain('import /dev/zero: more than 1048576 bytes');
    const stdin = await fleet(['servers', 'create', '--from', '-'], {}, `{"name":"${'x'.repeat(2 * 1024 * 1024)}"}`);
    expect(stdin.code).toBe(2);
    expect(stdin.stderr).toContain('more than 1048576 bytes');
    expect(json(await fleet(['servers', 'list', '--all', '--json']))).toEqual(before);
  });
});

describe('color', () => {
  /** The CLI on a terminal: `script` gives it a pseudo-terminal for stdout. */
  const onTerminal = (env: Record<string, string | undefined>) =>
    cli(['-qec', `${JSON.stringify(process.execPath)} ${JSON.stringify(CLI)} profile list`, '/dev/null'], { command: ['script'], env: { TERM: 'xterm', ...env } });

  it('colors a terminal\'s output, and not with NO_COLOR', async () => {
    await cli(['profile', 'set', 'colors', '--url', 'http://127.0.0.1:9/v1']);
    const colored = await onTerminal({});
    expect(colored.code, colored.stderr).toBe(0);
    expect(colored.stdout).toMatch(ANSI);
    expect(colored.stdout).toContain('colors');
    const plain = await onTerminal({ NO_COLOR: '1' });
    expect(plain.stdout).toContain('colors');
    expect(plain.stdout).not.toMatch(ANSI);
    expect((await cli(['profile', 'remove', 'colors'])).code).toBe(0);
  });
});

describe('the bin', () => {
  it('bin/mcp-fleet.mjs runs the built command, with nothing of the build check on stdout', async () => {
    const run = await cli(['servers', 'list', '--json'], { command: [process.execPath, BIN], env: { MCP_FLEET_URL: server.url, MCP_FLEET_KEY: key } });
    expect(json(run)).toEqual([]);
  });

  it('starts without loading the engine: nothing the built command imports before it runs reaches @mcp-fleet/core', () => {
    // Importing the engine cost every command 0.4 s; the keys on a local store (`keys --local`) load it when asked.
    const { files, packages: bare } = staticImports(CLI);
    expect(files.size).toBeGreaterThan(1);
    expect([...bare].sort()).toEqual(expect.arrayContaining(['@mcp-fleet/client', 'commander']));
    expect([...bare].filter((from) => from.startsWith('@mcp-fleet/') && from !== '@mcp-fleet/client')).toEqual([]);
    // The one number it took from the engine, written out: the largest body the fleet accepts.
    expect(MAX_INPUT_BYTES).toBe(IMPORT_BODY_LIMIT);
  });
});

describe('keys over HTTP', () => {
  it('creates a key of the caller\'s account (secret once), lists, gets and revokes it; more than the caller holds is exit 4', async () => {
    const year = new Date().getUTCFullYear() + 1;
    const created = await fleet(['keys', 'create', '--scopes', 'servers:read', '--description', 'ci read', '--expires-at', `${year}-01-01T00:00:00Z`]);
    expect(created.code, created.stderr).toBe(0);
    const secret = /secret \(shown this once\): (mcpf_[0-9A-Za-z]{40})/.exec(created.stdout)?.[1] as string;
    const id = /^id +(key_[0-9A-Za-z]{24})$/m.exec(created.stdout)?.[1] as string;
    expect(secret).toBeDefined();
    expect(id).toBeDefined();
    expect((await api(server.url, secret, 'GET', '/servers')).status).toBe(200);

    const table = await fleet(['keys', 'list']);
    expect(table.stdout).toMatch(/^ID +TIER +SCOPES +TOOLS +DESCRIPTION +EXPIRES +STATE +LAST USED +CREATED$/m);
    expect(table.stdout).toMatch(new RegExp(`^${id} +pro +servers:read +all +ci read +${year}-01-01T00:00:00\\.000Z +active `, 'm'));
    // Without their last use: the two reads are made with the caller's key, whose last use moves when a minute turns between them.
    const lastUseLeftOut = (keys: Array<Record<string, unknown>>) => keys.map(({ last_used_at: _, ...rest }) => rest);
    const listed = json(await fleet(['keys', 'list', '--all', '--json']));
    expect(lastUseLeftOut(listed)).toEqual(lastUseLeftOut((await api(server.url, key, 'GET', '/keys?limit=100')).body.data));
    expect(json(await fleet(['keys', 'get', id, '--json']))).toEqual((await api(server.url, key, 'GET', `/keys/${id}`)).body.data);
    for (const run of [table, await fleet(['keys', 'get', id])]) expect(run.stdout).not.toContain(secret);

    // The read-only key cannot make keys (no keys:manage): refused, exit 4.
    const refused = await cli(['keys', 'create'], { env: { MCP_FLEET_URL: server.url, MCP_FLEET_KEY: secret } });
    expect(refused.code).toBe(4);
    expect(refused.stderr).toContain('FORBIDDEN');

    expect(json(await fleet(['keys', 'revoke', id, '--json']))).toEqual({ id, revoked: true });
    expect((await api(server.url, secret, 'GET', '/servers')).status).toBe(401);
    expect((await fleet(['keys', 'get', 'key_000000000000000000000000'])).code).toBe(4);
  });
});

describe('keys on the store', () => {
  it('without a fleet URL, `keys` works on the store of the working directory, as npm run keys does; with one, --local does', async () => {
    const made = await cli(['keys', 'create', 'acme', '--tier', 'pro', '--name', 'ci']);
    expect(made.code, made.stderr).toBe(0);
    const secret = /secret \(shown this once\): (mcpf_[0-9A-Za-z]{40})/.exec(made.stdout)?.[1] as string;
    expect((await api(server.url, secret, 'GET', '/servers')).status).toBe(200);
    const id = /key_[0-9A-Za-z]{24}/.exec(made.stdout)?.[0] as string;
    const listed = await fleet(['keys', 'list', 'acme', '--local']);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain(id);
    expect(listed.stdout).not.toContain(secret);
    // Over HTTP a key is the calling key's account's: naming another is a usage error that points at --local.
    const account = await fleet(['keys', 'create', 'acme']);
    expect(account.code).toBe(2);
    expect(account.stderr).toContain('--local');
    expect((await cli(['keys', 'revoke', 'key_000000000000000000000000'])).code).toBe(4);
    expect((await cli(['keys', 'revoke', id])).code).toBe(0);
    expect((await api(server.url, secret, 'GET', '/servers')).status).toBe(401);
  });
});
