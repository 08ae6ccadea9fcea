import { useState } from 'preact/hooks';
import { present, type ToolCall, when } from './api.js';
import { Bars, Pager, Problem, TableHead, useApi } from './ui.js';

const MINUTE_MS = 60_000;
const MINUTES = 60;

/** Calls per minute over the last hour, from the newest 100 records (a busier hour shows its latest part). */
function perMinute(calls: ToolCall[], now = Date.now()): { total: number[]; failed: number[] } {
  const total = Array.from({ length: MINUTES }, () => 0);
  const failed = Array.from({ length: MINUTES }, () => 0);
  const start = Math.floor(now / MINUTE_MS) - MINUTES + 1;
  for (const call of calls) {
    const slot = Math.floor(Date.parse(call.created_at) / MINUTE_MS) - start;
    if (slot < 0 || slot >= MINUTES) continue;
    total[slot] = (total[slot] ?? 0) + 1;
    if (call.status !== 'success') failed[slot] = (failed[slot] ?? 0) + 1;
  }
  return { total, failed };
}

function Detail({ id, onClose }: { id: string; onClose: () => void }) {
  const { result } = useApi((client) => client.toolCalls.get(id), [id]);
  return (
    <section class="panel" aria-labelledby="call-title">
      <h2 id="call-title">Tool call {id}</h2>
      <Problem error={result?.ok === false ? result.error : undefined} />
      {result?.ok && (
        <dl class="detail">
          {Object.entries(result.data).map(([name, value]) => (
            <>
              <dt>{name}</dt>
              <dd>{typeof value === 'object' && value !== null ? <pre>{JSON.stringify(value, null, 2)}</pre> : String(value)}</dd>
            </>
          ))}
        </dl>
      )}
      <button type="button" onClick={onClose}>
        Close
      </button>
    </section>
  );
}

export function ToolCallsPage() {
  const [filters, setFilters] = useState({ server_id: '', status: '', tool: '' });
  const [draft, setDraft] = useState(filters);
  const [page, setPage] = useState(1);
  // `#/tool-calls?call=<id>` (the Tools page links a call it made) opens that record.
  const [open, setOpen] = useState<string | undefined>(() => new URLSearchParams(location.hash.split('?')[1]).get('call') ?? undefined);
  const { result, reload } = useApi((client) => client.toolCalls.list({ ...present(filters), page, limit: 50 } as Parameters<typeof client.toolCalls.list>[0]), [filters, page]);
  const recent = useApi((client) => client.toolCalls.list({ limit: 100 }), []);
  const { result: servers } = useApi((client) => client.servers.list({ limit: 100 }), []);
  const chart = recent.result?.ok ? perMinute(recent.result.data) : undefined;
  const refresh = () => {
    reload();
    recent.reload();
  };
  const apply = (event: Event) => {
    event.preventDefault();
    setPage(1);
    setFilters(draft);
  };
  const set = (key: keyof typeof draft) => (event: Event) => setDraft({ ...draft, [key]: (event.currentTarget as HTMLInputElement).value });
  const calls = result?.ok ? result.data : [];
  return (
    <>
      <div class="title">
        <h1>Tool calls</h1>
        <button type="button" onClick={refresh}>
          Refresh
        </button>
      </div>
      {chart && (
        <figure class="panel">
          <Bars wide label={`Tool calls per minute over the last hour: ${chart.total.reduce((a, b) => a + b, 0)} calls`} values={chart.total.map((count) => count || null)} tone={(_, i) => ((chart.failed[i] ?? 0) > 0 ? 'bar bad' : 'bar')} />
          <figcaption>Tool calls per minute, last 60 minutes (red: a minute with failures)</figcaption>
        </figure>
      )}
      <form class="filters" onSubmit={apply} aria-label="Filters">
        <label>
          Server
          <select value={draft.server_id} onChange={set('server_id')}>
            <option value="">any</option>
            {servers?.ok && servers.data.map((server) => <option value={server.id}>{server.name}</option>)}
          </select>
        </label>
        <label>
          Status
          <select value={draft.status} onChange={set('status')}>
            <option value="">any</option>
            <option value="success">success</option>
            <option value="error">error</option>
            <option value="timeout">timeout</option>
          </select>
        </label>
        <label>
          Tool
          <input value={draft.tool} onInput={set('tool')} />
        </label>
        <button type="submit">Filter</button>
      </form>
      {open && <Detail id={open} onClose={() => setOpen(undefined)} />}
      <Problem error={result?.ok === false ? result.error : undefined} />
      {result?.ok && calls.length === 0 && <p>No tool calls{filters.server_id || filters.status || filters.tool ? ' match these filters' : ' yet'}.</p>}
      {calls.length > 0 && (
        <div class="scroll">
          <table>
            <caption class="visually-hidden">Tool calls, newest first</caption>
            <TableHead columns={['When', 'Server', 'Tool', 'Status', 'Duration', 'Attempts', 'Error']} />
            <tbody>
              {calls.map((call) => (
                <tr key={call.id} class={open === call.id ? 'selected' : undefined}>
                  <td>
                    <button type="button" class="link" onClick={() => setOpen(call.id)} aria-label={`Open tool call ${call.tool} of ${when(call.created_at)}`}>
                      {when(call.created_at)}
                    </button>
                  </td>
                  <td>{call.server_name}</td>
                  <td>{call.tool}</td>
                  <td>
                    <span class={`status ${call.status}`}>{call.status}</span>
                  </td>
                  <td>{call.duration_ms} ms</td>
                  <td>{call.attempts}</td>
                  <td>{call.error ? `${call.error.code}` : ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {result?.ok && <Pager pagination={result.pagination} onPage={setPage} />}
    </>
  );
}
