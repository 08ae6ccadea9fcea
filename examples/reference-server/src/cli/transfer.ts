/**
 * `mcp-fleet import FILE` and `mcp-fleet export --format F` (docs/cli.md "Import and export"): the servers of an MCP
 * client's config into the fleet (`POST /servers/import`, which reads the formats and judges every entry), and the
 * fleet's MCP endpoint out as a client's config.
 */
import type { Command } from 'commander';
import { type ConnectionFlags, resolveUrl } from './connection.js';
import type { FleetClient } from '@mcp-fleet/client';
import type { Context } from './context.js';
import { serverId } from './commands.js';
import { note, UsageError } from './exit.js';
import { readSource } from './input.js';
import { type Column, printJson, printLine, table } from './output.js';

type ImportBody = Parameters<FleetClient['servers']['import']>[0];

type Row = Record<string, unknown>;
type Run = (act: (context: Context, ...args: any[]) => Promise<void>) => (...args: any[]) => Promise<void>;

/** The plan for people: what was (or would be) created, then each list the fleet reported, when it has rows. */
function planText(plan: Row): string {
  const sections: string[] = [`format ${String(plan.format)}${plan.detected === true ? ' (detected)' : ''}${plan.dry_run === true ? '; dry run: nothing was created' : ''}`];
  const part = <T extends Row>(title: string, rows: unknown, columns: Column<T>[]) => {
    if (Array.isArray(rows) && rows.length > 0) sections.push(`${title}\n${table(rows as T[], columns)}`);
  };
  const entry = { header: 'ENTRY', value: (r: Row) => r.entry, max: 40 };
  part(plan.dry_run === true ? 'would create' : 'created', plan.created, [
    entry,
    { header: 'NAME', value: (r) => (r.server as Row).name, max: 40 },
    { header: 'TYPE', value: (r) => (r.server as Row).type },
    { header: 'ID', value: (r) => (r.server as Row).id, max: 28 },
    { header: 'ENDPOINT', value: (r) => (r.server as Row).endpoint ?? (r.server as Row).command, max: 60 },
  ]);
  part('skipped', plan.skipped, [entry, { header: 'CODE', value: (r) => r.code }, { header: 'WHY', value: (r) => r.message, max: 100 }]);
  part('unresolved placeholders (kept as written)', plan.unresolved, [entry, { header: 'FIELD', value: (r) => r.field, max: 40 }, { header: 'PLACEHOLDER', value: (r) => r.placeholder, max: 60 }]);
  part('renamed', plan.renamed, [entry, { header: 'FROM', value: (r) => r.from, max: 40 }, { header: 'TO', value: (r) => r.to, max: 40 }]);
  part('ignored', plan.ignored, [entry, { header: 'FIELD', value: (r) => r.field, max: 60 }]);
  return sections.join('\n\n');
}

export function transferCommands(program: Command, run: Run): void {
  program
    .command('import <file>')
    .description('create servers from a Claude Desktop, Claude Code, Cursor, VS Code or registry server.json config (- for stdin)')
    .option('--format <format>', 'claude-desktop, claude-code, cursor, vscode or registry (default: told by the document\'s shape)')
    .option('--dry-run', 'print the plan, create nothing')
    .option('--skip-invalid', 'create the valid entries and skip the others (else one invalid entry refuses all)')
    .action(
      run(async (context, file: string, flags: { format?: string; dryRun?: boolean; skipInvalid?: boolean }) => {
        // The text as it is: the fleet reads the formats' comments (JSONC) and reports a bad document by its place.
        const document = await readSource(file, 'import', context.stdin);
        if (document.trim() === '') throw new UsageError(`import ${file}: the file is empty`);
        const plan = await (await context.client()).servers.import({
          document,
          // The fleet judges the format (an unknown one is its 400, exit 4).
          ...(flags.format !== undefined && { format: flags.format as ImportBody['format'] }),
          dry_run: flags.dryRun === true,
          skip_invalid: flags.skipInvalid === true,
        });
        if (context.json) printJson(plan);
        else printLine(planText(plan));
      }),
    );

  program
    .command('export')
    .description('the fleet\'s MCP endpoint as a client\'s config, on stdout (the key as a placeholder the client fills)')
    .requiredOption('--format <format>', 'claude-desktop, claude-code, cursor or vscode')
    .option('--server <server>', 'one server\'s endpoint (/servers/{id}/mcp; id or name) instead of the whole account\'s')
    .option('--name <name>', 'the entry\'s name in the client\'s config', 'mcp-fleet')
    .option('--key-variable <VAR>', 'the variable (VS Code: the input) the client reads the key from', 'MCP_FLEET_KEY')
    .action(
      run(async (context, flags: { format: string; server?: string; name: string; keyVariable: string }, command: Command) => {
        const url = resolveUrl(command.optsWithGlobals<ConnectionFlags>(), process.env);
        // Loaded here alone: the other commands need nothing of core.
        const { EXPORT_FORMATS, exportClientConfig } = await import('@mcp-fleet/core');
        const format = EXPORT_FORMATS.find((known) => known === flags.format);
        if (format === undefined) throw new UsageError(`--format must be one of ${EXPORT_FORMATS.join(', ')}`);
        const path = flags.server === undefined ? '/mcp' : `/servers/${await serverId(await context.client(), flags.server)}/mcp`;
        let config: Record<string, unknown>;
        try {
          config = exportClientConfig({ endpoint: `${url}${path}`, format, name: flags.name, apiKeyVariable: flags.keyVariable });
        } catch (error) {
          throw new UsageError((error as Error).message.replace(/^exportClientConfig: /, ''));
        }
        printJson(config);
        note(EXPORT_HINTS[format].replaceAll('$VAR', flags.keyVariable));
      }),
    );
}

/** Where each client reads the file, and where the key comes from (on stderr: stdout is the file). */
const EXPORT_HINTS = {
  'claude-desktop': 'merge mcpServers into claude_desktop_config.json, and replace <your mcp-fleet API key> in its env with the key',
  'claude-code': 'save as .mcp.json in the project (or merge its mcpServers); Claude Code reads the key from $VAR',
  cursor: 'save as .cursor/mcp.json (or ~/.cursor/mcp.json); Cursor reads the key from $VAR',
  vscode: 'save as .vscode/mcp.json; VS Code asks for the key once and keeps it in its secret storage',
} as const;
