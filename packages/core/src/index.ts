// The embedder's API: create a fleet, its options, the shapes of its records and results, error codes, and the
// storage ports with their memory implementations. Receivers of webhooks: `@mcp-fleet/core/webhooks`; Node
// adapters: `@mcp-fleet/core/node`; store authors: `@mcp-fleet/core/testing`. See docs/architecture.md.

export { createFleet, type Fleet, type FleetStats } from './fleet.js';
export type {
  FleetOptions,
  FleetRateLimitOptions,
  OAuthClaims,
  OAuthIntrospectionOptions,
  OAuthIssuerOptions,
  OAuthJwksOptions,
  OAuthOptions,
  OAuthPrincipalContext,
  OAuthPrincipalMapper,
  QuotasOptions,
  ToolCallsOptions,
} from './options.js';
export { DEFAULT_OAUTH_ALGORITHMS, DEFAULT_OAUTH_SCOPES, defaultOAuthPrincipal } from './auth/oauth.js';
export { PROTECTED_RESOURCE_WELL_KNOWN, type WellKnownContext, type WellKnownHandler } from './http/resource-metadata.js';
export type { DashboardOptions } from './http/dashboard.js';
export type { OpenApiDocument } from './http/openapi.js';
export type { McpEndpointOptions } from './mcp-endpoint/endpoint.js';
export type { Operations, ServersApi, ToolCallsApi, ToolsApi } from './operations/index.js';
export type { RotationCounts, SecretsApi } from './operations/secrets.js';
export type { Ran } from './util/result.js';
export type { Authenticate, ErrorHook, FleetHandler, RequestContext, RequestLogEntry } from './http/handler.js';
export type { Logger } from './util/logger.js';
export type { ErrorBody, Meta, SuccessBody } from './http/envelope.js';
export { DEFAULT_BODY_LIMIT } from './http/body.js';

export { ERROR_CODES, ERROR_HINTS, isErrorCode, type ErrorCategory, type ErrorCode, type ReceiverErrorCode, type UpstreamErrorCode } from './errors/codes.js';
export {
  FleetError,
  isFleetError,
  type ErrorDetails,
  type FieldIssue,
  type FleetErrorOptions,
  type RecordedFailure,
  type UpstreamError,
  type UpstreamFailure,
} from './errors/fleet-error.js';

export type { ApiKey, ApiKeys, CreateApiKeyInput, CreatedApiKey, KeyLookup, RegisterApiKeyInput } from './auth/api-keys.js';
export type { KeyRequest } from './auth/key-grants.js';
export type { ApiKeyView, CreatedApiKeyView } from './auth/key-views.js';
export { ACCOUNT_PATTERN, SCOPES, TIERS, type Principal, type Scope, type Tier } from './auth/scopes.js';

export type { ListServersQuery } from './registry/registry.js';
export {
  DEFAULT_TIMEOUT_MS,
  HEALTH_VALUES,
  SERVER_TYPES,
  type HeartbeatConfig,
  type Health,
  type RetryConfig,
  type ServerAuthentication,
  type ServerConfig,
  type ServerInput,
  type ServerPatch,
  type ServerType,
} from './registry/schema.js';
export type { RedactedAuthentication, ServerDetail, ServerSummary } from './registry/views.js';
// Import of the client configurations people already have, and export of the fleet's MCP endpoint as one (docs/import.md).
export { IMPORT_FORMATS, SKIP_CODES, type ImportFormat, type SkipCode } from './import/formats.js';
export { IMPORT_BODY_LIMIT, MAX_IMPORT_ENTRIES, type ImportInput, type ImportOptions, type ImportResult, type PlannedServer } from './import/importer.js';
export { EXPORT_FORMATS, exportClientConfig, type ClientConfig, type ExportClientConfigOptions, type ExportFormat } from './import/export.js';
export type { Attempt, HealthBucket, HealthHistory, HealthRecord } from './health/health-log.js';
export type { HealthMonitorOptions } from './health/monitor.js';
export type { BreakerOptions, HealthOptions } from './health/states.js';
export type { ProbeOutcome, Prober } from './health/health-service.js';

export {
  TOOL_CALL_STATUSES,
  type ListToolCallsQuery,
  type ToolCallDetail,
  type ToolCallFilters,
  type ToolCallRecord,
  type ToolCallStatus,
} from './toolcalls/tool-call-log.js';
export type { ToolCallOutcome, ToolCallRecording } from './toolcalls/tool-service.js';
export type { ListingsOptions } from './toolcalls/listings.js';
export type { BackoffOptions } from './toolcalls/retry.js';
export type { Page, PageQuery, Pagination } from './util/pagination.js';

export { EVENT_TYPES, type FleetEvent, type FleetEventData, type FleetEventMap, type FleetEventType } from './events/catalog.js';
export type { EventSource, FleetEventListener } from './events/bus.js';

export type { WebhooksApi, WebhooksOptions, CreatedWebhook } from './webhooks/service.js';
export { TEST_EVENT, WEBHOOK_EVENTS, type WebhookEventType, type WebhookInput, type WebhookPatch } from './webhooks/schema.js';
export { MAX_WEBHOOKS_PER_ACCOUNT, type WebhookView } from './webhooks/subscriptions.js';
export { DELIVERY_STATUSES, type DeliveryAttempt, type DeliveryStatus, type DeliveryView } from './webhooks/deliveries.js';
export type { RetryOptions } from './webhooks/retry.js';
export type { Sender, SendInput, SendOutcome } from './webhooks/sender.js';
// The core exports `sign` and `verify` (docs/webhooks.md); the rest of the receiver side is `@mcp-fleet/core/webhooks`.
export {
  sign,
  verify,
  type HeaderSource,
  type SignOptions,
  type SignatureHeaders,
  type VerifiedDelivery,
  type VerifiedWebhook,
  type VerifyOptions,
  type WebhookPayload,
  type WebhookReceiver,
  type WebhookReceiverOptions,
  type WebhookVerificationError,
} from './webhooks/index.js';

// The store (every port, as one object) and the ports with their memory implementations.
export { createMemoryStore, type FleetStore, type MemoryStoreOptions } from './store.js';
export type { LeaseStore } from './health/monitor.js';
export type { Claim, CommitResult, IndexStore, IndexTransaction, JointPage, RangeOptions, RecordWrite } from './storage/index-store.js';
export { transactionParts, type TransactionParts } from './storage/index-store.js';
export { parseStoreUrl, redact, type StoreUrl } from './util/redact.js';
export { MemoryIndexStore, type MemoryIndexStoreOptions } from './storage/memory-index-store.js';
export { createMemoryStorage, markStorePrefixed } from './storage/records.js';
export type { ConsumeResult, RateLimitCounter, RateLimitStore } from './ratelimit/rate-limit-store.js';
export { MemoryRateLimitStore, type MemoryRateLimitStoreOptions } from './ratelimit/memory-rate-limit-store.js';
export {
  DEFAULT_TIER_LIMITS,
  DEFAULT_UNAUTHENTICATED_LIMIT,
  RateLimiter,
  type RateLimitDecision,
  type RateLimitOptions,
  type RateLimitScope,
} from './ratelimit/limiter.js';
export { MemoryTokenCache, type CachedToken, type MemoryTokenCacheOptions, type TokenCache } from './mcp/oauth.js';

// The MCP client layer, to probe a configuration without registering it (and for the benchmarks).
export { probeServer, type ProbeOptions, type ProbeResult } from './mcp/probe.js';
export { createGuardedFetch, type GuardedFetch, type GuardedFetchOptions } from './net/guarded-fetch.js';
export type { McpEra } from './mcp/connect.js';

// The trace points on `node:diagnostics_channel` (docs/observability.md): channel names and message shapes, for
// @mcp-fleet/otel, @mcp-fleet/prometheus and any subscriber.
export {
  TRACE_CHANNELS,
  type AuthMessage,
  type HttpRequestMessage,
  type McpClientMessage,
  type McpContentMessage,
  type McpEraName,
  type McpServerMessage,
  type OperationDoor,
  type OperationMessage,
  type ProbeMessage,
  type RateLimitMessage,
  type Settled,
  type StoreMessage,
  type WebhookDeliveryMessage,
} from './trace/channels.js';
