import { useEffect, useState } from 'preact/hooks';
import { type ApiError, api, fieldErrors, WEBHOOK_EVENTS, type Webhook, type WebhookCreate, when } from './api.js';
import { DeleteButton, Field, Pager, Problem, TableHead, useApi } from './ui.js';

/** What `POST /webhooks` answers: the webhook and, this once, its secret. */
type Created = Webhook & { secret: string };

/** The seed's flow: the endpoint URL, the events to subscribe to, save (the secret is shown once), then verify. */
function WebhookForm({ onSaved, onCancel }: { onSaved: (webhook: Created) => void; onCancel: () => void }) {
  const [url, setUrl] = useState('');
  const [description, setDescription] = useState('');
  const [events, setEvents] = useState<string[]>([]);
  const [error, setError] = useState<ApiError>();
  const issues = fieldErrors(error);
  const submit = async (event: Event) => {
    event.preventDefault();
    const body: Record<string, unknown> = { url, events };
    if (description !== '') body.description = description;
    const answer = await api((client) => client.webhooks.create(body as WebhookCreate));
    if (answer.ok) onSaved(answer.data);
    else setError(answer.error);
  };
  const toggle = (name: string) => setEvents(events.includes(name) ? events.filter((e) => e !== name) : [...events, name]);
  const other = error && (error.code !== 'INVALID_REQUEST' || Object.keys(issues).some((f) => !['url', 'events', 'description'].includes(f.split(/[.[]/)[0] ?? '')));
  const eventsIssue = Object.entries(issues).find(([field]) => field.startsWith('events'))?.[1];
  return (
    <form class="panel" onSubmit={submit} aria-labelledby="webhook-form-title" noValidate>
      <h2 id="webhook-form-title">Add webhook</h2>
      <Field id="webhook-url" label="Endpoint URL" error={issues.url} hint="Where deliveries are POSTed, e.g. https://example.com/hooks/mcp-fleet">
        {(describedBy) => (
          <input id="webhook-url" type="url" value={url} onInput={(e) => setUrl(e.currentTarget.value)} aria-describedby={describedBy} aria-invalid={issues.url ? 'true' : undefined} required autoFocus />
        )}
      </Field>
      <fieldset aria-describedby={eventsIssue ? 'webhook-events-error' : undefined}>
        <legend>Events</legend>
        {WEBHOOK_EVENTS.map((name) => (
          <label class="check" key={name}>
            <input type="checkbox" checked={events.includes(name)} onChange={() => toggle(name)} />
            {name}
          </label>
        ))}
        {eventsIssue && (
          <small id="webhook-events-error" class="field-error" role="alert">
            {eventsIssue}
          </small>
        )}
      </fieldset>
      <Field id="webhook-description" label="Description (optional)" error={issues.description}>
        {(describedBy) => <input id="webhook-description" value={description} onInput={(e) => setDescription(e.currentTarget.value)} aria-describedby={describedBy} />}
      </Field>
      {other && <Problem error={error} />}
      <div class="buttons">
        <button type="submit">Save</button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

function Deliveries({ webhook, round }: { webhook: Webhook; round: number }) {
  const [page, setPage] = useState(1);
  const { result, reload } = useApi((client) => client.webhooks.deliveries(webhook.id, { page, limit: 10 }), [webhook.id, page]);
  // After "Send test": look again every second until a new delivery has an outcome (at most 20 s).
  const [polls, setPolls] = useState(0);
  const [before, setBefore] = useState<string>();
  useEffect(() => {
    if (round === 0) return;
    setBefore(result?.ok ? result.data[0]?.id : undefined);
    setPolls(20);
  }, [round]);
  useEffect(() => {
    if (polls <= 0) return;
    const newest = result?.ok ? result.data[0] : undefined;
    if (newest !== undefined && newest.id !== before && newest.status !== 'pending') return setPolls(0);
    const timer = setTimeout(() => {
      setPolls((n) => n - 1);
      reload();
    }, polls === 20 ? 100 : 1000);
    return () => clearTimeout(timer);
  }, [polls, result]);
  if (result === undefined) return null;
  if (!result.ok) return <Problem error={result.error} />;
  if (result.data.length === 0) return <p class="muted">No deliveries yet.</p>;
  return (
    <>
      <table class="deliveries">
        <caption>Deliveries to {webhook.url}, newest first</caption>
        <TableHead columns={['When', 'Event', 'Status', 'Code', 'Attempts']} />
        <tbody>
          {result.data.map((delivery) => {
            const last = delivery.attempts[delivery.attempts.length - 1];
            return (
              <tr key={delivery.id}>
                <td>{when(delivery.created_at)}</td>
                <td>{delivery.event_type}</td>
                <td>
                  <span class={`status ${delivery.status}`}>{delivery.status}</span>
                </td>
                <td>{last?.status_code ?? (last?.error ? last.error.code : '—')}</td>
                <td>{delivery.attempts.length}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
      <Pager pagination={result.pagination} onPage={setPage} />
    </>
  );
}

function WebhookCard({ webhook, onDeleted }: { webhook: Webhook; onDeleted: () => void }) {
  const [round, setRound] = useState(0);
  const [problem, setProblem] = useState<ApiError>();
  const test = async () => {
    setProblem(undefined);
    const answer = await api((client) => client.webhooks.test(webhook.id));
    if (answer.ok) setRound((n) => n + 1);
    else setProblem(answer.error);
  };
  const remove = async () => {
    const answer = await api((client) => client.webhooks.delete(webhook.id));
    if (answer.ok) onDeleted();
    else setProblem(answer.error);
  };
  return (
    <section class="panel webhook" aria-label={`Webhook ${webhook.url}`}>
      <h2 class="url">{webhook.url}</h2>
      <p>
        {webhook.enabled ? <span class="status delivered">enabled</span> : <span class="status failed">disabled{webhook.disabled_reason ? `: ${webhook.disabled_reason}` : ''}</span>}{' '}
        {webhook.events.join(', ')}
        {webhook.description && <> — {webhook.description}</>}
      </p>
      <div class="buttons">
        <button type="button" onClick={test}>
          Send test
        </button>
        <DeleteButton onDelete={remove} />
      </div>
      <Problem error={problem} />
      <Deliveries webhook={webhook} round={round} />
    </section>
  );
}

export function WebhooksPage() {
  const [page, setPage] = useState(1);
  const { result, reload } = useApi((client) => client.webhooks.list({ page, limit: 20 }), [page]);
  const [adding, setAdding] = useState(false);
  const [secret, setSecret] = useState<Created>();
  return (
    <>
      <div class="title">
        <h1>Webhooks</h1>
        <button type="button" onClick={() => setAdding(true)} disabled={adding}>
          Add webhook
        </button>
      </div>
      <p class="muted">Settings → Webhooks: add the endpoint URL, select the events to subscribe to, save and verify with “Send test”.</p>
      {adding && (
        <WebhookForm
          onCancel={() => setAdding(false)}
          onSaved={(webhook) => {
            setAdding(false);
            setSecret(webhook);
            reload();
          }}
        />
      )}
      {secret && (
        <section class="panel secret" role="status" aria-labelledby="secret-title">
          <h2 id="secret-title">Signing secret</h2>
          <p>
            Shown only this once: deliveries to {secret.url} are signed with it (<code>X-Service-Signature</code>). Keep it now.
          </p>
          <code class="secret-value">{secret.secret}</code>
          <div class="buttons">
            <button type="button" onClick={() => setSecret(undefined)}>
              I have kept it
            </button>
          </div>
        </section>
      )}
      <Problem error={result?.ok === false ? result.error : undefined} />
      {result?.ok && result.data.length === 0 && !adding && <p>No webhooks yet: add one with “Add webhook”.</p>}
      {result?.ok && result.data.map((webhook) => <WebhookCard key={webhook.id} webhook={webhook} onDeleted={reload} />)}
      {result?.ok && <Pager pagination={result.pagination} onPage={setPage} />}
    </>
  );
}
