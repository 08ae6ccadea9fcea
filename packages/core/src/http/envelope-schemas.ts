import { z } from 'zod';
import { ERROR_CODES, type ErrorCode } from '../errors/codes.js';
import { isoTimeSchema } from '../util/iso-time.js';
import type { paginationSchema } from '../util/pagination.js';

/**
 * The envelope's zod schemas: what the OpenAPI document renders and the HTTP suite checks every answer against.
 * Apart from the functions that make answers (`envelope.ts`), so that what only answers (the webhook receiver of
 * `@mcp-fleet/core/webhooks`) does not load zod.
 */

/** Every answer's `meta`. */
export const metaSchema = z.strictObject({
  timestamp: isoTimeSchema,
  request_id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/),
});

export type Meta = z.output<typeof metaSchema>;

/** What a route declares of one success status: the envelope's `data`, and `pagination` for a listing. */
export interface AnswerSchema {
  data: z.ZodType;
  pagination?: typeof paginationSchema;
}

/** The whole success envelope of an answer declared as `answer`. */
export function successBodySchema({ data, pagination }: AnswerSchema) {
  return z.strictObject({ success: z.literal(true), data, ...(pagination !== undefined && { pagination }), meta: metaSchema });
}

const fieldIssueSchema = z.strictObject({ field: z.string(), issue: z.string() });

/**
 * `details` of `INVALID_REQUEST` (docs/errors.md): the first problem's `field` and `issue`, `issues` when there are
 * several (the first among them), and `hint` when the refusal is the service's configuration; empty when the request
 * is not even HTTP.
 */
const invalidRequestDetailsSchema = z.union([
  z.strictObject({ field: z.string(), issue: z.string(), issues: z.array(fieldIssueSchema).min(2).optional(), hint: z.string().optional() }),
  z.strictObject({}),
]);

const ERROR_CODE_LIST = Object.keys(ERROR_CODES) as [ErrorCode, ...ErrorCode[]];

/** The error envelope: `error.code` is a code of the one table (docs/errors.md), told apart where `details` has a fixed form. */
export const errorBodySchema = z.strictObject({
  success: z.literal(false),
  error: z.discriminatedUnion('code', [
    z.strictObject({ code: z.literal('INVALID_REQUEST'), message: z.string().min(1), details: invalidRequestDetailsSchema }),
    z.strictObject({
      code: z.enum(ERROR_CODE_LIST.filter((code) => code !== 'INVALID_REQUEST') as [ErrorCode, ...ErrorCode[]]),
      message: z.string().min(1),
      details: z.record(z.string(), z.unknown()).describe('What the code says more precisely (docs/errors.md).'),
    }),
  ]),
  meta: metaSchema,
});

export type ErrorBody = z.output<typeof errorBodySchema>;
