import { fleetStoreSuite } from '@mcp-fleet/core/testing';
import { describe } from 'vitest';
import { DATABASE_URL, dropSchemas, withoutPostgres } from '../../../test/support/postgres.js';
import { createPostgresStore } from './index.js';

const skip = withoutPostgres('fleetStoreSuite on PostgreSQL');
/** One schema per case (the suite's namespace), so two stores of a case share it and race to migrate it; dropped after. */
const schemaOf = (namespace: string) => `mcp_fleet_test_${namespace}`;

describe.skipIf(skip)('the PostgreSQL store under whole fleets', () => {
  fleetStoreSuite('createPostgresStore', ({ namespace, now }) => createPostgresStore({ connectionString: DATABASE_URL as string, schema: schemaOf(namespace), now, sweepIntervalMs: 0 }), {
    sharedAcrossFleets: true,
    sharedCounters: true,
    cleanup: (namespace) => dropSchemas(schemaOf(namespace)),
  });
});
