export { CONTENT_MAX_LENGTH, type Instrumentation, type InstrumentedFleet, instrument, type InstrumentOptions, SCOPE_NAME, SCOPE_VERSION } from './instrument.js';
export { DURATION_BUCKETS, MAX_ATTRIBUTE_VALUES } from './metrics.js';
