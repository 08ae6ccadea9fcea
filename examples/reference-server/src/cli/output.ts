/**
 * What the CLI prints (docs/cli.md "Output"): for people, aligned tables and `field  value` lines, colored only on a
 * terminal without NO_COLOR; for scripts (`--json`), the API's `data` exactly, as JSON on stdout. Notes and warnings
 * always go to stderr, so stdout stays the data.
 */

/** no-color.org: any non-empty NO_COLOR turns color off; so does output that is not a terminal, or TERM=dumb. */
export function colorEnabled(stream: NodeJS.WriteStream = process.stdout, env: NodeJS.ProcessEnv = process.env): boolean {
  return stream.isTTY === true && (env.NO_COLOR ?? '') === '' && env.TERM !== 'dumb';
}

type Paint = (text: string) => string;
const sgr = (open: number, close: number): Paint => (text) => (colorEnabled() ? `\u001b[${open}m${text}\u001b[${close}m` : text);
export const paint = { bold: sgr(1, 22), dim: sgr(2, 22), red: sgr(31, 39), green: sgr(32, 39), yellow: sgr(33, 39) };

/** A value as one cell: `-` for nothing, lists joined, objects as compact JSON, control characters made visible. */
export function cell(value: unknown): string {
  if (value === null || value === undefined || value === '') return '-';
  if (Array.isArray(value) && value.every((v) => typeof v !== 'object')) return value.length === 0 ? '-' : value.join(',');
  const text = typeof value === 'object' ? JSON.stringify(value) : String(value);
  // A name or a message from the fleet may hold anything: never let it move the cursor or paint the terminal.
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => (c === '\t' ? ' ' : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`));
}

function truncate(text: string, width: number): string {
  return text.length <= width ? text : `${text.slice(0, Math.max(1, width - 1))}…`;
}

/** Colors for the cells that carry a state, by their text. */
const STATES: Record<string, Paint> = {
  healthy: paint.green,
  success: paint.green,
  delivered: paint.green,
  active: paint.green,
  unhealthy: paint.red,
  error: paint.red,
  timeout: paint.red,
  failed: paint.red,
  revoked: paint.red,
  expired: paint.red,
  unknown: paint.yellow,
  pending: paint.yellow,
};

export interface Column<T> {
  header: string;
  value: (row: T) => unknown;
  /** The widest this column gets before its cells are cut with `…`. @default 40 */
  max?: number;
}

/**
 * Aligned columns, two spaces apart, each at most its `max` wide (ids and dates never are cut: their max is their
 * length). On a terminal the last column is cut further to fit its width.
 */
export function table<T>(rows: readonly T[], columns: readonly Column<T>[]): string {
  const cells = rows.map((row) => columns.map((column) => truncate(cell(column.value(row)), column.max ?? 40)));
  const widths = columns.map((column, i) => Math.max(column.header.length, ...cells.map((row) => (row[i] as string).length)));
  const terminal = process.stdout.isTTY === true ? process.stdout.columns : undefined;
  if (terminal !== undefined && widths.length > 0) {
    const used = widths.slice(0, -1).reduce((sum, w) => sum + w + 2, 0);
    const last = widths.length - 1;
    widths[last] = Math.max(columns[last]!.header.length, Math.min(widths[last]!, terminal - used));
  }
  const line = (values: string[], header: boolean) =>
    values
      .map((value, i) => {
        const text = truncate(value, widths[i]!);
        const padded = i === values.length - 1 ? text : text.padEnd(widths[i]!);
        if (header) return paint.bold(padded);
        const state = STATES[text];
        return state !== undefined ? padded.replace(text, state(text)) : padded;
      })
      .join('  ')
      .trimEnd();
  return [line(columns.map((c) => c.header), true), ...cells.map((row) => line(row, false))].join('\n');
}

/** One record as `field  value` lines, in the record's own order; nested objects as compact JSON. */
export function details(record: Record<string, unknown>): string {
  const width = Math.max(...Object.keys(record).map((k) => k.length));
  return Object.entries(record)
    .map(([field, value]) => {
      const text = cell(value);
      const state = STATES[text];
      return `${paint.bold(field.padEnd(width))}  ${state !== undefined ? state(text) : text}`;
    })
    .join('\n');
}

/** `--json`: the data exactly as the API answered it. */
export function printJson(data: unknown): void {
  process.stdout.write(`${JSON.stringify(data, null, 2)}\n`);
}

export function printLine(text: string): void {
  process.stdout.write(`${text}\n`);
}
