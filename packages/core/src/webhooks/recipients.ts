import type { EventRecipients } from '../events/outbox.js';
import { type DeliveryLog, type DeliveryRecord, DUE_SET, deliveriesSet, deliveryId, deliveryKey, dueMember } from './deliveries.js';
import type { WebhookEventType } from './schema.js';
import type { WebhookStore } from './subscriptions.js';
import { all, chainMap } from '../util/result.js';

/** The webhooks as the outbox's recipients: the enabled webhooks of the account that subscribe to the event. */
export function webhookRecipients(webhooks: WebhookStore, deliveries: DeliveryLog): EventRecipients {
  return {
    of: (account, type) => webhooks.subscriberIds(account, type as WebhookEventType),
    none: (account) => webhooks.noneListed(account),
    deliveryId,
    prepare: (event) =>
      chainMap(
        all(
        event.deliveries.map((d) => {
          const pending: DeliveryRecord = {
            id: d.id,
            account: event.account,
            webhook_id: d.webhook_id,
            event_id: event.id,
            event_type: event.type,
            status: 'pending',
            attempts: [],
            next_attempt_at: event.created_at,
            created_at: event.created_at,
          };
          return deliveries.save(pending);
        }),
        ),
        () => undefined,
      ),
    due: (event) => {
      const at = Date.parse(event.created_at);
      return {
        add: event.deliveries.flatMap((d) => [
          { set: DUE_SET, member: dueMember(at, d.id), score: at },
          { set: deliveriesSet(d.webhook_id), member: d.id, score: at },
        ]),
      };
    },
    keysOf: (event) => event.deliveries.map((d) => deliveryKey(d.id)),
  };
}
