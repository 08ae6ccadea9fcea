import { isIP } from 'node:net';
import type { Result } from 'neverthrow';
import { z } from 'zod';
import { EVENT_TYPES, type FleetEventType } from '../events/catalog.js';
import type { FleetError } from '../errors/fleet-error.js';
import { createAddressPolicy, type AddressPolicy } from '../net/address-policy.js';
import { parse } from '../validation/parse.js';

/** The events a webhook may subscribe to (docs/webhooks.md). */
export const WEBHOOK_EVENTS = EVENT_TYPES;
export type WebhookEventType = FleetEventType;
/** The ping that `POST /webhooks/{id}/test` sends; no webhook subscribes to it, every webhook can receive it. */
export const TEST_EVENT = 'webhook.test';

export interface WebhookInput {
  url: string;
  events: WebhookEventType[];
  description?: string;
}

export interface WebhookPatch {
  url?: string;
  events?: WebhookEventType[];
  description?: string | null;
  enabled?: boolean;
}

const READ_ONLY = ['id', 'secret', 'created_at', 'updated_at', 'disabled_reason'];
const MAX_URL = 2048;

export interface WebhookSchemaOptions {
  /** As the fleet's `allowPrivateNetworks`: also lets `http:` URLs through. @default false */
  allowPrivateNetworks?: boolean | readonly string[];
}

/**
 * Validates webhook bodies under the outgoing-connection rules: `https:` only unless private networks are allowed,
 * no credentials in the URL, and a literal address or `localhost` the guard would refuse is refused now, at create,
 * rather than failing every delivery later. Hostnames are checked again on their resolved address at connect time.
 */
export class WebhookValidator {
  private readonly policy: AddressPolicy;
  private readonly allowHttp: boolean;
  /** The create body, as the route table declares it and `input` judges it. */
  readonly createBody: z.ZodType<WebhookInput>;
  /** The update body, as the route table declares it and `update` judges it. */
  readonly updateBody: z.ZodType<WebhookPatch>;

  constructor(options: WebhookSchemaOptions = {}) {
    const allow = options.allowPrivateNetworks ?? false;
    this.policy = createAddressPolicy({ allowPrivateNetworks: allow });
    this.allowHttp = allow !== false;
    const url = z
      .string()
      .max(MAX_URL)
      .superRefine((value, ctx) => {
        const issue = this.urlIssue(value);
        if (issue !== undefined) ctx.addIssue({ code: 'custom', message: issue });
      })
      .describe(
        `An absolute ${this.allowHttp ? 'https or http' : 'https'} URL without credentials; a literal private, loopback or reserved address (or localhost) is refused unless private networks are allowed.`,
      );
    const events = z
      .array(z.enum(WEBHOOK_EVENTS))
      .min(1)
      .max(WEBHOOK_EVENTS.length)
      .refine((list) => new Set(list).size === list.length, { message: 'must not repeat an event' })
      .describe('Each event at most once.');
    const description = z.string().max(500);
    this.createBody = z.strictObject({ url, events, description: description.optional() }) as z.ZodType<WebhookInput>;
    this.updateBody = z.strictObject({
      url: url.optional(),
      events: events.optional(),
      description: description.nullable().optional(),
      enabled: z.boolean().optional(),
    })
      .describe('Names at least one field; null clears the description.') as z.ZodType<WebhookPatch>;
  }

  input(body: unknown): Result<WebhookInput, FleetError> {
    return parse(this.createBody, body, { readOnly: READ_ONLY });
  }

  update(body: unknown): Result<WebhookPatch, FleetError> {
    return parse(this.updateBody, body, { readOnly: READ_ONLY, patch: true });
  }

  private urlIssue(value: string): string | undefined {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      return 'must be a valid absolute URL';
    }
    if (url.protocol !== 'https:' && !(this.allowHttp && url.protocol === 'http:')) {
      return this.allowHttp ? 'must use the https or http scheme' : 'must use the https scheme';
    }
    if (url.username !== '' || url.password !== '') return 'must not carry credentials';
    const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    const literal = isIP(host) !== 0;
    const local = host === 'localhost' || host.endsWith('.localhost');
    if ((literal && !this.policy.isAllowedAddress(host)) || (local && !this.policy.isAllowedHost(host) && !this.policy.allowsAll)) {
      return 'points to a private, loopback or reserved address, which this service may not reach';
    }
    return undefined;
  }
}
