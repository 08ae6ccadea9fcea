import { createNoopMeter } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { fleetInstruments, MAX_ATTRIBUTE_VALUES, metricAttributes } from './metrics.js';

describe('metric attributes', () => {
  it('keep only the listed keys, and clamp registry values past MAX_ATTRIBUTE_VALUES to _OTHER', () => {
    const { clamp } = fleetInstruments(createNoopMeter());
    for (let i = 0; i < MAX_ATTRIBUTE_VALUES; i++) expect(clamp('gen_ai.tool.name', `tool-${i}`)).toBe(`tool-${i}`);
    expect(clamp('gen_ai.tool.name', 'one-too-many')).toBe('_OTHER');
    // A value already seen stays itself; another key has its own budget.
    expect(clamp('gen_ai.tool.name', 'tool-7')).toBe('tool-7');
    expect(clamp('mcp_fleet.server.id', 'srv_1')).toBe('srv_1');
    const attributes = { 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': 'another', 'mcp.session.id': 'abc', 'jsonrpc.request.id': '1' };
    expect(metricAttributes(attributes, ['mcp.method.name', 'gen_ai.tool.name'], clamp, ['gen_ai.tool.name'])).toEqual({ 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': '_OTHER' });
  });
});
