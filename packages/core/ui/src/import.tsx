import { useState } from 'preact/hooks';
import type { FleetClient } from '../../../client/src/index.js';
import type { ImportFormat } from '../../src/import/formats.js';
import { type ApiError, api, fieldErrors } from './api.js';
import './ops.css';
import { TableHead } from './ui.js';

type Plan = Awaited<ReturnType<FleetClient['servers']['import']>>;
type ImportBody = Parameters<FleetClient['servers']['import']>[0];

/** What the route reads at most (`IMPORT_BODY_LIMIT`, 1 MiB): a bigger file is refused here, before it is read. */
const MAX_FILE_BYTES = 1024 * 1024;

const FORMATS: { value: ImportFormat | ''; label: string }[] = [
  { value: '', label: 'detect from the document' },
  { value: 'claude-desktop', label: 'Claude Desktop (claude_desktop_config.json)' },
  { value: 'claude-code', label: 'Claude Code (.mcp.json)' },
  { value: 'cursor', label: 'Cursor (.cursor/mcp.json)' },
  { value: 'vscode', label: 'VS Code (.vscode/mcp.json)' },
  { value: 'registry', label: 'MCP registry server.json' },
];

/** A dropped or chosen file's text, refused past the bound without reading it. */
async function readBounded(file: File): Promise<{ text: string } | { problem: string }> {
  if (file.size > MAX_FILE_BYTES) return { problem: `${file.name} is ${file.size} bytes; at most ${MAX_FILE_BYTES} (1 MiB) are imported at once.` };
  return { text: await file.slice(0, MAX_FILE_BYTES).text() };
}

function PlanView({ plan }: { plan: Plan }) {
  const server = (entry: Plan['created'][number]) => entry.server as { id?: string; name: string; type: string; endpoint: string | null; command?: string | null; args?: string[] | null };
  return (
    <section class="panel" aria-labelledby="plan-title" tabIndex={-1} id="import-plan">
      <h2 id="plan-title">{plan.dry_run ? `The plan (${plan.format}${plan.detected ? ', detected' : ''})` : `Imported (${plan.format})`}</h2>
      {plan.created.length > 0 && (
        <div class="scroll">
          <table>
            <caption>{plan.dry_run ? `${plan.created.length} to create` : `${plan.created.length} created`}</caption>
            <TableHead columns={['Entry', 'Server', 'Type', 'Endpoint or command']} />
            <tbody>
              {plan.created.map((entry) => {
                const s = server(entry);
                return (
                  <tr key={entry.entry}>
                    <th scope="row">{entry.entry}</th>
                    <td>{s.name}</td>
                    <td>{s.type}</td>
                    <td class="endpoint">{s.endpoint ?? [s.command, ...(s.args ?? [])].join(' ')}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      {plan.created.length === 0 && <p>No server {plan.dry_run ? 'would be' : 'was'} created.</p>}
      {plan.skipped.length > 0 && (
        <div class="scroll">
          <table>
            <caption>{plan.skipped.length} skipped</caption>
            <TableHead columns={['Entry', 'Why', 'Code']} />
            <tbody>
              {plan.skipped.map((entry) => (
                <tr key={entry.entry}>
                  <th scope="row">{entry.entry}</th>
                  <td>{entry.message}</td>
                  <td>
                    <code>{entry.code}</code>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {plan.unresolved.length > 0 && (
        <div class="scroll">
          <table>
            <caption>{plan.unresolved.length} unresolved placeholders: set their values on the server afterwards</caption>
            <TableHead columns={['Entry', 'Field', 'Placeholder']} />
            <tbody>
              {plan.unresolved.map((item) => (
                <tr key={`${item.entry}/${item.field}`}>
                  <th scope="row">{item.entry}</th>
                  <td>
                    <code>{item.field}</code>
                  </td>
                  <td>
                    <code>{item.placeholder}</code>
                    {'description' in item && item.description ? ` ${item.description}` : ''}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {plan.renamed.length > 0 && (
        <ul>
          {plan.renamed.map((item) => (
            <li key={item.entry}>
              {item.entry}: named <code>{item.to}</code> (not <code>{item.from}</code>)
            </li>
          ))}
        </ul>
      )}
      {plan.ignored.length > 0 && <p class="muted">Ignored: {plan.ignored.map((item) => `${item.entry}.${item.field}`).join(', ')}</p>}
    </section>
  );
}

/** `POST /servers/import`: paste or drop a client's configuration, see the plan (`dry_run`), then create the servers. */
export function ImportPage() {
  const [text, setText] = useState('');
  const [format, setFormat] = useState('');
  const [skipInvalid, setSkipInvalid] = useState(false);
  const [plan, setPlan] = useState<Plan>();
  const [planned, setPlanned] = useState<string>();
  const [error, setError] = useState<ApiError>();
  const [note, setNote] = useState('');
  const [busy, setBusy] = useState(false);
  const [over, setOver] = useState(false);

  const load = async (file: File | undefined) => {
    if (file === undefined) return;
    const read = await readBounded(file);
    if ('problem' in read) return setNote(read.problem);
    setText(read.text);
    setPlan(undefined);
    setNote(`Read ${file.name} (${file.size} bytes).`);
  };
  const send = async (dryRun: boolean) => {
    setBusy(true);
    setError(undefined);
    const body = { document: text, dry_run: dryRun, skip_invalid: skipInvalid, ...(format === '' ? {} : { format }) } as ImportBody;
    const answer = await api((client) => client.servers.import(body));
    setBusy(false);
    if (!answer.ok) {
      setPlan(undefined);
      return setError(answer.error);
    }
    setPlan(answer.data);
    setPlanned(dryRun ? text + format + skipInvalid : undefined);
    requestAnimationFrame(() => document.getElementById('import-plan')?.focus());
  };
  const issues = Object.values(fieldErrors(error));
  const ready = plan?.dry_run === true && planned === text + format + skipInvalid && plan.created.length > 0;
  return (
    <>
      <div class="title">
        <h1>Import servers</h1>
      </div>
      <form
        class="panel"
        aria-labelledby="import-title"
        onSubmit={(e) => (e.preventDefault(), void send(true))}
        noValidate
      >
        <h2 id="import-title">A client’s configuration</h2>
        <p class="muted">
          Paste the file, drop it on the box, or choose it: Claude Desktop’s <code>claude_desktop_config.json</code>, Claude Code’s <code>.mcp.json</code>, Cursor’s <code>mcp.json</code>, VS Code’s <code>.vscode/mcp.json</code> or a registry <code>server.json</code>. Comments and trailing commas are fine. Nothing is created until you confirm the plan.
        </p>
        <div class="field wide">
          <label for="import-document">Configuration (JSON)</label>
          <textarea
            id="import-document"
            class={over ? 'json drop over' : 'json drop'}
            rows={12}
            spellcheck={false}
            value={text}
            onInput={(e) => (setText(e.currentTarget.value), setNote(''))}
            onDragOver={(e) => (e.preventDefault(), setOver(true))}
            onDragLeave={() => setOver(false)}
            onDrop={(e) => {
              e.preventDefault();
              setOver(false);
              void load(e.dataTransfer?.files[0]);
            }}
            aria-describedby="import-document-note"
            aria-invalid={issues.length > 0 ? 'true' : undefined}
          />
          <small id="import-document-note" role="status">
            {note}
          </small>
        </div>
        <div class="field">
          <label for="import-file">Or choose a file</label>
          <input id="import-file" type="file" accept=".json,.jsonc,application/json" onChange={(e) => void load(e.currentTarget.files?.[0])} />
        </div>
        <div class="field">
          <label for="import-format">Format</label>
          <select id="import-format" value={format} onChange={(e) => setFormat(e.currentTarget.value)}>
            {FORMATS.map(({ value, label }) => (
              <option value={value}>{label}</option>
            ))}
          </select>
        </div>
        <label class="check">
          <input type="checkbox" checked={skipInvalid} onChange={(e) => setSkipInvalid(e.currentTarget.checked)} />
          Skip invalid entries (else one invalid entry refuses the whole import)
        </label>
        {error && (
          <div class="problem" role="alert">
            <p>
              {error.message} <code>{error.code}</code>
            </p>
            {issues.length > 0 && (
              <ul>
                {issues.map((issue) => (
                  <li key={issue}>{issue}</li>
                ))}
              </ul>
            )}
          </div>
        )}
        <div class="buttons">
          <button type="submit" disabled={busy || text.trim() === ''}>
            Show the plan
          </button>
          {ready && (
            <button type="button" class="primary" disabled={busy} onClick={() => void send(false)}>
              Create {plan.created.length} {plan.created.length === 1 ? 'server' : 'servers'}
            </button>
          )}
        </div>
      </form>
      {plan && <PlanView plan={plan} />}
      {plan && !plan.dry_run && plan.created.length > 0 && (
        <p>
          <a href="#/servers">See them on the Servers page</a>, or <a href="#/tools">try their tools</a>.
        </p>
      )}
    </>
  );
}
