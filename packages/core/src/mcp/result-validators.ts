import type { Client } from '@modelcontextprotocol/client';

/** The part of the SDK's wire codec (one per era) that judges a request's result. */
interface ResultCodec {
  validateResult(method: string, raw: unknown): { ok: true; value: unknown } | { ok: false; reason: string; message?: string };
}

/** A Standard Schema, what the SDK's `Client.request` takes as its result schema. */
interface ResultValidator {
  '~standard': { version: 1; vendor: string; validate(value: unknown): { value: unknown } | { issues: { message: string }[] } };
}

/** The methods whose result validator is made once: the ones a tool call and a listing send again and again. */
const KEPT = new Set(['tools/call', 'tools/list', 'ping']);

/** By codec (the SDK has one per era, module constants) and method: the validator, `null` for a method not in the era. */
const validators = new WeakMap<ResultCodec, Map<string, ResultValidator | null>>();

/**
 * The SDK's own result validation of `method` for `codec`, as `Client.request` makes it when it is given no schema
 * (its `codecResultValidator`, the same shape and messages): the codec's `validateResult`, made once per codec and
 * method instead of on every request. `undefined` when the era has no result for the method.
 */
function validatorOf(codec: ResultCodec, method: string): ResultValidator | undefined {
  let byMethod = validators.get(codec);
  if (byMethod === undefined) validators.set(codec, (byMethod = new Map()));
  let validator = byMethod.get(method);
  if (validator === undefined) {
    const probe = codec.validateResult(method, undefined);
    validator =
      !probe.ok && probe.reason === 'not-in-era'
        ? null
        : {
            '~standard': {
              version: 1,
              vendor: 'mcp-wire-codec',
              validate(value) {
                const outcome = codec.validateResult(method, value);
                if (outcome.ok) return { value: outcome.value };
                return { issues: [{ message: outcome.reason === 'invalid' ? (outcome.message ?? '') : `not-in-era: ${method}` }] };
              },
            },
          };
    byMethod.set(method, validator);
  }
  return validator ?? undefined;
}

/**
 * The SDK's `Client.request`, given no result schema (as `callTool` and `listTools` call it), looks the era's result
 * validation up on every request and probes it with `validateResult(method, undefined)`: a failed zod parse whose
 * error is formatted into a string, thrown away — about a tenth of the SDK client's work in a relayed tool call
 * (docs/performance.md, "mcp-hop"). This hands `request` the very same validation, the codec of the request's era
 * (`_resolveOutboundCodec`, which `request` itself asks) judging the result, made once per codec and method. For
 * `tools/call`, `tools/list` and `ping` only: `request` checks a spec method's era the same way with or without a
 * schema for those (it skips the check only for the Tasks methods). Without `_resolveOutboundCodec` (another SDK
 * version), `request` is left as it is.
 */
export function keepResultValidators(client: Client): void {
  const inner = client as unknown as { _resolveOutboundCodec?: (method: string) => ResultCodec };
  if (typeof inner._resolveOutboundCodec !== 'function') return;
  const request = client.request.bind(client) as (...args: unknown[]) => Promise<unknown>;
  client.request = ((sent: { method: string }, schemaOrOptions?: unknown, maybeOptions?: unknown) => {
    const given = (typeof schemaOrOptions === 'object' || typeof schemaOrOptions === 'function') && schemaOrOptions !== null && '~standard' in schemaOrOptions;
    if (given || !KEPT.has(sent.method)) return request(sent, schemaOrOptions, maybeOptions);
    const validator = validatorOf((inner._resolveOutboundCodec as (method: string) => ResultCodec).call(client, sent.method), sent.method);
    return validator === undefined ? request(sent, schemaOrOptions) : request(sent, validator, schemaOrOptions);
  }) as Client['request'];
}
