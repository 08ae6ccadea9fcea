/**
 * The remote commands (docs/cli.md): servers, tools, tool calls and webhooks of a running fleet, each one call of
 * `@mcp-fleet/client` and a view of its answer, a table or `field  value` lines for people, the API's `data` for
 * `--json`.
 */
import type { FleetClient } from '@mcp-fleet/client';
import { type Command, Option } from 'commander';
import { CliError, EXIT, note } from './exit.js';
import { envFromFile, envFromProcess, integer, parseJsonObject, readJsonObject, readSource, secretFrom } from './input.js';
import { collect, listOptions, type ListFlags } from './listing.js';
import { type Column, details, printJson, printLine, table } from './output.js';
import type { Context } from './context.js';

type Row = Record<string, unknown>;
type Act = (context: Context, ...args: any[]) => Promise<void>;
type Run = (act: Act) => (...args: any[]) => Promise<void>;

/** A record for people, or the data for scripts. */
function show(context: Context, data: unknown, view: () => string): void {
  if (context.json) printJson(data);
  else printLine(view());
}

/** `PARENT USAGE`: one call with the command's argument (an id, or a server's name), its answer shown as `view` says. */
export function byId(parent: Command, run: Run, usage: string, description: string, call: (client: FleetClient, ref: string) => Promise<unknown>, view: (data: any) => string = (data: Row) => details(data)): void {
  parent
    .command(usage)
    .description(description)
    .action(
      run(async (context, ref: string) => {
        const data = await call(await context.client(), ref);
        show(context, data, () => view(data));
      }),
    );
}

function showList<T extends Row>(context: Context, rows: T[], columns: Column<T>[], empty: string): void {
  if (context.json) return printJson(rows);
  if (rows.length === 0) return note(empty);
  printLine(table(rows, columns));
}

/**
 * A server by id (`srv_…`) or by name: a name is looked up in the account's servers (every page), so that
 * `mcp-fleet servers health weather` works as `… srv_…` does.
 */
export async function serverId(client: FleetClient, ref: string): Promise<string> {
  if (/^srv_[0-9A-Za-z]{24}$/.test(ref)) return ref;
  for await (const server of client.paginate(client.servers.list, { limit: 100 })) if (server.name === ref) return server.id;
  throw new CliError(`no server named "${ref}" (nor is it a server id, srv_…): mcp-fleet servers list`, EXIT.refused);
}

const deletedText = (deleted: { id: string }) => `deleted ${deleted.id}`;

const created = { header: 'CREATED', value: (r: Row) => r.created_at, max: 24 } satisfies Column<Row>;

const SERVER_COLUMNS: Column<Row>[] = [
  { header: 'ID', value: (r) => r.id, max: 28 },
  { header: 'NAME', value: (r) => r.name, max: 32 },
  { header: 'TYPE', value: (r) => r.type },
  { header: 'HEALTH', value: (r) => r.health },
  { header: 'ENDPOINT', value: (r) => r.endpoint, max: 60 },
  created,
];

/** The flags of `servers create` and `servers update`: non-secret fields as flags, secrets by variable, stdin or file. */
function serverBodyOptions(command: Command): Command {
  return command
    .option('--from <file>', 'the JSON body from a file, or - for stdin (the flags below override its fields)')
    .option('--name <name>', 'the server\'s name')
    .option('--type <type>', 'http, websocket or stdio')
    .option('--endpoint <url>', 'the server\'s URL (http, websocket)')
    .option('--command <command>', 'stdio: the command (on the fleet\'s allowlist)')
    .option('--arg <arg>', 'stdio: an argument (repeat for each, in order)', (value: string, all: string[] = []) => [...all, value])
    .option('--working-directory <dir>', 'stdio: an absolute directory')
    .addOption(new Option('--timeout <ms>', 'per request, 1–300000 ms').argParser(integer('--timeout', 1, 300_000)))
    .option('--token-env <VAR>', 'bearer authentication, the token read from the variable VAR')
    .option('--token-stdin', 'bearer authentication, the token read from stdin')
    .option('--env <NAME>', 'stdio: pass the variable NAME with its value from this environment (repeat for each)', (value: string, all: string[] = []) => [...all, value])
    .option('--env-file <file>', 'stdio: NAME=value lines (a dotenv file), or - for stdin');
}

interface ServerBodyFlags {
  from?: string;
  name?: string;
  type?: string;
  endpoint?: string;
  command?: string;
  arg?: string[];
  workingDirectory?: string;
  timeout?: number;
  tokenEnv?: string;
  tokenStdin?: boolean;
  env?: string[];
  envFile?: string;
}

async function serverBody(context: Context, flags: ServerBodyFlags): Promise<Row> {
  const body: Row = flags.from !== undefined ? await readJsonObject(flags.from, '--from', context.stdin) : {};
  const fields = { name: flags.name, type: flags.type, endpoint: flags.endpoint, command: flags.command, args: flags.arg, working_directory: flags.workingDirectory, timeout: flags.timeout };
  for (const [field, value] of Object.entries(fields)) if (value !== undefined) body[field] = value;
  const token = await secretFrom('bearer token', { env: flags.tokenEnv, stdin: flags.tokenStdin }, { env: '--token-env', stdin: '--token-stdin' }, process.env, context.stdin);
  if (token !== undefined) body.authentication = { type: 'bearer', token };
  if (flags.env !== undefined || flags.envFile !== undefined) {
    const fromFile = flags.envFile !== undefined ? await envFromFile(flags.envFile, context.stdin) : {};
    body.env = { ...(body.env as Row | undefined), ...fromFile, ...envFromProcess(flags.env ?? [], process.env) };
  }
  return body;
}

export function serverCommands(program: Command, run: Run): void {
  const servers = program.command('servers').description('the account\'s MCP servers');

  listOptions(servers.command('list').description('list servers (ID, NAME, TYPE, HEALTH, ENDPOINT, CREATED)'))
    .option('--type <type>', 'only this type: http, websocket, stdio')
    .option('--health <health>', 'only this health: unknown, healthy, unhealthy')
    .action(
      run(async (context, flags: ListFlags & { type?: string; health?: string }) => {
        const client = await context.client();
        const rows = await collect(flags, (page) => client.servers.list({ ...page, ...(flags.type && { type: flags.type }), ...(flags.health && { health: flags.health }) } as never), 'servers');
        showList(context, rows as Row[], SERVER_COLUMNS, 'no servers');
      }),
    );

  byId(servers, run, 'get <server>', 'a server\'s configuration (by id or name); never its secrets', async (client, ref) => client.servers.get(await serverId(client, ref)));

  serverBodyOptions(servers.command('create').description('register a server: flags, or a JSON body with --from FILE|-'))
    .action(
      run(async (context, flags: ServerBodyFlags) => {
        const client = await context.client();
        const server = await client.servers.create((await serverBody(context, flags)) as never);
        show(context, server, () => details(server as Row));
      }),
    );

  serverBodyOptions(servers.command('update <server>').description('change a server: only what is given changes (PUT is partial)'))
    .action(
      run(async (context, ref: string, flags: ServerBodyFlags) => {
        const client = await context.client();
        const body = await serverBody(context, flags);
        if (Object.keys(body).length === 0) throw new CliError('nothing to change: give a flag (--name, --endpoint, …) or --from FILE', EXIT.usage);
        const server = await client.servers.update(await serverId(client, ref), body as never);
        show(context, server, () => details(server as Row));
      }),
    );

  byId(servers, run, 'delete <server>', 'delete a server (by id or name)', async (client, ref) => client.servers.delete(await serverId(client, ref)), deletedText);

  servers
    .command('health <server>')
    .description('probe a server now (exit 1 when unhealthy); --history for the last 24 h without probing')
    .option('--history', 'the last 24 hours in five-minute buckets, without a probe')
    .action(
      run(async (context, ref: string, flags: { history?: boolean }) => {
        const client = await context.client();
        const id = await serverId(client, ref);
        if (flags.history === true) {
          const history = await client.servers.healthHistory(id);
          return show(context, history, () =>
            [`uptime ${history.uptime}, error rate ${history.error_rate} (24 h)`, table(history.buckets as Row[], [
              { header: 'START', value: (b) => b.start, max: 24 },
              { header: 'PROBES', value: (b) => b.probes },
              { header: 'HEALTHY', value: (b) => b.healthy },
              { header: 'REQUESTS', value: (b) => b.requests },
              { header: 'FAILURES', value: (b) => b.failures },
            ])].join('\n'),
          );
        }
        const health = await client.servers.health(id);
        show(context, health, () => details(health as Row));
        if (health.status !== 'healthy') process.exitCode = EXIT.failed;
      }),
    );
}

const TOOL_CALL_COLUMNS: Column<Row>[] = [
  { header: 'ID', value: (r) => r.id, max: 30 },
  { header: 'SERVER', value: (r) => r.server_name ?? r.server_id, max: 28 },
  { header: 'TOOL', value: (r) => r.tool, max: 32 },
  { header: 'STATUS', value: (r) => r.status },
  { header: 'MS', value: (r) => r.duration_ms },
  { header: 'ATTEMPTS', value: (r) => r.attempts },
  { header: 'VIA', value: (r) => r.via },
  { header: 'ERROR', value: (r) => (r.error as { code?: string } | null)?.code, max: 28 },
  created,
];

/** A tool's result for people: its text content as text, anything else as JSON. */
function resultText(result: unknown): string {
  const content = (result as { content?: { type?: string; text?: string }[] } | null)?.content;
  if (!Array.isArray(content)) return JSON.stringify(result, null, 2);
  return content.map((part) => (part.type === 'text' && typeof part.text === 'string' ? part.text : JSON.stringify(part))).join('\n');
}

export function toolCommands(program: Command, run: Run): void {
  const tools = program.command('tools').description('the tools of a server, and calling them');

  tools
    .command('list <server>')
    .description('the server\'s tools (MCP tools/list, every page)')
    .action(
      run(async (context, ref: string) => {
        const client = await context.client();
        const list = await client.tools.list(await serverId(client, ref));
        showList(context, list as Row[], [
          { header: 'NAME', value: (t) => t.name, max: 48 },
          { header: 'DESCRIPTION', value: (t) => t.description, max: 80 },
        ], 'no tools');
      }),
    );

  tools
    .command('call <server> <tool>')
    .description('call a tool; prints the record and its result (exit 1 when the call did not succeed)')
    .option('--args <json>', 'the arguments, a JSON object (e.g. \'{"text":"hi"}\')')
    .option('--args-file <file>', 'the arguments from a JSON file, or - for stdin (for arguments that are not for the process list)')
    .action(
      run(async (context, ref: string, tool: string, flags: { args?: string; argsFile?: string }) => {
        if (flags.args !== undefined && flags.argsFile !== undefined) throw new CliError('--args and --args-file: give one', EXIT.usage);
        const args =
          flags.argsFile !== undefined ? parseJsonObject(await readSource(flags.argsFile, '--args-file', context.stdin), '--args-file') : flags.args !== undefined ? parseJsonObject(flags.args, '--args') : undefined;
        const client = await context.client();
        const call = await client.tools.call(await serverId(client, ref), { name: tool, ...(args !== undefined && { arguments: args }) });
        show(context, call, () => {
          const { result, ...record } = call as Row;
          return `${details(record)}\n\n${resultText(result)}`;
        });
        if (call.status !== 'success') process.exitCode = EXIT.failed;
      }),
    );

  const toolCalls = program.command('tool-calls').description('the record of tool calls');

  listOptions(toolCalls.command('list').description('tool calls, newest first'))
    .option('--server <server>', 'only this server\'s (id or name)')
    .option('--status <status>', 'only success, error or timeout')
    .option('--tool <tool>', 'only this tool')
    .action(
      run(async (context, flags: ListFlags & { server?: string; status?: string; tool?: string }) => {
        const client = await context.client();
        const filter = {
          ...(flags.server !== undefined && { server_id: await serverId(client, flags.server) }),
          ...(flags.status !== undefined && { status: flags.status }),
          ...(flags.tool !== undefined && { tool: flags.tool }),
        };
        const rows = await collect(flags, (page) => client.toolCalls.list({ ...page, ...filter } as never), 'tool calls');
        showList(context, rows as Row[], TOOL_CALL_COLUMNS, 'no tool calls');
      }),
    );

  byId(toolCalls, run, 'get <id>', 'one tool call (with its arguments and result when the fleet records them)', (client, id) => client.toolCalls.get(id));
}

const WEBHOOK_COLUMNS: Column<Row>[] = [
  { header: 'ID', value: (r) => r.id, max: 27 },
  { header: 'URL', value: (r) => r.url, max: 50 },
  { header: 'EVENTS', value: (r) => r.events, max: 60 },
  { header: 'ENABLED', value: (r) => (r.enabled === true ? 'yes' : `no${r.disabled_reason ? ` (${String(r.disabled_reason)})` : ''}`) },
  created,
];

const csv = (value: string) => value.split(',').map((item) => item.trim()).filter((item) => item !== '');

export function webhookCommands(program: Command, run: Run): void {
  const webhooks = program.command('webhooks').description('signed webhooks for the account\'s events');

  listOptions(webhooks.command('list').description('the account\'s webhooks')).action(
    run(async (context, flags: ListFlags) => {
      const client = await context.client();
      showList(context, (await collect(flags, (page) => client.webhooks.list(page), 'webhooks')) as Row[], WEBHOOK_COLUMNS, 'no webhooks');
    }),
  );

  byId(webhooks, run, 'get <id>', 'one webhook (never its secret)', (client, id) => client.webhooks.get(id));

  webhooks
    .command('create <url>')
    .description('create a webhook; its signing secret is printed this once')
    .requiredOption('--events <list>', 'comma-separated: server.created,server.updated,server.deleted,server.health_changed,tool_call.failed,key.created,key.revoked')
    .option('--description <text>', 'what it is for')
    .action(
      run(async (context, url: string, flags: { events: string; description?: string }) => {
        const webhook = await (await context.client()).webhooks.create({ url, events: csv(flags.events), ...(flags.description !== undefined && { description: flags.description }) } as never);
        show(context, webhook, () => {
          const { secret, ...rest } = webhook as Row;
          return `${details(rest)}\n\nsigning secret (shown this once): ${String(secret)}`;
        });
      }),
    );

  webhooks
    .command('update <id>')
    .description('change a webhook: only what is given changes')
    .option('--webhook-url <url>', 'the receiver\'s new URL')
    .option('--events <list>', 'the new event list, comma-separated')
    .option('--description <text>', 'the new description ("" clears it)')
    .option('--enable', 'turn it on (also after a 410 turned it off)')
    .option('--disable', 'turn it off')
    .action(
      run(async (context, id: string, flags: { webhookUrl?: string; events?: string; description?: string; enable?: boolean; disable?: boolean }) => {
        if (flags.enable === true && flags.disable === true) throw new CliError('--enable and --disable: give one', EXIT.usage);
        const body: Row = {
          ...(flags.webhookUrl !== undefined && { url: flags.webhookUrl }),
          ...(flags.events !== undefined && { events: csv(flags.events) }),
          ...(flags.description !== undefined && { description: flags.description === '' ? null : flags.description }),
          ...((flags.enable === true || flags.disable === true) && { enabled: flags.enable === true }),
        };
        if (Object.keys(body).length === 0) throw new CliError('nothing to change: give --webhook-url, --events, --description, --enable or --disable', EXIT.usage);
        const webhook = await (await context.client()).webhooks.update(id, body as never);
        show(context, webhook, () => details(webhook as Row));
      }),
    );

  byId(webhooks, run, 'delete <id>', 'delete a webhook', (client, id) => client.webhooks.delete(id), deletedText);
  byId(webhooks, run, 'test <id>', 'queue a webhook.test delivery to it', (client, id) => client.webhooks.test(id), (queued: { event_id: string; delivery_id: string }) => `queued ${queued.event_id} as delivery ${queued.delivery_id}`);

  listOptions(webhooks.command('deliveries <id>').description('a webhook\'s deliveries, newest first')).action(
    run(async (context, id: string, flags: ListFlags) => {
      const client = await context.client();
      const rows = (await collect(flags, (page) => client.webhooks.deliveries(id, page), 'deliveries')) as Row[];
      showList(context, rows, [
        { header: 'ID', value: (r) => r.id, max: 30 },
        { header: 'EVENT', value: (r) => r.event_type, max: 24 },
        { header: 'STATUS', value: (r) => r.status },
        { header: 'ATTEMPTS', value: (r) => (r.attempts as unknown[]).length },
        { header: 'LAST CODE', value: (r) => (r.attempts as { status_code?: number | null }[]).at(-1)?.status_code },
        { header: 'NEXT ATTEMPT', value: (r) => r.next_attempt_at, max: 24 },
        created,
      ], 'no deliveries');
    }),
  );
}
