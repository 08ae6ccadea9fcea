/**
 * Listings follow pages (docs/cli.md "Listings"): one page of `--limit` (default 50) from `--page` (default 1), or
 * `--all` of them; a `--limit` above the API's 100 reads as many pages as it takes. What was left out is said on stderr.
 */
import { type Command, Option } from 'commander';
import { UsageError, note } from './exit.js';
import { integer } from './input.js';

/** The API's cap on `limit` (docs/http-api.md "Lists"). */
const PAGE_MAX = 100;

export interface PageAnswer<T> {
  data: T[];
  pagination: { page: number; limit: number; total: number; pages: number };
}

export interface ListFlags {
  all?: boolean;
  limit?: number;
  page?: number;
}

export function listOptions(command: Command): Command {
  return command
    .addOption(new Option('--limit <n>', 'at most this many (default 50; above 100, several pages)').argParser(integer('--limit')))
    .addOption(new Option('--page <n>', 'start at this page of --limit (default 1)').argParser(integer('--page')))
    .option('--all', 'every page');
}

/** The rows the flags ask for, and a note on stderr when there are more. */
export async function collect<T>(flags: ListFlags, fetchPage: (query: { page: number; limit: number }) => Promise<PageAnswer<T>>, noun: string): Promise<T[]> {
  if (flags.all === true && (flags.limit !== undefined || flags.page !== undefined)) throw new UsageError('--all reads every page: drop --limit and --page');
  const wanted = flags.all === true ? Number.POSITIVE_INFINITY : (flags.limit ?? 50);
  if (flags.page !== undefined && wanted > PAGE_MAX) throw new UsageError(`--page counts pages of --limit, which is then at most ${PAGE_MAX}`);
  const limit = Math.min(wanted, PAGE_MAX);
  const first = flags.page ?? 1;
  let page = first;
  const rows: T[] = [];
  let total = 0;
  for (;;) {
    const answer = await fetchPage({ page, limit });
    rows.push(...answer.data);
    total = answer.pagination.total;
    if (rows.length >= wanted || page >= answer.pagination.pages || answer.data.length === 0) break;
    page += 1;
  }
  const shown = rows.slice(0, Number.isFinite(wanted) ? wanted : undefined);
  if ((first - 1) * limit + shown.length < total) note(`${shown.length} of ${total} ${noun} shown; --all for every one, or --limit N`);
  return shown;
}
