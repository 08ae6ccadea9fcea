import { z } from 'zod';

export interface PageQuery {
  /** 1-based page number. */
  page: number;
  /** Items per page, 1–100. */
  limit: number;
}

export const DEFAULT_PAGE_LIMIT = 50;
export const MAX_PAGE_LIMIT = 100;

/** The `pagination` of a listing's answer. */
export const paginationSchema = z.strictObject({
  page: z.int().min(1),
  limit: z.int().min(1).max(MAX_PAGE_LIMIT),
  total: z.int().min(0),
  pages: z.int().min(0),
});

export type Pagination = z.output<typeof paginationSchema>;

export interface Page<T> {
  data: T[];
  pagination: Pagination;
}

/** Fills in `page` 1 and `limit` 50 where absent. */
export function withPageDefaults<T extends { page?: number | undefined; limit?: number | undefined }>(query: T): T & PageQuery {
  return { ...query, page: query.page ?? 1, limit: query.limit ?? DEFAULT_PAGE_LIMIT };
}

export function pagination({ page, limit }: PageQuery, total: number): Pagination {
  return { page, limit, total, pages: Math.ceil(total / limit) };
}
