import { useEffect, useRef, useState } from 'preact/hooks';
import type { FleetClient } from '../../../client/src/index.js';
import { type ApiError, api } from './api.js';
import './ops.css';
import { collect, type Draft, fieldId, initialDraft, kindOf, type Schema, SchemaField } from './schema-form.js';
import { Problem, useApi } from './ui.js';

/** What `POST /servers/{id}/tools/call` answers: the record written, and the MCP result when the tool answered. */
type ToolCallOutcome = Awaited<ReturnType<FleetClient['tools']['call']>>;

interface Tool {
  name: string;
  title?: string;
  description?: string;
  inputSchema: Schema;
  annotations?: Record<string, unknown>;
}

type Content = NonNullable<ToolCallOutcome['result']>['content'][number];

/** The hints a tool declares about itself (MCP `ToolAnnotations`), in words. */
const HINTS: [string, string, string][] = [
  ['readOnlyHint', 'read-only', 'may change things'],
  ['destructiveHint', 'destructive', 'not destructive'],
  ['idempotentHint', 'idempotent', 'not idempotent'],
  ['openWorldHint', 'open world', 'closed world'],
];

function Annotations({ annotations }: { annotations: Record<string, unknown> | undefined }) {
  if (annotations === undefined) return null;
  const shown = HINTS.filter(([key]) => typeof annotations[key] === 'boolean').map(([key, yes, no]) => (annotations[key] ? yes : no));
  if (shown.length === 0) return null;
  return (
    <ul class="hints" aria-label="Annotations">
      {shown.map((hint) => (
        <li key={hint}>{hint}</li>
      ))}
    </ul>
  );
}

/** An image as a data: URL (the page's CSP allows `img-src data:`), only for an image type and base64 text. */
function imageUrl(item: { data: string; mimeType: string }): string | undefined {
  return /^image\/[\w.+-]+$/.test(item.mimeType) && /^[A-Za-z0-9+/=\s]*$/.test(item.data) ? `data:${item.mimeType};base64,${item.data.replace(/\s/g, '')}` : undefined;
}

/** One content block of a result: text as text (never HTML), images inline, anything else described. */
function ContentItem({ item, index }: { item: Content; index: number }) {
  switch (item.type) {
    case 'text':
      return <pre class="result-text">{item.text}</pre>;
    case 'image': {
      const url = imageUrl(item);
      return url ? <img class="result-image" src={url} alt={`Image ${index + 1} of the result (${item.mimeType})`} /> : <p class="muted">An image of type {item.mimeType} that cannot be shown.</p>;
    }
    case 'audio':
      return <p class="muted">Audio ({item.mimeType}, {Math.round((item.data.length * 3) / 4)} bytes), not played here.</p>;
    case 'resource_link':
      return (
        <p>
          Resource link: <code>{item.uri}</code> {item.name}
        </p>
      );
    case 'resource':
      return 'text' in item.resource ? (
        <>
          <p>
            Resource <code>{item.resource.uri}</code>
          </p>
          <pre class="result-text">{String(item.resource.text)}</pre>
        </>
      ) : (
        <p>
          Resource <code>{item.resource.uri}</code> (binary)
        </p>
      );
    default:
      return <pre class="result-text">{JSON.stringify(item, null, 2)}</pre>;
  }
}

function Outcome({ outcome }: { outcome: ToolCallOutcome }) {
  const { result } = outcome;
  return (
    <section class="outcome" aria-labelledby={`outcome-${outcome.id}`} tabIndex={-1}>
      <h3 id={`outcome-${outcome.id}`}>
        Result: <span class={`status ${outcome.status}`}>{result?.isError ? 'tool error' : outcome.status}</span> in {outcome.duration_ms} ms
      </h3>
      {outcome.error && (
        <p class="problem">
          {outcome.error.message} <code>{outcome.error.code}</code>
        </p>
      )}
      {result?.content.map((item, i) => <ContentItem key={i} item={item} index={i} />)}
      {result?.structuredContent !== undefined && (
        <>
          <h4>Structured content</h4>
          <pre class="result-text">{JSON.stringify(result.structuredContent, null, 2)}</pre>
        </>
      )}
      <p>
        Recorded as <a href={`#/tool-calls?call=${encodeURIComponent(outcome.id)}`}>{outcome.id}</a> ({outcome.attempts} {outcome.attempts === 1 ? 'attempt' : 'attempts'}).
      </p>
    </section>
  );
}

/** "Try it": the form of the tool's `inputSchema`, checked before it is sent through `POST /servers/{id}/tools/call`. */
function TryIt({ serverId, tool, onClose }: { serverId: string; tool: Tool; onClose: () => void }) {
  const schema = tool.inputSchema;
  const whole = kindOf(schema);
  const fields = whole === 'object' ? Object.entries(schema.properties as Record<string, Schema>) : [];
  const required = Array.isArray(schema.required) ? (schema.required as string[]) : [];
  const noArguments = whole === 'raw' && Object.keys(schema).every((k) => ['type', '$schema', 'properties', 'additionalProperties', 'required'].includes(k)) && Object.keys((schema.properties as object | undefined) ?? {}).length === 0;
  const [draft, setDraft] = useState<Draft>(() => initialDraft(schema));
  const [issues, setIssues] = useState<Record<string, string>>({});
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState<ToolCallOutcome>();
  const [problem, setProblem] = useState<ApiError>();
  const form = useRef<HTMLFormElement>(null);
  const shown = useRef<HTMLDivElement>(null);
  // Opened from the keyboard, the form takes the focus at its first control.
  useEffect(() => (form.current?.querySelector('input, select, textarea, button') as HTMLElement | null)?.focus(), []);
  useEffect(() => {
    if (outcome || problem) (shown.current?.querySelector('.outcome, .problem') as HTMLElement | null)?.focus();
  }, [outcome, problem]);

  const [tried, setTried] = useState(false);
  /** The arguments of `value`, and what the form refuses in it, by field id. */
  const check = (value: Draft) => {
    const found: Record<string, string> = {};
    const args = noArguments ? {} : whole === 'object' ? collect(schema, value, [], true, found) : collect(schema, value, ['arguments'], true, found);
    if (!noArguments && whole !== 'object' && (typeof args !== 'object' || args === null || Array.isArray(args))) found[fieldId(['arguments'])] ??= 'must be a JSON object';
    return { args, found };
  };
  // Once a call was refused, each change says at once what is still missing.
  const edit = (value: Draft) => {
    setDraft(value);
    if (tried) setIssues(check(value).found);
  };
  const submit = async (event: Event) => {
    event.preventDefault();
    setTried(true);
    const { args, found } = check(draft);
    setIssues(found);
    if (Object.keys(found).length > 0) {
      // Focus the first field the form refuses: the keyboard user lands where the fix is.
      requestAnimationFrame(() => (form.current?.querySelector('[aria-invalid="true"]') as HTMLElement | null)?.focus());
      return;
    }
    setBusy(true);
    setOutcome(undefined);
    setProblem(undefined);
    const answer = await api((client) => client.tools.call(serverId, { name: tool.name, arguments: args as Record<string, unknown> }));
    setBusy(false);
    if (answer.ok) setOutcome(answer.data as ToolCallOutcome);
    else setProblem(answer.error);
  };
  return (
    <form ref={form} class="try" onSubmit={submit} aria-label={`Try ${tool.name}`} noValidate>
      {noArguments && <p class="muted">This tool takes no arguments.</p>}
      {whole === 'object' &&
        fields.map(([name, sub]) => (
          <SchemaField key={name} schema={sub} name={name} path={[name]} draft={(draft as Record<string, Draft>)[name]} required={required.includes(name)} issues={issues} onChange={(value) => edit({ ...(draft as Record<string, Draft>), [name]: value })} />
        ))}
      {whole !== 'object' && !noArguments && (
        <SchemaField schema={schema} name="arguments" path={['arguments']} draft={draft} required issues={issues} onChange={edit} />
      )}
      {!noArguments && <p class="muted">* required</p>}
      <div class="buttons">
        <button type="submit" disabled={busy}>
          {busy ? 'Calling…' : `Call ${tool.name}`}
        </button>
        <button type="button" onClick={onClose}>
          Close
        </button>
      </div>
      <div ref={shown} aria-live="polite">
        {problem && (
          <p class="problem" tabIndex={-1}>
            {problem.message} <code>{problem.code}</code>
          </p>
        )}
        {outcome && <Outcome outcome={outcome} />}
      </div>
    </form>
  );
}

function ToolCard({ serverId, tool }: { serverId: string; tool: Tool }) {
  const [trying, setTrying] = useState(false);
  const button = useRef<HTMLButtonElement>(null);
  const [closed, setClosed] = useState(0);
  useEffect(() => {
    if (closed > 0) button.current?.focus();
  }, [closed]);
  const headingId = `tool-${tool.name.replace(/[^A-Za-z0-9_-]/g, '_')}`;
  return (
    <section class="panel tool" aria-labelledby={headingId}>
      <h2 id={headingId}>
        <code>{tool.name}</code>
        {tool.title && <span class="tool-title"> {tool.title}</span>}
      </h2>
      {tool.description && <p class="description">{tool.description}</p>}
      <Annotations annotations={tool.annotations} />
      <details class="schema">
        <summary>Input schema</summary>
        <pre>{JSON.stringify(tool.inputSchema, null, 2)}</pre>
      </details>
      {trying ? (
        <TryIt serverId={serverId} tool={tool} onClose={() => (setTrying(false), setClosed((n) => n + 1))} />
      ) : (
        <button type="button" ref={button} onClick={() => setTrying(true)} aria-label={`Try it: ${tool.name}`}>
          Try it
        </button>
      )}
    </section>
  );
}

function ServerTools({ serverId }: { serverId: string }) {
  const { result, reload } = useApi((client) => client.tools.list(serverId), [serverId]);
  if (result === undefined) return <p class="muted">Asking the server for its tools…</p>;
  if (!result.ok)
    return (
      <>
        <Problem error={result.error} />
        <button type="button" onClick={reload}>
          Ask again
        </button>
      </>
    );
  if (result.data.length === 0) return <p>This server offers no tools (or none this key may call).</p>;
  return (
    <>
      {(result.data as Tool[]).map((tool) => (
        <ToolCard key={`${serverId}/${tool.name}`} serverId={serverId} tool={tool} />
      ))}
    </>
  );
}

/** Per server, the tools it offers now (`GET /servers/{id}/tools`), each with "Try it". */
export function ToolsPage() {
  const { result } = useApi((client) => client.servers.list({ limit: 100 }), []);
  const servers = result?.ok ? result.data : [];
  const [chosen, setChosen] = useState<string>();
  const serverId = chosen ?? servers[0]?.id;
  return (
    <>
      <div class="title">
        <h1>Tools</h1>
      </div>
      <Problem error={result?.ok === false ? result.error : undefined} />
      {result?.ok && servers.length === 0 && <p>No servers yet: add one on the Servers page.</p>}
      {servers.length > 0 && (
        <div class="filters">
          <label>
            Server
            <select value={serverId} onChange={(e) => setChosen(e.currentTarget.value)}>
              {servers.map((server) => (
                <option value={server.id}>{server.name}</option>
              ))}
            </select>
          </label>
        </div>
      )}
      {serverId && <ServerTools key={serverId} serverId={serverId} />}
    </>
  );
}
