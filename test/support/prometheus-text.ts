/**
 * A strict reader of the Prometheus text exposition format 0.0.4 (https://prometheus.io/docs/instrumenting/exposition_formats/),
 * for the tests: every line must be a `# HELP`, a `# TYPE`, a comment or a sample of the family declared above it,
 * label values unescaped, histogram series grouped with their buckets, `_sum` and `_count`. Written here because
 * parse-prometheus-text-format (1.1.1, the only parser on npm of any use) merges the series of a labelled histogram
 * into one and drops their labels (its issue #13, unfixed since 2020).
 */

export interface ParsedSeries {
  labels: Record<string, string>;
  /** A counter's or gauge's value. */
  value?: number;
  /** A histogram's cumulative buckets, `[le, count]` in the order written. */
  buckets?: [string, number][];
  count?: number;
  sum?: number;
}

export interface ParsedFamily {
  name: string;
  help: string;
  type: 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';
  series: ParsedSeries[];
}

export interface Scrape {
  families: Map<string, ParsedFamily>;
  family(name: string): ParsedFamily | undefined;
  /** The series of `name` whose labels include `labels`. */
  series(name: string, labels?: Record<string, string>): ParsedSeries[];
  /** Observations (a histogram's `_count`) or increments (a counter's value) over those series. */
  total(name: string, labels?: Record<string, string>): number;
}

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const SAMPLE = new RegExp(`^(${NAME})(?:\\{(.*)\\})?\\s+(\\S+)(?:\\s+-?\\d+)?$`);
const LABEL = /\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(,|$)/y;

function labelsOf(text: string | undefined, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  if (text === undefined || text.trim() === '') return labels;
  LABEL.lastIndex = 0;
  while (LABEL.lastIndex < text.length) {
    const match = LABEL.exec(text);
    if (match === null) throw new Error(`malformed labels: ${line}`);
    const [, name, raw] = match as unknown as [string, string, string];
    if (name in labels) throw new Error(`label ${name} twice: ${line}`);
    labels[name] = raw.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
  }
  return labels;
}

function numberOf(text: string, line: string): number {
  if (text === '+Inf') return Number.POSITIVE_INFINITY;
  if (text === '-Inf') return Number.NEGATIVE_INFINITY;
  const value = Number(text);
  if (text !== 'NaN' && Number.isNaN(value)) throw new Error(`not a number: ${line}`);
  return value;
}

const key = (labels: Record<string, string>) => JSON.stringify(Object.entries(labels).sort(([a], [b]) => a.localeCompare(b)));

export function parseScrape(text: string): Scrape {
  const families = new Map<string, ParsedFamily>();
  const bySeries = new Map<string, Map<string, ParsedSeries>>();
  let current: ParsedFamily | undefined;
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const meta = new RegExp(`^#\\s+(HELP|TYPE)\\s+(${NAME})\\s?(.*)$`).exec(line);
    if (meta !== null) {
      const [, kind, name, rest] = meta as unknown as [string, 'HELP' | 'TYPE', string, string];
      current = families.get(name) ?? { name, help: '', type: 'untyped', series: [] };
      families.set(name, current);
      if (kind === 'HELP') current.help = rest.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
      else if (['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(rest)) current.type = rest as ParsedFamily['type'];
      else throw new Error(`unknown type: ${line}`);
      continue;
    }
    if (line.startsWith('#')) continue;
    const sample = SAMPLE.exec(line);
    if (sample === null) throw new Error(`not a sample: ${line}`);
    const [, name, labelText, valueText] = sample as unknown as [string, string, string | undefined, string];
    const value = numberOf(valueText, line);
    const labels = labelsOf(labelText, line);
    let family = current;
    let part: 'value' | 'bucket' | 'sum' | 'count' = 'value';
    if (family?.type === 'histogram' && name.startsWith(family.name)) {
      part = ({ _bucket: 'bucket', _sum: 'sum', _count: 'count' } as const)[name.slice(family.name.length)] ?? 'value';
      if (part === 'value') throw new Error(`a histogram sample must be _bucket, _sum or _count: ${line}`);
    } else if (family === undefined || family.name !== name) {
      // A sample without its own TYPE: an untyped family of its own.
      family = { name, help: '', type: 'untyped', series: [] };
      families.set(name, family);
      current = family;
    }
    const le = labels.le;
    if (part === 'bucket') {
      if (le === undefined) throw new Error(`a bucket without le: ${line}`);
      delete labels.le;
    }
    let index = bySeries.get(family.name);
    if (index === undefined) bySeries.set(family.name, (index = new Map()));
    let series = index.get(key(labels));
    if (series === undefined) {
      series = { labels };
      index.set(key(labels), series);
      family.series.push(series);
    }
    if (part === 'bucket') (series.buckets ??= []).push([le as string, value]);
    else series[part] = value;
  }
  for (const family of families.values()) {
    if (family.type !== 'histogram') continue;
    for (const series of family.series) {
      const counts = (series.buckets ?? []).map(([, count]) => count);
      const last = series.buckets?.at(-1);
      if (last?.[0] !== '+Inf' || series.count !== last[1] || series.sum === undefined || counts.some((count, i) => i > 0 && count < (counts[i - 1] as number))) {
        throw new Error(`histogram ${family.name}${JSON.stringify(series.labels)}: buckets cumulative, the last +Inf and equal to _count, and a _sum`);
      }
    }
  }
  const series = (name: string, labels: Record<string, string> = {}) =>
    (families.get(name)?.series ?? []).filter((s) => Object.entries(labels).every(([label, value]) => s.labels[label] === value));
  return {
    families,
    family: (name) => families.get(name),
    series,
    total: (name, labels) => series(name, labels).reduce((sum, s) => sum + (s.count ?? s.value ?? 0), 0),
  };
}

/** GETs `url` and parses it; the answer must be 200 in the Prometheus text format. */
export async function scrape(url: string): Promise<Scrape> {
  const response = await fetch(url);
  if (response.status !== 200) throw new Error(`GET ${url}: ${response.status} ${await response.text()}`);
  const type = response.headers.get('content-type') ?? '';
  if (!type.startsWith('text/plain; version=0.0.4')) throw new Error(`GET ${url}: content-type ${type}`);
  return parseScrape(await response.text());
}
