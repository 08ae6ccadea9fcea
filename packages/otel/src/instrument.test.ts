import { executionAsyncId } from 'node:async_hooks';
import { tracingChannel } from 'node:diagnostics_channel';
import { TRACE_CHANNELS } from '@mcp-fleet/core';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { instrument } from './instrument.js';

/** The async id a promise continuation runs in: 0 unless something turned Node's promise hooks on. */
async function continuationId(): Promise<number> {
  await null;
  return executionAsyncId();
}

describe('instrument', () => {
  it('close() turns off the context store it entered: no promise hook is left on for the process', async () => {
    // Nothing in this process has turned the hooks on yet; otherwise this test could not tell.
    expect(await continuationId()).toBe(0);
    const telemetry = instrument(undefined, { tracerProvider: new BasicTracerProvider(), meterProvider: new MeterProvider() });
    // One traced action, as the core publishes an operation: its span's context is entered for the call.
    tracingChannel(TRACE_CHANNELS.operation).traceSync(() => undefined, { operation: 'servers.list', account: 'acct', via: 'api' });
    expect(await continuationId()).not.toBe(0);
    telemetry.close();
    expect(await continuationId()).toBe(0);
  });
});
