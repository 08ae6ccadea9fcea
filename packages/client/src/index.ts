export { createClient, type Body, type Endpoint, type FleetClient, type InputOf, type Listing, type OperationAt, type PathOf, type Query, type Result } from './client.js';
export { type ErrorCode, type ErrorDetails, FleetApiError, FleetNetworkError, isFleetApiError, isFleetNetworkError, type NetworkFailure, type RateLimit } from './errors.js';
export type { CallOptions, ClientOptions, Method } from './transport.js';
export type { components, operations, paths } from './generated/openapi.js';
