import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { exportClientConfig } from '../../src/import/export.js';
import { apiBase } from './api.js';
import { Snippet } from './copy.js';
import './ops.css';

/** The entry's name in each client, and the environment variable the key is read from (never the key itself). */
const NAME = 'mcp-fleet';
const VARIABLE = 'MCP_FLEET_KEY';

const json = (value: unknown) => JSON.stringify(value, null, 2);

/**
 * The OAuth Protected Resource Metadata of the MCP endpoint (RFC 9728), when the fleet has `oauth` configured:
 * `/.well-known/oauth-protected-resource{path}` at the origin, or below the mount where the host serves the fleet
 * under a prefix it does not own the root of. `false` when neither answers a document with authorization servers.
 */
async function protectedResource(mcpPath: string): Promise<boolean> {
  const places = [`/.well-known/oauth-protected-resource${mcpPath}`, `${apiBase}/.well-known/oauth-protected-resource/mcp`];
  for (const place of places) {
    try {
      const answer = await fetch(place, { cache: 'no-store', headers: { accept: 'application/json' } });
      if (!answer.ok || !(answer.headers.get('content-type') ?? '').includes('json')) continue;
      const text = await answer.text();
      if (text.length > 64 * 1024) continue;
      const document = JSON.parse(text) as { resource?: unknown; authorization_servers?: unknown };
      if (typeof document.resource === 'string' && Array.isArray(document.authorization_servers) && document.authorization_servers.length > 0) return true;
    } catch {
      // Not there, or not a document: OAuth is not configured.
    }
  }
  return false;
}

/** The clients configured by a file alone, as `exportClientConfig` writes it. */
const FILES: { id: string; client: string; format: 'cursor' | 'vscode' | 'claude-desktop'; file: string; where: ComponentChildren }[] = [
  {
    id: 'cursor',
    client: 'Cursor',
    format: 'cursor',
    file: '.cursor/mcp.json',
    where: (
      <>
        <code>.cursor/mcp.json</code> in the project, or <code>~/.cursor/mcp.json</code> for every project; set <code>{VARIABLE}</code> in the environment Cursor starts from.
      </>
    ),
  },
  { id: 'vscode', client: 'VS Code', format: 'vscode', file: '.vscode/mcp.json', where: <><code>.vscode/mcp.json</code>: VS Code asks for the key once and keeps it in its secret storage.</> },
  {
    id: 'desktop',
    client: 'Claude Desktop',
    format: 'claude-desktop',
    file: 'claude_desktop_config.json',
    where: (
      <>
        <code>claude_desktop_config.json</code>, through the <code>mcp-remote</code> bridge (Node.js needed): replace the placeholder in <code>env</code> with the key, keeping <code>Bearer </code> before it.
      </>
    ),
  },
];

/** Ready-to-paste configurations of the fleet's MCP endpoint for the common clients, from `exportClientConfig`. */
export function ConnectPage() {
  const path = `${apiBase}/mcp`;
  const endpoint = `${location.origin}${path}`;
  const [oauth, setOauth] = useState<boolean>();
  useEffect(() => {
    void protectedResource(path).then(setOauth);
  }, [path]);
  const config = (format: Parameters<typeof exportClientConfig>[0]['format']) => exportClientConfig({ endpoint, format, name: NAME, apiKeyVariable: VARIABLE });
  const claudeCode = config('claude-code') as { mcpServers: Record<string, { url: string; headers: { Authorization: string } }> };
  const entry = claudeCode.mcpServers[NAME];
  // The shell fills `$MCP_FLEET_KEY` when the command runs; the `.mcp.json` form keeps `${MCP_FLEET_KEY}`, which Claude Code expands at start.
  const command = `export ${VARIABLE}='<your mcp-fleet API key>'\nclaude mcp add --transport http ${NAME} ${entry?.url ?? endpoint} --header "Authorization: Bearer $${VARIABLE}"`;
  return (
    <>
      <div class="title">
        <h1>Connect an agent</h1>
      </div>
      <section class="panel" aria-labelledby="endpoint-title">
        <h2 id="endpoint-title">The MCP endpoint</h2>
        <p>One address gives an agent the tools, prompts and resources of every server of the key’s account, named <code>{'{server}__{tool}'}</code>. Each client sends an API key as <code>Authorization: Bearer …</code>: issue one on the Keys page (with a tool allowlist if the agent should see only some tools) and put it where each configuration below says. None of them holds a key as written.</p>
        <Snippet id="mcp-url" title="MCP endpoint URL" text={endpoint} />
      </section>
      <section class="panel" aria-labelledby="claude-code-title">
        <h2 id="claude-code-title">Claude Code</h2>
        <Snippet id="claude-code-command" title="Claude Code command" text={command} />
        <p>Or, for everyone working in a project, its <code>.mcp.json</code> (Claude Code reads <code>{`\${${VARIABLE}}`}</code> from the environment):</p>
        <Snippet id="claude-code-json" title="Claude Code .mcp.json" text={json(claudeCode)} />
      </section>
      {FILES.map(({ id, client, format, file, where }) => (
        <section class="panel" aria-labelledby={`${id}-title`} key={id}>
          <h2 id={`${id}-title`}>{client}</h2>
          <p>{where}</p>
          <Snippet id={`${id}-json`} title={`${client} ${file}`} text={json(config(format))} />
        </section>
      ))}
      {oauth && (
        <section class="panel" aria-labelledby="connector-title">
          <h2 id="connector-title">Claude.ai and ChatGPT</h2>
          <p>This fleet accepts OAuth sign-in on its MCP endpoint: add it as a custom connector with this URL (Claude.ai: Settings → Connectors → Add custom connector; ChatGPT: Settings → Connectors, in developer mode → Create) and sign in when asked. No API key is pasted there, and the URL must be reachable from the internet over HTTPS.</p>
          <Snippet id="connector-url" title="Connector URL" text={endpoint} />
        </section>
      )}
      {oauth === false && <p class="muted">Claude.ai and ChatGPT connectors sign in with OAuth, which this fleet does not offer (no protected-resource metadata at its MCP endpoint).</p>}
    </>
  );
}
