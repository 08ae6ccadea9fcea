import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { FleetClient } from '../../../client/src/index.js';
import { type ApiError, type ApiResult, api, type Pagination } from './api.js';

/** A labelled control with the API's issue about it beside it (announced, and tied to it by aria-describedby). */
export function Field(props: { id: string; label: string; error?: string | undefined; hint?: string; children: (describedBy: string | undefined) => ComponentChildren }) {
  const describedBy = props.error ? `${props.id}-error` : props.hint ? `${props.id}-hint` : undefined;
  return (
    <div class="field">
      <label for={props.id}>{props.label}</label>
      {props.children(describedBy)}
      {props.hint && !props.error && <small id={`${props.id}-hint`}>{props.hint}</small>}
      {props.error && (
        <small id={`${props.id}-error`} class="field-error" role="alert">
          {props.error}
        </small>
      )}
    </div>
  );
}

/** An error that belongs to no one field. */
export function Problem({ error }: { error: ApiError | undefined }) {
  if (error === undefined) return null;
  return (
    <p class="problem" role="alert">
      {error.message} <code>{error.code}</code>
    </p>
  );
}

export function Pager({ pagination, onPage }: { pagination: Pagination | undefined; onPage: (page: number) => void }) {
  if (pagination === undefined || pagination.pages <= 1) return null;
  const { page, pages, total } = pagination;
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" disabled={page <= 1} onClick={() => onPage(page - 1)}>
        Previous
      </button>
      <span>
        Page {page} of {pages} ({total})
      </span>
      <button type="button" disabled={page >= pages} onClick={() => onPage(page + 1)}>
        Next
      </button>
    </nav>
  );
}

/** A read of the API, again whenever a value of `deps` changes or `reload` is called. */
export function useApi<R>(
  read: (client: FleetClient) => Promise<R>,
  deps: unknown[],
): { result: ApiResult<R extends { data: infer D; pagination: Pagination } ? D : R> | undefined; reload: () => void } {
  const [result, setResult] = useState<ApiResult<R extends { data: infer D; pagination: Pagination } ? D : R>>();
  const [round, setRound] = useState(0);
  useEffect(() => {
    let current = true;
    void api(read).then((answer) => current && setResult(answer));
    return () => {
      current = false;
    };
  }, [...deps, round]);
  return { result, reload: () => setRound((n) => n + 1) };
}

/**
 * Bars over time, drawn in SVG without inline style (the CSP allows none): one bar per slot, `null` for a slot
 * with no data. `tone` colours a bar by class.
 */
export function Bars(props: { label: string; values: (number | null)[]; max?: number; tone?: (value: number, index: number) => string; wide?: boolean }) {
  const { values } = props;
  const max = props.max ?? Math.max(1, ...values.map((v) => v ?? 0));
  const width = props.wide ? 600 : 144;
  const height = props.wide ? 80 : 24;
  const slot = width / Math.max(1, values.length);
  return (
    <svg class={props.wide ? 'chart wide' : 'chart'} viewBox={`0 0 ${width} ${height}`} width={width} height={height} role="img" aria-label={props.label}>
      <title>{props.label}</title>
      <line class="axis" x1="0" y1={height - 0.5} x2={width} y2={height - 0.5} />
      {values.map((value, i) => {
        if (value === null) return null;
        const h = Math.max(1, (value / max) * (height - 2));
        return <rect key={i} class={props.tone?.(value, i) ?? 'bar'} x={i * slot + 0.5} y={height - 1 - h} width={Math.max(1, slot - 1)} height={h} />;
      })}
    </svg>
  );
}

export function TableHead({ columns }: { columns: readonly string[] }) {
  return (
    <thead>
      <tr>
        {columns.map((column) => (
          <th scope="col" key={column}>
            {column}
          </th>
        ))}
      </tr>
    </thead>
  );
}

/** "Delete", then "Confirm delete" (or another `label`, "Revoke"): one click never deletes. */
export function DeleteButton({ onDelete, label = 'Delete' }: { onDelete: () => void; label?: string }) {
  const [confirming, setConfirming] = useState(false);
  return confirming ? (
    <button type="button" class="danger" onClick={onDelete}>
      Confirm {label.toLowerCase()}
    </button>
  ) : (
    <button type="button" onClick={() => setConfirming(true)}>
      {label}
    </button>
  );
}
