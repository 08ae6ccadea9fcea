import fc from 'fast-check';

/**
 * fast-check arbitraries from the JSON Schemas (draft 2020-12) of an OpenAPI document: values a schema accepts, and
 * the same values broken in one place. The subset the document uses: `type` (one or a list), `enum`, `const`,
 * `properties`/`required`/`additionalProperties` (false or a schema, with `propertyNames`), `items`,
 * `minItems`/`maxItems`/`uniqueItems`, `minLength`/`maxLength`, `pattern`, `minimum`/`maximum` and their exclusive
 * forms, `oneOf`/`anyOf`/`allOf`, `$ref` into `#/components/schemas`, `format` uri, date-time and email. A rule the
 * document writes only into a `description` (a URL's scheme, a range of a query integer, each item once) is read
 * from there by `hint`. No maintained JSON-Schema-to-fast-check library targets fast-check 4 and 2020-12.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Schema = Record<string, any>;

/** A value for a schema whose rules are in its description alone; `undefined`: generate from the schema's keywords. */
export type Hint = (schema: Schema) => fc.Arbitrary<unknown> | undefined;

/** Past this depth an object gets its required properties only, an array its fewest items, a map no entry. */
const MAX_DEPTH = 3;
const LONG = 40;

export class SchemaArbitraries {
  constructor(
    private readonly document: Schema,
    private readonly hint: Hint = () => undefined,
  ) {}

  /** `schema` with a `$ref` to `#/components/schemas/…` followed (repeatedly). */
  resolve(schema: Schema): Schema {
    let current = schema;
    while (typeof current.$ref === 'string') {
      const name = (current.$ref as string).replace(/^#\/components\/schemas\//, '');
      const target = this.document.components?.schemas?.[name] as Schema | undefined;
      if (target === undefined) throw new Error(`schema-arbitrary: unresolved $ref ${current.$ref}`);
      const { $ref: _ref, ...rest } = current;
      current = { ...target, ...rest };
    }
    return current;
  }

  /** Values `schema` accepts. */
  valid(schema: Schema, depth = 0): fc.Arbitrary<unknown> {
    const s = this.resolve(schema);
    const hinted = this.hint(s);
    if (hinted !== undefined) return hinted;
    if ('const' in s) return fc.constant(s.const);
    if (Array.isArray(s.enum)) return fc.constantFrom(...(s.enum as unknown[]));
    const branches = (s.oneOf ?? s.anyOf) as Schema[] | undefined;
    if (branches !== undefined) {
      // Deep down, only the branches that end (a JSON value's scalars).
      const usable = depth >= MAX_DEPTH ? branches.filter((b) => !['object', 'array'].includes(this.resolve(b).type)) : branches;
      return fc.oneof(...(usable.length > 0 ? usable : branches).map((b) => this.valid(b, depth + 1)));
    }
    if (Array.isArray(s.allOf)) return this.valid(Object.assign({}, ...(s.allOf as Schema[]).map((b) => this.resolve(b))), depth);
    const types = Array.isArray(s.type) ? (s.type as string[]) : [s.type as string | undefined];
    return fc.oneof(...types.map((type) => this.ofType(type, s, depth)));
  }

  private ofType(type: string | undefined, s: Schema, depth: number): fc.Arbitrary<unknown> {
    switch (type) {
      case 'null':
        return fc.constant(null);
      case 'boolean':
        return fc.boolean();
      case 'integer':
      case 'number': {
        const integer = type === 'integer';
        const min = s.minimum ?? (s.exclusiveMinimum === undefined ? -1_000_000 : s.exclusiveMinimum + (integer ? 1 : Number.EPSILON));
        const max = s.maximum ?? (s.exclusiveMaximum === undefined ? 1_000_000 : s.exclusiveMaximum - (integer ? 1 : Number.EPSILON));
        return integer ? fc.integer({ min, max }) : fc.double({ min, max, noNaN: true, noDefaultInfinity: true });
      }
      case 'string':
        return this.string(s);
      case 'array': {
        const minLength = s.minItems ?? 0;
        const maxLength = depth >= MAX_DEPTH ? minLength : Math.max(minLength, Math.min(s.maxItems ?? 4, 4));
        const items = s.items === undefined ? fc.string() : this.valid(s.items, depth + 1);
        const unique = s.uniqueItems === true || /at most once/i.test(s.description ?? '');
        return unique ? fc.uniqueArray(items, { minLength, maxLength, selector: (v) => JSON.stringify(v) }) : fc.array(items, { minLength, maxLength });
      }
      case 'object':
      case undefined:
        return this.object(s, depth);
      default:
        throw new Error(`schema-arbitrary: type ${type} is not covered`);
    }
  }

  private string(s: Schema): fc.Arbitrary<string> {
    if (s.format === 'date-time') return fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2099-12-31T23:59:59Z'), noInvalidDate: true }).map((d) => d.toISOString());
    if (s.format === 'uri') return fc.webUrl();
    if (s.format === 'email') return fc.emailAddress();
    if (typeof s.pattern === 'string') return fc.stringMatching(new RegExp(s.pattern));
    const minLength = s.minLength ?? 0;
    return fc.string({ minLength, maxLength: Math.max(minLength, Math.min(s.maxLength ?? LONG, LONG)) });
  }

  private object(s: Schema, depth: number): fc.Arbitrary<unknown> {
    const properties = (s.properties ?? {}) as Record<string, Schema>;
    const required = (s.required ?? []) as string[];
    const names = Object.keys(properties);
    // A free-form object (a tool's arguments): any JSON in it.
    if (names.length === 0 && s.additionalProperties === undefined) return fc.dictionary(fc.string({ maxLength: 12 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: depth >= MAX_DEPTH ? 0 : 3 });
    if (names.length === 0 && typeof s.additionalProperties === 'object') {
      const key = s.propertyNames === undefined ? fc.string({ maxLength: 12 }) : (this.valid(s.propertyNames, depth + 1) as fc.Arbitrary<string>);
      return fc.dictionary(key, this.valid(s.additionalProperties, depth + 1), { maxKeys: depth >= MAX_DEPTH ? 0 : 3 });
    }
    const optional = depth >= MAX_DEPTH ? [] : names.filter((name) => !required.includes(name));
    // "Names at least one field": an empty object is what such a body refuses.
    const fewest = /names at least one field/i.test(s.description ?? '') && required.length === 0 ? 1 : 0;
    // Few optional fields as often as many: each field's prose rules (a type's own fields) then refuse fewer of them.
    const chosen = fc.oneof(fc.subarray(optional, { minLength: Math.min(fewest, optional.length), maxLength: Math.min(1, optional.length) }), fc.subarray(optional, { minLength: Math.min(fewest, optional.length) }));
    return chosen.chain((picked) => fc.record(Object.fromEntries([...required, ...picked].map((name) => [name, this.valid(properties[name] as Schema, depth + 1)]))));
  }

  /** The places of `value` a mutation can break, each with the schema that judges it there. */
  sites(value: unknown, schema: Schema, path: (string | number)[] = []): Site[] {
    const s = this.branchOf(value, this.resolve(schema));
    const here: Site = { path, schema: s, value };
    if (Array.isArray(value)) return [here, ...value.flatMap((item, i) => this.sites(item, s.items ?? {}, [...path, i]))];
    if (value !== null && typeof value === 'object') {
      const properties = (s.properties ?? {}) as Record<string, Schema>;
      const children = Object.entries(value).flatMap(([key, item]) => {
        const child = properties[key] ?? (typeof s.additionalProperties === 'object' ? s.additionalProperties : undefined);
        return child === undefined ? [] : this.sites(item, child, [...path, key]);
      });
      return [here, ...children];
    }
    return [here];
  }

  /** The branch of a `oneOf`/`anyOf` that `value` was generated from: the first whose `type` and `const`s fit. */
  private branchOf(value: unknown, s: Schema): Schema {
    const branches = (s.oneOf ?? s.anyOf) as Schema[] | undefined;
    if (branches === undefined) return s;
    const fits = (b: Schema): boolean => {
      const r = this.resolve(b);
      if (r.oneOf !== undefined || r.anyOf !== undefined) return (r.oneOf ?? r.anyOf).some(fits);
      if (jsonType(value) !== r.type && !(r.type === 'number' && jsonType(value) === 'integer')) return false;
      if (jsonType(value) !== 'object') return true;
      return Object.entries((r.properties ?? {}) as Record<string, Schema>).every(([key, p]) => !('const' in p) || (value as Record<string, unknown>)[key] === p.const);
    };
    const found = branches.find(fits);
    return found === undefined ? s : this.branchOf(value, this.resolve(found));
  }
}

export interface Site {
  path: (string | number)[];
  schema: Schema;
  value: unknown;
}

export function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (Number.isInteger(value)) return 'integer';
  return typeof value;
}

/**
 * A value written into the JSON text as it is, not as a string: a number no double holds (`1e400`), nesting deeper
 * than `JSON.stringify` would recurse. `bodyText` puts it in.
 */
export const raw = (text: string): string => `\u0000raw:${text}\u0000`;

/** `value` as JSON text, with its `raw` values in place. */
export function bodyText(value: unknown): string {
  return JSON.stringify(value).replace(/"\\u0000raw:(.*?)\\u0000"/g, (_m, text: string) => JSON.parse(`"${text}"`));
}

/** Strings a client would do better not to send: control characters, a lone surrogate, direction overrides, a BOM. */
const AWKWARD = ['\u0000', 'a\u0007b', '\u001b[31m', '\u007f', '\u202eevil', '\ud800', '\udfff\ud800', '\ufeff', 'zero\u200bwidth', 'line\nbreak', '\r\n', '🛰️👩‍🚀', 'Ω≈ç√', '\\', '"', '%00'];
/** Keys that reach `Object.prototype` when code assigns them blindly. */
export const PROTOTYPE_KEYS = ['__proto__', 'constructor', 'prototype', 'hasOwnProperty', 'toString'];

export const MUTATIONS = [
  'null',
  'wrong-type',
  'out-of-range',
  'oversize',
  'awkward-string',
  'drop-required',
  'extra-property',
  'prototype-key',
  'deep-nesting',
  'huge-number',
] as const;
export type Mutation = (typeof MUTATIONS)[number];

/** Sets `key` as an own, enumerable property, even `__proto__` (which `JSON.stringify` then writes as a key). */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** A copy of `root` with the value at `path` replaced by what `replace` makes of the old one. */
function replaceAt(root: unknown, path: readonly (string | number)[], replace: (old: unknown) => unknown): unknown {
  if (path.length === 0) return replace(root);
  const [head, ...rest] = path as [string | number, ...(string | number)[]];
  if (Array.isArray(root)) return root.map((item, i) => (i === head ? replaceAt(item, rest, replace) : item));
  const copy: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(root as Record<string, unknown>)) setOwn(copy, key, key === head ? replaceAt(item, rest, replace) : item);
  return copy;
}

/**
 * `value` broken at `site` by `mutation`; `pick` chooses among the ways (which wrong type, which bound). `undefined`
 * when the mutation does not apply there (dropping a required field of a string).
 */
export function mutate(value: unknown, site: Site, mutation: Mutation, pick: number): unknown | undefined {
  const s = site.schema;
  const choose = <T>(options: readonly T[]): T => options[pick % options.length] as T;
  const at = (replace: (old: unknown) => unknown) => replaceAt(value, site.path, replace);
  switch (mutation) {
    case 'null':
      return site.value === null ? undefined : at(() => null);
    case 'wrong-type': {
      const types = Array.isArray(s.type) ? (s.type as string[]) : [s.type];
      const wrong = [0, 'text', true, [], {}, 1.5].filter((v) => !types.includes(jsonType(v)) && !(jsonType(v) === 'integer' && types.includes('number')));
      return wrong.length === 0 || s.type === undefined ? undefined : at(() => choose(wrong));
    }
    case 'out-of-range': {
      const options: unknown[] = [];
      if (s.minimum !== undefined) options.push(s.minimum - 1);
      if (s.maximum !== undefined) options.push(s.maximum + 1);
      if (s.type === 'integer') options.push(0.5);
      if (s.minLength !== undefined && s.minLength > 0) options.push('');
      if (s.maxLength !== undefined) options.push('x'.repeat(s.maxLength + 1));
      if (s.minItems !== undefined && s.minItems > 0) options.push([]);
      if (s.maxItems !== undefined && Array.isArray(site.value)) options.push(Array.from({ length: s.maxItems + 1 }, (_v, i) => (site.value as unknown[])[i % Math.max(1, (site.value as unknown[]).length)] ?? i));
      if (Array.isArray(s.enum) || 'const' in s) options.push('not-one-of-them');
      if (typeof s.pattern === 'string') options.push('!!');
      return options.length === 0 ? undefined : at(() => choose(options));
    }
    case 'oversize':
      return typeof site.value === 'string' ? at(() => choose(['y'.repeat(70_000), 'z'.repeat(1_100_000)])) : undefined;
    case 'awkward-string':
      return typeof site.value === 'string' ? at((old) => `${old as string}${choose(AWKWARD)}`) : undefined;
    case 'drop-required': {
      const required = ((s.required ?? []) as string[]).filter((name) => site.value !== null && typeof site.value === 'object' && Object.hasOwn(site.value, name));
      if (required.length === 0) return undefined;
      const dropped = choose(required);
      return at((old) => Object.fromEntries(Object.entries(old as Record<string, unknown>).filter(([key]) => key !== dropped)));
    }
    case 'extra-property':
    case 'prototype-key': {
      if (site.value === null || typeof site.value !== 'object' || Array.isArray(site.value)) return undefined;
      const key = mutation === 'prototype-key' ? choose(PROTOTYPE_KEYS) : choose(['unexpected', 'x'.repeat(300), '', 'id', 'created_at']);
      return at((old) => {
        const copy = { ...(old as Record<string, unknown>) };
        setOwn(copy, key, choose([{ polluted: true }, 'polluted', 1, null, { prototype: { polluted: true } }]));
        return copy;
      });
    }
    case 'deep-nesting': {
      const depth = choose([64, 5000, 20_000]);
      const [open, close] = [['[', ']'], ['{"a":', '}'], ['{"__proto__":', '}']][Math.floor(pick / 3) % 3] as [string, string];
      return at(() => raw(`${open.repeat(depth)}1${close.repeat(depth)}`));
    }
    case 'huge-number':
      return at(() => raw(choose(['1e400', '-1e400', '123456789012345678901234567890', '9007199254740993', '1e-400', '-0', '0.1e1'])));
  }
}
