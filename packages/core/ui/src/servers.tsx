import { useEffect, useState } from 'preact/hooks';
import { type ApiError, api, fieldErrors, type HealthHistory, type Server, type ServerCreate, type ServerDetail, type ServerUpdate } from './api.js';
import { useHealthCheck } from './health.js';
import { Bars, DeleteButton, Field, Pager, Problem, TableHead, useApi } from './ui.js';

const HOUR_MS = 3_600_000;

/** Probes that succeeded per hour over the last 24 h, in percent; `null` for an hour without probes. */
function hourlyHealth(history: HealthHistory, now = Date.now()): (number | null)[] {
  const hours = Array.from({ length: 24 }, () => ({ probes: 0, healthy: 0 }));
  const start = now - 24 * HOUR_MS;
  for (const bucket of history.buckets) {
    const slot = hours[Math.floor((Date.parse(bucket.start) - start) / HOUR_MS)];
    if (slot === undefined) continue;
    slot.probes += bucket.probes;
    slot.healthy += bucket.healthy;
  }
  return hours.map(({ probes, healthy }) => (probes === 0 ? null : (100 * healthy) / probes));
}

const tone = (share: number) => (share >= 99.5 ? 'bar ok' : share >= 50 ? 'bar warn' : 'bar bad');

function ServerRow({ server, onEdit, onChanged }: { server: Server; onEdit: () => void; onChanged: () => void }) {
  const { result: history, reload } = useApi((client) => client.servers.healthHistory(server.id), [server.id]);
  const [health, setHealth] = useState(server.health);
  const { checking, note, setNote, check } = useHealthCheck(server.id, (record) => {
    setHealth(record.status);
    reload();
  });
  useEffect(() => setHealth(server.health), [server]);

  const remove = async () => {
    const answer = await api((client) => client.servers.delete(server.id));
    if (!answer.ok) return setNote(answer.error.message);
    onChanged();
  };
  const figures = history?.ok ? history.data : undefined;
  return (
    <tr>
      <th scope="row">{server.name}</th>
      <td>{server.type}</td>
      <td class="endpoint">{server.endpoint ?? '—'}</td>
      <td>
        <span class={`health ${health}`}>{health}</span>
        {note && <small class="note" role="status">{note}</small>}
      </td>
      <td>{figures?.uptime ?? '—'}</td>
      <td>{figures?.error_rate ?? '—'}</td>
      <td>{figures && <Bars label={`Health of ${server.name} over the last 24 hours`} values={hourlyHealth(figures)} max={100} tone={tone} />}</td>
      <td class="actions">
        <button type="button" onClick={check} aria-disabled={checking} aria-describedby={`srv-${server.id}`}>
          {checking ? 'Checking…' : 'Check health'}
        </button>
        <button type="button" onClick={onEdit}>
          Edit
        </button>
        <DeleteButton onDelete={remove} />
        <span id={`srv-${server.id}`} hidden>
          {server.name}
        </span>
      </td>
    </tr>
  );
}

interface FormState {
  name: string;
  type: Server['type'];
  endpoint: string;
  timeout: string;
  command: string;
  args: string;
  token: string;
}

const emptyForm: FormState = { name: '', type: 'http', endpoint: '', timeout: '', command: '', args: '', token: '' };

function fromDetail(server: ServerDetail): FormState {
  return {
    name: server.name,
    type: server.type,
    endpoint: server.endpoint ?? '',
    timeout: String(server.timeout),
    command: server.command ?? '',
    args: (server.args ?? []).join(' '),
    token: '',
  };
}

/** The body of a create, or of an edit (which never changes the type and sends the token only when one is typed). */
function toBody(form: FormState, editing: boolean): Record<string, unknown> {
  const body: Record<string, unknown> = { name: form.name };
  if (!editing) body.type = form.type;
  if (form.type !== 'stdio' || form.endpoint !== '') body.endpoint = form.endpoint === '' && editing ? null : form.endpoint;
  if (form.timeout !== '') body.timeout = Number(form.timeout);
  if (form.type === 'stdio') {
    body.command = form.command;
    body.args = form.args.split(/\s+/).filter(Boolean);
  } else if (form.token !== '') {
    body.authentication = { type: 'bearer', token: form.token };
  }
  return body;
}

function ServerForm({ editing, onDone }: { editing: ServerDetail | undefined; onDone: (saved: boolean) => void }) {
  const [form, setForm] = useState<FormState>(editing ? fromDetail(editing) : emptyForm);
  const [error, setError] = useState<ApiError>();
  const [saving, setSaving] = useState(false);
  const issues = fieldErrors(error);
  const issueOf = (field: string) => issues[field] ?? Object.entries(issues).find(([name]) => name.startsWith(`${field}.`))?.[1];
  const known = ['name', 'type', 'endpoint', 'timeout', 'command', 'args', 'authentication'];
  const elsewhere = error && (error.code !== 'INVALID_REQUEST' || Object.keys(issues).some((f) => !known.some((k) => f === k || f.startsWith(`${k}.`))));
  const set = (key: keyof FormState) => (event: Event) => setForm({ ...form, [key]: (event.currentTarget as HTMLInputElement).value });

  const submit = async (event: Event) => {
    event.preventDefault();
    setSaving(true);
    const answer = editing
      ? await api((client) => client.servers.update(editing.id, toBody(form, true) as ServerUpdate))
      : await api((client) => client.servers.create(toBody(form, false) as ServerCreate));
    setSaving(false);
    if (answer.ok) onDone(true);
    else setError(answer.error);
  };
  const input = (key: keyof FormState, label: string, type: 'text' | 'number' | 'password' = 'text', extra: Record<string, unknown> = {}) => (
    <Field id={`server-${key}`} label={label} error={issueOf(key === 'token' ? 'authentication' : key)}>
      {(describedBy) => (
        <input id={`server-${key}`} name={key} type={type as "text"} value={form[key]} onInput={set(key)} aria-describedby={describedBy} aria-invalid={describedBy?.endsWith('-error') ? 'true' : undefined} {...extra} />
      )}
    </Field>
  );
  return (
    <form class="panel" onSubmit={submit} aria-labelledby="server-form-title" noValidate>
      <h2 id="server-form-title">{editing ? `Edit ${editing.name}` : 'Add server'}</h2>
      {input('name', 'Name', 'text', { required: true, autoFocus: true })}
      <Field id="server-type" label="Type" error={issueOf('type')}>
        {(describedBy) => (
          <select id="server-type" name="type" value={form.type} onChange={set('type')} disabled={editing !== undefined} aria-describedby={describedBy}>
            <option value="http">http</option>
            <option value="websocket">websocket</option>
            <option value="stdio">stdio</option>
          </select>
        )}
      </Field>
      {input('endpoint', 'Endpoint', 'text', { placeholder: form.type === 'websocket' ? 'wss://…' : 'https://…' })}
      {input('timeout', 'Timeout (ms)', 'number', { min: 1, placeholder: '30000' })}
      {form.type === 'stdio' ? (
        <>
          {input('command', 'Command')}
          {input('args', 'Arguments')}
        </>
      ) : (
        input('token', 'Bearer token', 'password', { autoComplete: 'off', placeholder: editing?.authentication ? 'unchanged' : 'none' })
      )}
      {elsewhere && <Problem error={error} />}
      <div class="buttons">
        <button type="submit" disabled={saving}>
          {editing ? 'Save changes' : 'Add'}
        </button>
        <button type="button" onClick={() => onDone(false)}>
          Cancel
        </button>
      </div>
    </form>
  );
}

export function ServersPage() {
  const [page, setPage] = useState(1);
  const { result, reload } = useApi((client) => client.servers.list({ page, limit: 50 }), [page]);
  const [form, setForm] = useState<{ editing?: ServerDetail } | undefined>();
  const [problem, setProblem] = useState<ApiError>();

  const edit = async (server: Server) => {
    const answer = await api((client) => client.servers.get(server.id));
    if (answer.ok) setForm({ editing: answer.data });
    else setProblem(answer.error);
  };
  const servers = result?.ok ? result.data : [];
  return (
    <>
      <div class="title">
        <h1>Servers</h1>
        <button type="button" onClick={() => setForm({})} disabled={form !== undefined && form.editing === undefined}>
          Add server
        </button>
        <button type="button" onClick={reload}>
          Refresh
        </button>
      </div>
      {form && (
        <ServerForm
          key={form.editing?.id ?? 'new'}
          editing={form.editing}
          onDone={(saved) => {
            setForm(undefined);
            if (saved) reload();
          }}
        />
      )}
      <Problem error={problem ?? (result?.ok === false ? result.error : undefined)} />
      {result?.ok && servers.length === 0 && <p>No servers yet: add one with “Add server”.</p>}
      {servers.length > 0 && (
        <div class="scroll">
          <table>
            <caption class="visually-hidden">Registered servers, oldest first</caption>
            <TableHead columns={['Name', 'Type', 'Endpoint', 'Health', 'Uptime', 'Error rate', 'Last 24 h', 'Actions']} />
            <tbody>
              {servers.map((server) => (
                <ServerRow key={`${server.id}@${server.updated_at}`} server={server} onEdit={() => void edit(server)} onChanged={reload} />
              ))}
            </tbody>
          </table>
        </div>
      )}
      {result?.ok && <Pager pagination={result.pagination} onPage={setPage} />}
    </>
  );
}
