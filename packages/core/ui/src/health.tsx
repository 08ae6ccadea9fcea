import { useState } from 'preact/hooks';
import { api, type HealthHistory, type HealthRecord, type Server, when } from './api.js';
import { Bars, Pager, Problem, useApi } from './ui.js';

const SLOT_MS = 5 * 60_000;
const SLOTS = 288;

/** What each rule means to an operator (docs/health.md, "States"). */
const REASONS: Record<HealthHistory['state_reason'], string> = {
  not_probed: 'not probed yet',
  probe_ok: 'the latest probe answered in time, few requests failed',
  slow_probe: 'the latest probe answered slower than the threshold',
  error_rate: 'too many recent probes and calls failed',
  probe_failed: 'the latest probe got no MCP answer',
  auth_rejected: 'the server refused our credentials (401/403): fix its authentication',
};

const BREAKER_TEXT: Record<HealthHistory['breaker']['state'], string> = {
  closed: 'closed: calls go',
  open: 'open: calls fail fast',
  half_open: 'half-open: the next call probes first',
};

/** The last 24 h in five-minute slots, oldest first: each slot's bucket, or `undefined` when nothing happened then. */
function slots(history: HealthHistory, now = Date.now()): (HealthHistory['buckets'][number] | undefined)[] {
  const out: (HealthHistory['buckets'][number] | undefined)[] = Array.from({ length: SLOTS }, () => undefined);
  const first = Math.floor(now / SLOT_MS) - SLOTS + 1;
  for (const bucket of history.buckets) {
    const index = Math.floor(Date.parse(bucket.start) / SLOT_MS) - first;
    if (index >= 0 && index < SLOTS) out[index] = bucket;
  }
  return out;
}

const ms = (figure: { p50: number; p95: number } | null) => (figure === null ? '—' : `${figure.p50} / ${figure.p95} ms`);

function Timeline({ name, history }: { name: string; history: HealthHistory }) {
  const all = slots(history);
  // The state held after each slot's last probe; a slot without a probe keeps the one before it.
  let held: string | undefined;
  const states = all.map((bucket) => (held = bucket?.status ?? held));
  const counts = new Map<string, number>();
  for (const state of states) if (state !== undefined) counts.set(state, (counts.get(state) ?? 0) + 1);
  const summary = [...counts].map(([state, n]) => `${state} ${Math.round((n * 5) / 6) / 10} h`).join(', ') || 'no probes';
  const latency = all.map((bucket) => {
    const worst = Math.max(bucket?.latency.probe?.p95 ?? 0, bucket?.latency.call?.p95 ?? 0);
    return worst === 0 ? null : worst;
  });
  const peak = Math.max(0, ...latency.map((v) => v ?? 0));
  return (
    <>
      <figure>
        <Bars wide label={`States of ${name} over the last 24 hours: ${summary}`} values={states.map((s) => (s === undefined ? null : 1))} max={1} tone={(_v, i) => `bar st-${states[i]}`} />
        <figcaption>States, 24 h in five-minute slots: {summary}</figcaption>
      </figure>
      <figure>
        <Bars wide label={`p95 latency of ${name} per five minutes over the last 24 hours, peak ${peak} ms`} values={latency} />
        <figcaption>p95 latency of probes and calls per five minutes (peak {peak} ms)</figcaption>
      </figure>
    </>
  );
}

/**
 * "Check health" / "Check now": probes the server (`GET /servers/{id}/health`) and says what came of it. Its button
 * takes `aria-disabled={checking}`, not `disabled`: a button disabled under the keyboard's focus loses it, and the
 * user their place on the page; a press while checking does nothing.
 */
export function useHealthCheck(serverId: string, onChecked: (record: HealthRecord) => void) {
  const [checking, setChecking] = useState(false);
  const [note, setNote] = useState('');
  const check = async () => {
    if (checking) return;
    setChecking(true);
    setNote('');
    const answer = await api((client) => client.servers.health(serverId));
    setChecking(false);
    if (!answer.ok) return setNote(answer.error.message);
    setNote(answer.data.error ? `${answer.data.error.code}: ${answer.data.error.message}` : `${answer.data.response_time} ms`);
    onChecked(answer.data);
  };
  return { checking, note, setNote, check };
}

function ServerHealth({ server }: { server: Server }) {
  const { result, reload } = useApi((client) => client.servers.healthHistory(server.id), [server.id]);
  const [checked, setChecked] = useState<HealthRecord>();
  const { checking, note, check } = useHealthCheck(server.id, (record) => {
    setChecked(record);
    reload();
  });
  const history = result?.ok ? result.data : undefined;
  const status = checked?.status ?? history?.status ?? server.health;
  const reason = checked?.state_reason ?? history?.state_reason;
  const pending = checked?.pending;
  const breaker = checked?.breaker ?? history?.breaker;
  const id = `health-${server.id}`;
  return (
    <section class="panel server-health" aria-labelledby={id}>
      <div class="title">
        <h2 id={id}>{server.name}</h2>
        <span class={`health ${status}`}>{status}</span>
        <button type="button" onClick={check} aria-disabled={checking} aria-describedby={id}>
          {checking ? 'Checking…' : 'Check now'}
        </button>
      </div>
      {note && (
        <p class="note" role="status">
          {note}
        </p>
      )}
      <Problem error={result?.ok === false ? result.error : undefined} />
      <dl class="detail">
        <dt>Why</dt>
        <dd>
          {reason === undefined ? '—' : REASONS[reason]}
          {reason && <code class="reason"> {reason}</code>}
          {pending && (
            <>
              {' '}
              (then <span class={`health ${pending.status}`}>{pending.status}</span> for {pending.probes} probe{pending.probes === 1 ? '' : 's'}, not yet held)
            </>
          )}
        </dd>
        <dt>Breaker</dt>
        <dd>
          {breaker === undefined ? (
            '—'
          ) : (
            <>
              <span class={`status breaker-${breaker.state}`}>{BREAKER_TEXT[breaker.state]}</span> {breaker.consecutive_failures} failure{breaker.consecutive_failures === 1 ? '' : 's'} in a row
              {breaker.retry_at && <>, next probe {when(breaker.retry_at)}</>}
            </>
          )}
        </dd>
        <dt>Uptime, error rate</dt>
        <dd>{history ? `${history.uptime}, ${history.error_rate} (24 h)` : '—'}</dd>
        <dt>Probes p50 / p95</dt>
        <dd>{history ? `${ms(history.latency.last_hour.probe)} (1 h), ${ms(history.latency.last_day.probe)} (24 h)` : '—'}</dd>
        <dt>Calls p50 / p95</dt>
        <dd>{history ? `${ms(history.latency.last_hour.call)} (1 h), ${ms(history.latency.last_day.call)} (24 h)` : '—'}</dd>
      </dl>
      {history && <Timeline name={server.name} history={history} />}
    </section>
  );
}

/** Health: each server's state and why, its breaker, and 24 h of states and latency (docs/dashboard.md). */
export function HealthPage() {
  const [page, setPage] = useState(1);
  const { result, reload } = useApi((client) => client.servers.list({ page, limit: 20 }), [page]);
  const servers = result?.ok ? result.data : [];
  return (
    <>
      <div class="title">
        <h1>Health</h1>
        <button type="button" onClick={reload}>
          Refresh
        </button>
      </div>
      <Problem error={result?.ok === false ? result.error : undefined} />
      {result?.ok && servers.length === 0 && <p>No servers yet: add one on the Servers page.</p>}
      {servers.map((server) => (
        <ServerHealth key={server.id} server={server} />
      ))}
      <Pager pagination={result?.ok ? result.pagination : undefined} onPage={setPage} />
    </>
  );
}
