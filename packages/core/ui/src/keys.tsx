import { useEffect, useState } from 'preact/hooks';
import type { FleetClient } from '../../../client/src/index.js';
import type { ApiKeyView, CreatedApiKeyView } from '../../src/auth/key-views.js';
import { SCOPES, TIERS } from '../../src/auth/scopes.js';
import { namespacedTool } from '../../src/toolcalls/tool-names.js';
import { type ApiError, api, fieldErrors, when } from './api.js';
import { CopyButton } from './copy.js';
import './ops.css';
import { DeleteButton, Field, Pager, Problem, TableHead, useApi } from './ui.js';

type KeyBody = Parameters<FleetClient['keys']['create']>[0];

/** The fleet's namespaced tool names, server by server (`search__echo`), for the allowlist's picker. */
interface ServerTools {
  prefix: string;
  name: string;
  tools: string[];
  problem?: string;
}

/** Every server of the account (up to 100) and the tools each offers now; a server that does not answer says why. */
export async function fleetTools(): Promise<{ servers: ServerTools[]; problem?: ApiError }> {
  const listed = await api((client) => client.servers.list({ limit: 100 }));
  if (!listed.ok) return { servers: [], problem: listed.error };
  const servers = await Promise.all(
    listed.data.map(async (server): Promise<ServerTools> => {
      const prefix = namespacedTool(server, '').slice(0, -2);
      const tools = await api((client) => client.tools.list(server.id));
      return tools.ok ? { prefix, name: server.name, tools: tools.data.map((tool) => namespacedTool(server, tool.name)) } : { prefix, name: server.name, tools: [], problem: tools.error.message };
    }),
  );
  return { servers };
}

/** "Every tool", or a list of patterns picked from the fleet's tools (a server's `prefix__*`, or single tools), plus typed globs. */
function ToolPicker({ value, onChange, error }: { value: string[] | null; onChange: (value: string[] | null) => void; error: string | undefined }) {
  const [catalog, setCatalog] = useState<Awaited<ReturnType<typeof fleetTools>>>();
  const [typed, setTyped] = useState('');
  useEffect(() => {
    if (value !== null && catalog === undefined) void fleetTools().then(setCatalog);
  }, [value === null]);
  const picked = value ?? [];
  const toggle = (pattern: string) => onChange(picked.includes(pattern) ? picked.filter((p) => p !== pattern) : [...picked, pattern]);
  const add = () => {
    const more = typed.split(/\s+/).filter((p) => p !== '' && !picked.includes(p));
    if (more.length > 0) onChange([...picked, ...more]);
    setTyped('');
  };
  return (
    <fieldset aria-describedby={error ? 'key-tools-error' : undefined}>
      <legend>Tools</legend>
      <label class="check">
        <input type="radio" name="key-tools-mode" checked={value === null} onChange={() => onChange(null)} />
        Every tool (no allowlist)
      </label>
      <label class="check">
        <input type="radio" name="key-tools-mode" checked={value !== null} onChange={() => onChange([])} />
        Only the tools picked here
      </label>
      {value !== null && (
        <div class="picker">
          {catalog === undefined && <p class="muted">Reading the fleet’s tools…</p>}
          <Problem error={catalog?.problem} />
          {catalog?.servers.map((server) => (
            <fieldset key={server.prefix} class="server-tools">
              <legend>{server.name}</legend>
              <label class="check">
                <input type="checkbox" checked={picked.includes(`${server.prefix}__*`)} onChange={() => toggle(`${server.prefix}__*`)} />
                {`${server.prefix}__*`} <span class="muted">(every tool of {server.name}, also later ones)</span>
              </label>
              {server.tools.map((tool) => (
                <label class="check" key={tool}>
                  <input type="checkbox" checked={picked.includes(tool)} onChange={() => toggle(tool)} />
                  {tool}
                </label>
              ))}
              {server.problem && <small class="muted">Its tools could not be listed: {server.problem}</small>}
            </fieldset>
          ))}
          <div class="field">
            <label for="key-tool-pattern">More patterns (globs, `*` matches anything; separate with spaces)</label>
            <div class="inline">
              <input id="key-tool-pattern" value={typed} onInput={(e) => setTyped(e.currentTarget.value)} onKeyDown={(e) => e.key === 'Enter' && (e.preventDefault(), add())} />
              <button type="button" onClick={add}>
                Add pattern
              </button>
            </div>
          </div>
          {picked.filter((p) => !catalog?.servers.some((s) => p === `${s.prefix}__*` || s.tools.includes(p))).map((pattern) => (
            <label class="check" key={pattern}>
              <input type="checkbox" checked onChange={() => toggle(pattern)} />
              {pattern}
            </label>
          ))}
          <p class="muted" aria-live="polite">
            {picked.length === 0 ? 'Nothing picked yet.' : `${picked.length} picked.`}
          </p>
        </div>
      )}
      {error && (
        <small id="key-tools-error" class="field-error" role="alert">
          {error}
        </small>
      )}
    </fieldset>
  );
}

/** `POST /keys`: each field left as it is takes the signed-in key's own (its tier, its scopes but keys:manage, its allowlist, its expiry). */
function KeyForm({ onCreated, onCancel }: { onCreated: (key: CreatedApiKeyView) => void; onCancel: () => void }) {
  const [description, setDescription] = useState('');
  const [tier, setTier] = useState('');
  const [scopes, setScopes] = useState<string[]>([]);
  const [tools, setTools] = useState<string[] | null | undefined>(undefined);
  const [expires, setExpires] = useState('');
  const [error, setError] = useState<ApiError>();
  const [saving, setSaving] = useState(false);
  const issues = fieldErrors(error);
  const issueOf = (field: string) => Object.entries(issues).find(([name]) => name === field || name.startsWith(`${field}.`) || name.startsWith(`${field}[`))?.[1];
  const known = ['description', 'tier', 'scopes', 'tools', 'expires_at'];
  const elsewhere = error && (error.code !== 'INVALID_REQUEST' || Object.keys(issues).some((f) => !known.includes(f.split(/[.[]/)[0] ?? '')));

  const submit = async (event: Event) => {
    event.preventDefault();
    if (tools !== undefined && tools !== null && tools.length === 0) {
      return setError({ status: 400, code: 'INVALID_REQUEST', message: '', details: { field: 'tools', issue: 'needs at least one tool or pattern, or “Every tool”' } });
    }
    const body: Record<string, unknown> = {};
    if (description !== '') body.description = description;
    if (tier !== '') body.tier = tier;
    if (scopes.length > 0) body.scopes = scopes;
    if (tools !== undefined) body.tools = tools;
    if (expires !== '') body.expires_at = new Date(expires).toISOString();
    setSaving(true);
    const answer = await api((client) => client.keys.create(body as KeyBody));
    setSaving(false);
    if (answer.ok) onCreated(answer.data as CreatedApiKeyView);
    else setError(answer.error);
  };
  // The form opens where the typing starts (autofocus only works once per document).
  useEffect(() => document.getElementById('key-description')?.focus(), []);
  const toggleScope = (scope: string) => setScopes(scopes.includes(scope) ? scopes.filter((s) => s !== scope) : [...scopes, scope]);
  return (
    <form class="panel" onSubmit={submit} aria-labelledby="key-form-title" noValidate>
      <h2 id="key-form-title">Issue a key</h2>
      <p class="muted">A key never holds more than the signed-in key: a field left as it is takes that key’s own.</p>
      <Field id="key-description" label="Description (optional)" error={issueOf('description')}>
        {(describedBy) => <input id="key-description" value={description} maxLength={100} onInput={(e) => setDescription(e.currentTarget.value)} aria-describedby={describedBy} />}
      </Field>
      <Field id="key-tier" label="Tier" error={issueOf('tier')}>
        {(describedBy) => (
          <select id="key-tier" value={tier} onChange={(e) => setTier(e.currentTarget.value)} aria-describedby={describedBy}>
            <option value="">as the signed-in key</option>
            {TIERS.map((name) => (
              <option value={name}>{name}</option>
            ))}
          </select>
        )}
      </Field>
      <fieldset aria-describedby={issueOf('scopes') ? 'key-scopes-error' : 'key-scopes-hint'}>
        <legend>Scopes</legend>
        {SCOPES.map((scope) => (
          <label class="check" key={scope}>
            <input type="checkbox" checked={scopes.includes(scope)} onChange={() => toggleScope(scope)} />
            {scope}
          </label>
        ))}
        {issueOf('scopes') ? (
          <small id="key-scopes-error" class="field-error" role="alert">
            {issueOf('scopes')}
          </small>
        ) : (
          <small id="key-scopes-hint" class="muted">
            None ticked: the signed-in key’s scopes but keys:manage.
          </small>
        )}
      </fieldset>
      {tools === undefined ? (
        <p>
          Tools: as the signed-in key.{' '}
          <button type="button" onClick={() => setTools([])}>
            Choose tools
          </button>
        </p>
      ) : (
        <ToolPicker value={tools} onChange={(value) => (setTools(value), setError(undefined))} error={issueOf('tools')} />
      )}
      <Field id="key-expires" label="Expires (optional)" error={issueOf('expires_at')} hint="Left empty: the signed-in key’s expiry (none: never).">
        {(describedBy) => <input id="key-expires" type="datetime-local" value={expires} onInput={(e) => setExpires(e.currentTarget.value)} aria-describedby={describedBy} />}
      </Field>
      {elsewhere && <Problem error={error} />}
      <div class="buttons">
        <button type="submit" disabled={saving}>
          Issue key
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

const listOf = (items: readonly string[] | null, none: string) => (items === null ? none : items.join(', '));

function KeyRow({ apiKey, onRevoked }: { apiKey: ApiKeyView; onRevoked: () => void }) {
  const [problem, setProblem] = useState<ApiError>();
  const revoke = async () => {
    const answer = await api((client) => client.keys.revoke(apiKey.id));
    if (answer.ok) onRevoked();
    else setProblem(answer.error);
  };
  const expired = apiKey.expires_at !== null && Date.parse(apiKey.expires_at) <= Date.now();
  return (
    <tr>
      <th scope="row">
        <code>{apiKey.id}</code>
        {apiKey.description && <small class="note">{apiKey.description}</small>}
      </th>
      <td>{apiKey.tier}</td>
      <td class="list">{listOf(apiKey.scopes, 'all but keys:manage')}</td>
      <td class="list">{listOf(apiKey.tools, 'every tool')}</td>
      <td>{when(apiKey.created_at)}</td>
      <td>{apiKey.expires_at ? when(apiKey.expires_at) : 'never'}</td>
      <td>{apiKey.last_used_at ? when(apiKey.last_used_at) : '—'}</td>
      <td>
        {apiKey.revoked_at ? <span class="status failed">revoked</span> : expired ? <span class="status cancelled">expired</span> : <span class="status delivered">active</span>}
      </td>
      <td class="actions">
        {apiKey.revoked_at === null && <DeleteButton label="Revoke" onDelete={revoke} />}
        <Problem error={problem} />
      </td>
    </tr>
  );
}

/**
 * The account's API keys (`/keys`, scope `keys:manage`). A new key's secret lives in this page's state only: shown
 * once, gone with "I have kept it" or when the page is left.
 */
export function KeysPage() {
  const [page, setPage] = useState(1);
  const { result, reload } = useApi((client) => client.keys.list({ page, limit: 20 }), [page]);
  const [issuing, setIssuing] = useState(false);
  const [created, setCreated] = useState<CreatedApiKeyView>();
  const scopeMissing = result?.ok === false && result.error.details.required_scope === 'keys:manage';
  return (
    <>
      <div class="title">
        <h1>API keys</h1>
        <button type="button" onClick={() => (setIssuing(true), setCreated(undefined))} disabled={issuing || scopeMissing}>
          Issue key
        </button>
      </div>
      {scopeMissing && (
        <p class="panel problem" role="alert">
          Managing keys needs the <code>keys:manage</code> scope, which the signed-in key lacks. Sign in with a key that holds it (<code>npm run keys -- create &lt;account&gt; --scopes keys:manage,…</code> issues one).
        </p>
      )}
      {issuing && (
        <KeyForm
          onCancel={() => setIssuing(false)}
          onCreated={(key) => {
            setIssuing(false);
            setCreated(key);
            reload();
          }}
        />
      )}
      {created && (
        <section class="panel secret" aria-labelledby="key-secret-title">
          <h2 id="key-secret-title">The new key’s secret</h2>
          <p>
            Shown only this once: <code>{created.id}</code> is used with it as <code>Authorization: Bearer …</code>. Copy it now; leaving this page forgets it.
          </p>
          <code class="secret-value" id="key-secret">
            {created.secret}
          </code>
          <div class="buttons">
            <CopyButton text={created.secret} label="Copy the secret" />
            <button type="button" onClick={() => setCreated(undefined)}>
              I have kept it
            </button>
          </div>
        </section>
      )}
      {!scopeMissing && <Problem error={result?.ok === false ? result.error : undefined} />}
      {result?.ok && result.data.length === 0 && <p>No keys yet.</p>}
      {result?.ok && result.data.length > 0 && (
        <div class="scroll">
          <table>
            <caption class="visually-hidden">API keys of this account, oldest first</caption>
            <TableHead columns={['Key', 'Tier', 'Scopes', 'Tools', 'Created', 'Expires', 'Last used', 'State', 'Actions']} />
            <tbody>
              {result.data.map((key) => (
                <KeyRow key={`${key.id}@${key.revoked_at}`} apiKey={key} onRevoked={reload} />
              ))}
            </tbody>
          </table>
        </div>
      )}
      {result?.ok && <Pager pagination={result.pagination} onPage={setPage} />}
    </>
  );
}
