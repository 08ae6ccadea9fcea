export {
  createFleet,
  normalizePrefix,
  type Fleet,
  type FleetOptions,
  type ServersApi,
  type ToolCallsApi,
  type ToolCallsOptions,
  type ToolsApi,
} from './fleet.js';

export { ERROR_CODES, isErrorCode, type ErrorCategory, type ErrorCode, type ReceiverErrorCode, type UpstreamErrorCode } from './errors/codes.js';
export {
  FleetError,
  isFleetError,
  invalidRequest,
  toFleetError,
  type ErrorDetails,
  type FieldIssue,
  type FleetErrorOptions,
  type UpstreamError,
  type UpstreamFailure,
} from './errors/fleet-error.js';

export {
  createHandler,
  stripPrefix,
  type Authenticate,
  type ErrorHook,
  type FleetHandler,
  type RequestContext,
} from './http/handler.js';
export type { ErrorBody, Meta, SuccessBody } from './http/envelope.js';
export { DEFAULT_BODY_LIMIT } from './http/body.js';

export { ApiKeys, hashSecret, type ApiKey, type CreateApiKeyInput, type CreatedApiKey, type RegisterApiKeyInput } from './auth/api-keys.js';
export { ACCOUNT_PATTERN, SCOPES, TIERS, hasScope, type Principal, type Scope, type Tier } from './auth/scopes.js';

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

export {
  TOOL_CALL_STATUSES,
  type ListToolCallsQuery,
  type ToolCallDetail,
  type ToolCallFilters,
  type ToolCallRecord,
  type ToolCallStatus,
} from './toolcalls/tool-call-log.js';
export type { ToolCallOutcome, ToolCallRecording } from './toolcalls/tool-service.js';
export type { BackoffOptions } from './toolcalls/retry.js';

export type { Claim, CommitResult, IndexStore, IndexTransaction, RangeOptions } from './storage/index-store.js';
export { MemoryIndexStore, type MemoryIndexStoreOptions } from './storage/memory-index-store.js';
export { markStorePrefixed } from './storage/records.js';

export type { Page, PageQuery, Pagination } from './util/pagination.js';

export {
  DEFAULT_OPERATION_LIMITS,
  DEFAULT_TIER_LIMITS,
  DEFAULT_UNAUTHENTICATED_LIMIT,
  RateLimiter,
  type RateLimitDecision,
  type RateLimitOptions,
  type RateLimitScope,
} from './ratelimit/limiter.js';
export type { ConsumeResult, RateLimitCounter, RateLimitStore } from './ratelimit/rate-limit-store.js';
export { MemoryRateLimitStore, type MemoryRateLimitStoreOptions } from './ratelimit/memory-rate-limit-store.js';

export { EventBus, type FleetEventListener, type FleetEventMap, type FleetEventType } from './events/bus.js';
export { formatPercent, type Attempt, type HealthRecord } from './health/health-log.js';
export type { ProbeOutcome, Prober } from './health/health-service.js';

export {
  createStdioSupervisor,
  type CrashBackoffOptions,
  type StdioChannel,
  type StdioErrorCode,
  type StdioExit,
  type StdioExitReason,
  type StdioProcessConfig,
  type StdioProcessInfo,
  type StdioSupervisor,
  type StdioSupervisorOptions,
} from './stdio/supervisor.js';
export { StdioChannelTransport, type StdioChannelTransportOptions } from './stdio/stdio-transport.js';

export {
  classifyAddress,
  createAddressPolicy,
  type AddressClass,
  type AddressPolicy,
  type AddressPolicyOptions,
  type BlockedRange,
} from './net/address-policy.js';
export {
  DEFAULT_CONNECT_TIMEOUT_MS,
  createGuardedAgent,
  isGuardedAgent,
  type GuardedAgentOptions,
  type HostnameResolver,
} from './net/guarded-agent.js';
export { createGuardedFetch, type GuardedFetch, type GuardedFetchOptions } from './net/guarded-fetch.js';
export { classifyUndiciError } from './net/upstream-error.js';

export {
  closeClient,
  connectClient,
  openTransport,
  type ConnectClientOptions,
  type ConnectedClient,
  type McpClientDeps,
  type McpEra,
  type OpenTransportOptions,
  type StdioTransportFactory,
} from './mcp/connect.js';
export { MemoryTokenCache, type CachedToken, type MemoryTokenCacheOptions, type TokenCache } from './mcp/oauth.js';
export { probeServer, type ProbeOptions, type ProbeResult } from './mcp/probe.js';
export { MCP_SUBPROTOCOL, WebSocketClientTransport, type WebSocketClientTransportOptions } from './mcp/websocket-transport.js';

export { createWebhooks, type CreatedWebhook, type Webhooks, type WebhooksApi, type WebhooksDeps, type WebhooksOptions } from './webhooks/service.js';
export { TEST_EVENT, WEBHOOK_EVENTS, WebhookValidator, type WebhookEventType, type WebhookInput, type WebhookPatch } from './webhooks/schema.js';
export { MAX_WEBHOOKS_PER_ACCOUNT, type WebhookView } from './webhooks/subscriptions.js';
export { DELIVERY_STATUSES, type DeliveryAttempt, type DeliveryStatus, type DeliveryView } from './webhooks/deliveries.js';
export { EventOutbox, mergeTransactions, toolCallCheck, type ChangeCheck, type EventRecord, type StagedEvent } from './webhooks/outbox.js';
export { DEFAULT_RETRY, parseRetryAfter, retryDelay, type RetryOptions } from './webhooks/retry.js';
export type { Sender, SendInput, SendOutcome } from './webhooks/sender.js';
export {
  DEFAULT_TOLERANCE_SECONDS,
  type WebhookVerificationError,
  isWebhookSecret,
  newWebhookSecret,
  serviceSignature,
  sign,
  verify,
  verifyServiceSignature,
  type HeaderSource,
  type SignOptions,
  type SignatureHeaders,
  type VerifiedWebhook,
  type VerifyOptions,
  type WebhookVerificationErrorCode,
} from './webhooks/signature.js';
export {
  DEFAULT_WEBHOOK_BODY_LIMIT,
  createWebhookReceiver,
  webhookErrorBody,
  type VerifiedDelivery,
  type WebhookPayload,
  type WebhookReceiver,
  type WebhookReceiverOptions,
} from './webhooks/receiver.js';
