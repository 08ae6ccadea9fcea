import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parse } from './parse.js';
import { issuesOf } from './test-helpers.js';

const schema = z.strictObject({ name: z.string().min(1), size: z.number().int().optional() });

describe('parse', () => {
  it('answers the parsed value', () => {
    expect(parse(schema, { name: 'a', size: 2 })._unsafeUnwrap()).toEqual({ name: 'a', size: 2 });
  });

  it('refuses what is not a JSON object, naming the root', () => {
    for (const body of [null, [], 'x', 1]) {
      expect(issuesOf(parse(schema, body))).toEqual([{ field: 'body', issue: 'must be a JSON object' }]);
    }
    expect(issuesOf(parse(schema, null, { root: 'input' }))).toEqual([{ field: 'input', issue: 'must be a JSON object' }]);
  });

  it('answers one INVALID_REQUEST with every issue: read-only, unknown, the schema’s', () => {
    const result = parse(schema, { id: 'x', name: '', size: 1.5, extra: true }, { readOnly: ['id'] });
    expect(result._unsafeUnwrapErr().code).toBe('INVALID_REQUEST');
    expect(issuesOf(result)).toEqual([
      { field: 'id', issue: 'is read-only' },
      { field: 'name', issue: 'must not be empty' },
      { field: 'size', issue: 'must be an integer' },
      { field: 'extra', issue: 'is not a known field' },
    ]);
  });

  it('reports a field refused by a rule once, without parsing it', () => {
    const result = parse(schema, { name: 'a', size: 'big' }, { fieldIssue: (f) => (f === 'size' ? 'does not apply here' : undefined) });
    expect(issuesOf(result)).toEqual([{ field: 'size', issue: 'does not apply here' }]);
  });

  it('needs a patch to name a field', () => {
    expect(issuesOf(parse(schema.partial(), {}, { patch: true }))).toEqual([{ field: 'body', issue: 'must name at least one field to change' }]);
    expect(parse(schema.partial(), {}).isOk()).toBe(true);
  });

  it('never echoes a submitted value', () => {
    const secret = 'SECRET-VALUE-123';
    const result = parse(z.strictObject({ token: z.number(), kind: z.enum(['a', 'b']) }), { token: secret, kind: secret });
    expect(JSON.stringify(result._unsafeUnwrapErr())).not.toContain(secret);
    expect(result._unsafeUnwrapErr().message).not.toContain(secret);
  });
});
