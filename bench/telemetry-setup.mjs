// What the telemetry variants of the bench subscribe (section 9, bench/telemetry.mjs, and its server processes,
// bench/frameworks-server.mjs): OpenTelemetry as an operator would run it (a BatchSpanProcessor, metrics read every
// few seconds) over in-memory exporters that count and drop, or the Prometheus metrics in a prom-client registry.
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';

/** `@mcp-fleet/otel`'s `instrument(fleet, …)` on batch-exported spans and periodically read metrics; `close()` undoes it. */
export async function otelOn(fleet, { storeSpans = false } = {}) {
  const { instrument } = await import('@mcp-fleet/otel');
  let exported = 0;
  // An exporter that keeps nothing: the bench measures the fleet's side (spans made, batched, handed over), not a wire.
  const exporter = {
    export(spans, done) {
      exported += spans.length;
      done({ code: 0 });
    },
    shutdown: async () => {},
  };
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(exporter)] });
  const meterProvider = new MeterProvider({
    readers: [new PeriodicExportingMetricReader({ exporter: new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE), exportIntervalMillis: 5000 })],
  });
  const handle = instrument(fleet, { tracerProvider, meterProvider, storeSpans });
  return {
    exported: () => exported,
    async close() {
      handle.close();
      await tracerProvider.shutdown();
      await meterProvider.shutdown();
    },
  };
}

/** `@mcp-fleet/prometheus`'s `metrics(fleet, { registry })` in a registry of its own; `close()` undoes it. */
export async function prometheusOn(fleet) {
  const { metrics } = await import('@mcp-fleet/prometheus');
  const { Registry } = await import('prom-client');
  const registry = new Registry();
  const handle = metrics(fleet, { registry });
  return { registry, close: async () => handle.close() };
}
