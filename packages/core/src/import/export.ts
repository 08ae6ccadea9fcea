/**
 * The fleet's MCP endpoint (`/v1/mcp`) as the configuration of a client, so that one entry gives an agent every server
 * of the account (docs/import.md, "Export"). The API key is never written: each format reads it from where that client
 * keeps secrets (an environment variable, or VS Code's prompt), and the file can be shared as it is.
 */

export const EXPORT_FORMATS = ['claude-desktop', 'claude-code', 'cursor', 'vscode'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

export interface ExportClientConfigOptions {
  /** The fleet's MCP endpoint, absolute: `https://fleet.example.com/v1/mcp` (or `/servers/{id}/mcp` for one server). */
  endpoint: string;
  format: ExportFormat;
  /** The entry's name in the client's configuration. @default 'mcp-fleet' */
  name?: string;
  /**
   * The environment variable that holds the API key (Claude Code, Cursor), the VS Code input's id (lower-cased, `_`
   * as `-`), and for Claude Desktop the variable mcp-remote reads the whole `Authorization` value from (`<name>_HEADER`).
   * @default 'MCP_FLEET_KEY'
   */
  apiKeyVariable?: string;
}

/** The client configuration, as JSON to write to the client's file (`mcpServers` or VS Code's `servers`). */
export type ClientConfig = Record<string, unknown>;

/**
 * The configuration that points `format`'s client at the fleet:
 * - Claude Desktop cannot send headers to a remote server from its file: the `mcp-remote` bridge (`npx -y mcp-remote
 *   <endpoint> --header Authorization:${MCP_FLEET_KEY_HEADER}`), whose `env` value `Bearer <your mcp-fleet API key>`
 *   the user replaces with the key (mcp-remote fills the header from its environment; the file holds no key as written).
 * - Claude Code: `mcpServers` with `type: "http"`, `url` and `Authorization: Bearer ${MCP_FLEET_KEY}` (expanded from the
 *   environment by Claude Code).
 * - Cursor: `mcpServers` with `url` and `Authorization: Bearer ${env:MCP_FLEET_KEY}` (Cursor's interpolation).
 * - VS Code: `servers` with `type: "http"`, `url`, and `Authorization: Bearer ${input:mcp-fleet-key}`, a password
 *   prompt declared in `inputs` (VS Code asks once and keeps it in its secret storage).
 * Throws a TypeError for an endpoint that is no absolute http(s) URL, or an unusable name or variable.
 */
export function exportClientConfig(options: ExportClientConfigOptions): ClientConfig {
  const { endpoint, format, name = 'mcp-fleet', apiKeyVariable = 'MCP_FLEET_KEY' } = options;
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new TypeError('exportClientConfig: endpoint must be an absolute URL, e.g. https://fleet.example.com/v1/mcp');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new TypeError('exportClientConfig: endpoint must be an http: or https: URL');
  if (url.username !== '' || url.password !== '') throw new TypeError('exportClientConfig: endpoint must not carry credentials');
  if (name.trim() === '' || name.length > 100) throw new TypeError('exportClientConfig: name must be 1 to 100 characters');
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,127}$/.test(apiKeyVariable)) throw new TypeError('exportClientConfig: apiKeyVariable must be an environment variable name ([A-Za-z_][A-Za-z0-9_]*)');
  switch (format) {
    case 'claude-desktop': {
      const header = `${apiKeyVariable}_HEADER`;
      // mcp-remote refuses a plain-http URL unless told; a header without a space survives Windows' argument quoting.
      const args = ['-y', 'mcp-remote', endpoint, ...(url.protocol === 'http:' ? ['--allow-http'] : []), '--header', `Authorization:\${${header}}`];
      return { mcpServers: { [name]: { command: 'npx', args, env: { [header]: 'Bearer <your mcp-fleet API key>' } } } };
    }
    case 'claude-code':
      return { mcpServers: { [name]: { type: 'http', url: endpoint, headers: { Authorization: `Bearer \${${apiKeyVariable}}` } } } };
    case 'cursor':
      return { mcpServers: { [name]: { url: endpoint, headers: { Authorization: `Bearer \${env:${apiKeyVariable}}` } } } };
    case 'vscode': {
      const id = apiKeyVariable.toLowerCase().replace(/_/g, '-');
      return {
        inputs: [{ type: 'promptString', id, description: 'mcp-fleet API key', password: true }],
        servers: { [name]: { type: 'http', url: endpoint, headers: { Authorization: `Bearer \${input:${id}}` } } },
      };
    }
    default:
      throw new TypeError(`exportClientConfig: format must be one of ${EXPORT_FORMATS.join(', ')}`);
  }
}
