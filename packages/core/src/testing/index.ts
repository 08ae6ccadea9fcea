/**
 * `@mcp-fleet/core/testing`: the contract suites of the storage ports, published so that a store written outside
 * this repository can prove itself against the very cases the built-in ones pass (as `@keyv/test-suite` does for
 * Keyv stores). They are vitest suites: call one at the top level of a test file.
 *
 *   import { indexStoreContract } from '@mcp-fleet/core/testing';
 *   indexStoreContract('MyIndexStore', async ({ now }) => new MyIndexStore({ now }));
 */
export { indexStoreContract, type IndexStoreContractOptions, type OpenIndexStoreOptions } from './index-store.js';
export { rateLimitStoreContract, type RateLimitClock, type RateLimitStoreContractOptions } from './rate-limit-store.js';
export { fleetStoreSuite, type FleetStoreSuiteOptions, type OpenFleetStoreContext } from './fleet-store-suite.js';
