/**
 * Type-level tests of `createFleet` (checked by `npm run typecheck`, and run as ordinary tests): `fleet.webhooks`
 * needs no check in the default configuration, is `undefined` when `webhooks: false` is written, and may be either
 * when the options are only known as `FleetOptions`.
 */
import Keyv from 'keyv';
import { describe, expectTypeOf, it } from 'vitest';
import { createFleet, type Fleet } from './fleet.js';
import type { FleetOptions } from './options.js';
import type { WebhooksApi } from './webhooks/service.js';
import { createMemoryStore } from './store.js';

describe('createFleet types fleet.webhooks from its options', () => {
  it('present without options, with options that leave webhooks out, and with webhook options', async () => {
    const bare = createFleet();
    const stored = createFleet({ store: createMemoryStore({ records: new Keyv({ throwOnErrors: true }) }), prefix: '/api' });
    const tuned = createFleet({ webhooks: { worker: false } });
    expectTypeOf(bare.webhooks).toEqualTypeOf<WebhooksApi>();
    expectTypeOf(stored.webhooks).toEqualTypeOf<WebhooksApi>();
    expectTypeOf(tuned.webhooks).toEqualTypeOf<WebhooksApi>();
    // What issue 17 tripped over: no `!` and no narrowing before use.
    expectTypeOf(bare.webhooks.list).toBeFunction();
    await Promise.all([bare.close(), stored.close(), tuned.close()]);
  });

  it('undefined when webhooks: false is written', async () => {
    const off = createFleet({ webhooks: false });
    expectTypeOf(off.webhooks).toEqualTypeOf<undefined>();
    await off.close();
  });

  it('either when the options are only known by their type', async () => {
    const options: FleetOptions = {};
    const unknown = createFleet(options);
    expectTypeOf(unknown.webhooks).toEqualTypeOf<WebhooksApi | undefined>();
    await unknown.close();
  });

  it('a bare Fleet accepts every fleet, as adapters take it', async () => {
    const on = createFleet();
    const off = createFleet({ webhooks: false });
    expectTypeOf(on).toExtend<Fleet>();
    expectTypeOf(off).toExtend<Fleet>();
    expectTypeOf<Fleet['webhooks']>().toEqualTypeOf<WebhooksApi | undefined>();
    await Promise.all([on.close(), off.close()]);
  });
});
