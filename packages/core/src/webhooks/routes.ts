import type { Route } from '../http/routes.js';
import { pageParams, parseQuery } from '../http/query.js';
import { withPageDefaults } from '../util/pagination.js';
import type { WebhookOperations } from './service.js';

const idOf = (params: Record<string, string>) => params.id as string;

/** The routes of CONTRACT "Webhooks", all under the `webhooks:manage` scope; the fleet appends them to its own. */
export function webhookRoutes(webhooks: WebhookOperations): Route[] {
  return [
    {
      segments: ['webhooks'],
      methods: {
        GET: {
          name: 'webhooks.list',
          scope: 'webhooks:manage',
          body: false,
          run: ({ principal, query }) =>
            parseQuery(query, pageParams)
              .asyncAndThen((q) => webhooks.list(principal.account, withPageDefaults(q)))
              .map((page) => ({ status: 200, data: page.data, pagination: page.pagination })),
        },
        POST: {
          name: 'webhooks.create',
          scope: 'webhooks:manage',
          body: true,
          run: ({ principal, body }) => webhooks.create(principal.account, body).map((data) => ({ status: 201, data })),
        },
      },
    },
    {
      segments: ['webhooks', ':id'],
      methods: {
        GET: {
          name: 'webhooks.get',
          scope: 'webhooks:manage',
          body: false,
          run: ({ principal, params }) => webhooks.get(principal.account, idOf(params)).map((data) => ({ status: 200, data })),
        },
        PUT: {
          name: 'webhooks.update',
          scope: 'webhooks:manage',
          body: true,
          run: ({ principal, params, body }) =>
            webhooks.update(principal.account, idOf(params), body).map((data) => ({ status: 200, data })),
        },
        DELETE: {
          name: 'webhooks.delete',
          scope: 'webhooks:manage',
          body: false,
          run: ({ principal, params }) => webhooks.delete(principal.account, idOf(params)).map((data) => ({ status: 200, data })),
        },
      },
    },
    {
      segments: ['webhooks', ':id', 'test'],
      methods: {
        POST: {
          name: 'webhooks.test',
          scope: 'webhooks:manage',
          // The ping takes no input; a body, if any, is not read.
          body: false,
          run: ({ principal, params }) => webhooks.test(principal.account, idOf(params)).map((data) => ({ status: 202, data })),
        },
      },
    },
    {
      segments: ['webhooks', ':id', 'deliveries'],
      methods: {
        GET: {
          name: 'webhooks.deliveries',
          scope: 'webhooks:manage',
          body: false,
          run: ({ principal, params, query }) =>
            parseQuery(query, pageParams)
              .asyncAndThen((q) => webhooks.deliveries(principal.account, idOf(params), withPageDefaults(q)))
              .map((page) => ({ status: 200, data: page.data, pagination: page.pagination })),
        },
      },
    },
  ];
}
