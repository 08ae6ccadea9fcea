import type { ComponentChildren } from 'preact';

/**
 * A form generated from a tool's `inputSchema` (JSON Schema): strings, numbers and integers, booleans, enums, arrays
 * and nested objects get their controls; anything a form cannot show faithfully (`oneOf`, `anyOf`, `$ref`, a keyword
 * not listed in FORM_KEYWORDS, a type union) is edited as raw JSON. The draft is a tree of what was typed; `collect`
 * turns it into the arguments, checking what is required before anything is sent.
 */
export type Schema = Record<string, unknown>;

export type Draft = string | boolean | undefined | Draft[] | { [name: string]: Draft };

type Kind = 'string' | 'number' | 'integer' | 'boolean' | 'enum' | 'array' | 'object' | 'raw';

/** Keywords that describe or bound a value without changing its shape: a form shows the value all the same. */
const FORM_KEYWORDS = new Set([
  ...['type', 'title', 'description', 'default', 'examples', 'enum', 'properties', 'required', 'items', 'additionalProperties'],
  ...['$schema', '$id', '$comment', 'format', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'],
  ...['minLength', 'maxLength', 'pattern', 'minItems', 'maxItems', 'uniqueItems', 'readOnly', 'writeOnly', 'deprecated', 'contentMediaType'],
]);

const isSchema = (value: unknown): value is Schema => typeof value === 'object' && value !== null && !Array.isArray(value);

/** One non-null type (`["string", "null"]` is an optional string), or none. */
function typeOf(schema: Schema): string | undefined {
  const { type } = schema;
  if (typeof type === 'string') return type;
  if (Array.isArray(type)) {
    const real = type.filter((t) => t !== 'null');
    return real.length === 1 && typeof real[0] === 'string' ? real[0] : undefined;
  }
  return undefined;
}

export function kindOf(schema: Schema): Kind {
  if (Object.keys(schema).some((keyword) => !FORM_KEYWORDS.has(keyword))) return 'raw';
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return 'enum';
  const type = typeOf(schema) ?? (isSchema(schema.properties) ? 'object' : undefined);
  switch (type) {
    case 'string':
    case 'number':
    case 'integer':
    case 'boolean':
      return type;
    case 'array':
      return isSchema(schema.items) ? 'array' : 'raw';
    case 'object':
      // An object of free keys (`additionalProperties` a schema, or no properties) has no fields to show.
      return isSchema(schema.properties) && Object.keys(schema.properties).length > 0 && !isSchema(schema.additionalProperties) ? 'object' : 'raw';
    default:
      return 'raw';
  }
}

const propertiesOf = (schema: Schema): [string, Schema][] => Object.entries(isSchema(schema.properties) ? schema.properties : {}).map(([name, sub]) => [name, isSchema(sub) ? sub : {}]);
const requiredOf = (schema: Schema): string[] => (Array.isArray(schema.required) ? schema.required.filter((name): name is string => typeof name === 'string') : []);

/** The draft a schema starts from: its `default` where it has one. */
export function initialDraft(schema: Schema): Draft {
  const given = schema.default;
  switch (kindOf(schema)) {
    case 'string':
      return typeof given === 'string' ? given : '';
    case 'number':
    case 'integer':
      return typeof given === 'number' ? String(given) : '';
    case 'boolean':
      return typeof given === 'boolean' ? given : undefined;
    case 'enum': {
      const at = (schema.enum as unknown[]).findIndex((value) => JSON.stringify(value) === JSON.stringify(given));
      return at === -1 ? '' : String(at);
    }
    case 'array':
      return Array.isArray(given) ? given.map(() => initialDraft(schema.items as Schema)) : [];
    case 'object':
      return Object.fromEntries(propertiesOf(schema).map(([name, sub]) => [name, initialDraft(sub)]));
    default:
      return given === undefined ? '' : JSON.stringify(given, null, 2);
  }
}

/** Where a field is, as its control's id: `arg-filters-tags-0`. */
export const fieldId = (path: (string | number)[]) => `arg-${path.map((part) => String(part).replace(/[^A-Za-z0-9_-]/g, '_')).join('-')}`;

/**
 * The value of `draft` under `schema`, or `undefined` when nothing was given; each problem is written to `issues`
 * under its field's id. `required`: the caller needs a value here.
 */
export function collect(schema: Schema, draft: Draft, path: (string | number)[], required: boolean, issues: Record<string, string>): unknown {
  const id = fieldId(path);
  const missing = () => {
    if (required) issues[id] = 'is required';
    return undefined;
  };
  switch (kindOf(schema)) {
    case 'string':
      return typeof draft === 'string' && draft !== '' ? draft : missing();
    case 'number':
    case 'integer': {
      if (typeof draft !== 'string' || draft.trim() === '') return missing();
      const value = Number(draft);
      if (!Number.isFinite(value)) issues[id] = 'must be a number';
      else if (kindOf(schema) === 'integer' && !Number.isInteger(value)) issues[id] = 'must be a whole number';
      return value;
    }
    case 'boolean':
      return typeof draft === 'boolean' ? draft : required ? false : undefined;
    case 'enum':
      return typeof draft === 'string' && draft !== '' ? (schema.enum as unknown[])[Number(draft)] : missing();
    case 'array': {
      const items = Array.isArray(draft) ? draft : [];
      if (items.length === 0 && !required) return undefined;
      return items.map((item, i) => collect(schema.items as Schema, item, [...path, i], true, issues));
    }
    case 'object': {
      const fields = isSchema(draft) && !Array.isArray(draft) ? (draft as Record<string, Draft>) : {};
      const needed = requiredOf(schema);
      const value: Record<string, unknown> = {};
      // An optional object left wholly empty is left out, without asking for what it would require.
      const inner: Record<string, string> = {};
      for (const [name, sub] of propertiesOf(schema)) {
        const got = collect(sub, fields[name], [...path, name], needed.includes(name), inner);
        if (got !== undefined) value[name] = got;
      }
      if (Object.keys(value).length === 0 && !required) return undefined;
      Object.assign(issues, inner);
      return value;
    }
    default: {
      if (typeof draft !== 'string' || draft.trim() === '') return missing();
      try {
        return JSON.parse(draft);
      } catch {
        issues[id] = 'must be JSON (e.g. "text", 3, {"a": 1} or [1, 2])';
        return undefined;
      }
    }
  }
}

interface FieldProps {
  schema: Schema;
  name: string;
  path: (string | number)[];
  draft: Draft;
  required: boolean;
  issues: Record<string, string>;
  onChange: (draft: Draft) => void;
}

/** The field's own line: its description, or its issue (announced, tied to the control by aria-describedby). */
function Help({ id, schema, issue }: { id: string; schema: Schema; issue: string | undefined }) {
  if (issue) {
    return (
      <small id={`${id}-error`} class="field-error" role="alert">
        {issue}
      </small>
    );
  }
  return typeof schema.description === 'string' ? <small id={`${id}-hint`}>{schema.description}</small> : null;
}

const describedBy = (id: string, schema: Schema, issue: string | undefined) => (issue ? `${id}-error` : typeof schema.description === 'string' ? `${id}-hint` : undefined);

function Label({ id, name, schema, required, kind }: { id: string; name: string; schema: Schema; required: boolean; kind: string }) {
  const title = typeof schema.title === 'string' && schema.title !== name ? ` (${schema.title})` : '';
  return (
    <label for={id}>
      {name}
      {title}
      {required ? ' *' : ''} <span class="muted">{kind}</span>
    </label>
  );
}

export function SchemaField(props: FieldProps): ComponentChildren {
  const { schema, name, path, draft, required, issues, onChange } = props;
  const id = fieldId(path);
  const issue = issues[id];
  const kind = kindOf(schema);
  const common = { id, 'aria-describedby': describedBy(id, schema, issue), 'aria-invalid': issue ? ('true' as const) : undefined, 'aria-required': required ? ('true' as const) : undefined };
  if (kind === 'object') {
    const fields = (isSchema(draft) ? draft : {}) as Record<string, Draft>;
    const needed = requiredOf(schema);
    return (
      <fieldset class="nested">
        <legend>
          {name}
          {required ? ' *' : ''} <span class="muted">object</span>
        </legend>
        {typeof schema.description === 'string' && <small class="muted">{schema.description}</small>}
        {propertiesOf(schema).map(([child, sub]) => (
          <SchemaField key={child} schema={sub} name={child} path={[...path, child]} draft={fields[child]} required={needed.includes(child)} issues={issues} onChange={(value) => onChange({ ...fields, [child]: value })} />
        ))}
      </fieldset>
    );
  }
  if (kind === 'array') {
    const items = Array.isArray(draft) ? draft : [];
    const itemSchema = schema.items as Schema;
    return (
      <fieldset class="nested" aria-describedby={describedBy(id, schema, issue)}>
        <legend>
          {name}
          {required ? ' *' : ''} <span class="muted">list</span>
        </legend>
        {items.map((item, i) => (
          <div class="item" key={i}>
            <SchemaField schema={itemSchema} name={`${name}[${i}]`} path={[...path, i]} draft={item} required issues={issues} onChange={(value) => onChange(items.map((old, j) => (j === i ? value : old)))} />
            <button type="button" onClick={() => onChange(items.filter((_, j) => j !== i))} aria-label={`Remove ${name}[${i}]`}>
              Remove
            </button>
          </div>
        ))}
        <button type="button" id={id} onClick={() => onChange([...items, initialDraft(itemSchema)])} aria-label={`Add item to ${name}`}>
          Add item
        </button>
        <Help id={id} schema={schema} issue={issue} />
      </fieldset>
    );
  }
  let control: ComponentChildren;
  switch (kind) {
    case 'boolean':
      return (
        <div class="field">
          <label class="check" for={id}>
            <input type="checkbox" {...common} checked={draft === true} onChange={(e) => onChange(e.currentTarget.checked)} />
            {name}
            {required ? ' *' : ''} <span class="muted">boolean</span>
          </label>
          <Help id={id} schema={schema} issue={issue} />
        </div>
      );
    case 'enum':
      control = (
        <select {...common} value={typeof draft === 'string' ? draft : ''} onChange={(e) => onChange(e.currentTarget.value)}>
          <option value="">{required ? 'choose…' : '(not set)'}</option>
          {(schema.enum as unknown[]).map((value, i) => (
            <option value={String(i)}>{typeof value === 'string' ? value : JSON.stringify(value)}</option>
          ))}
        </select>
      );
      break;
    case 'number':
    case 'integer':
      control = <input {...common} type="number" step={kind === 'integer' ? 1 : 'any'} value={typeof draft === 'string' ? draft : ''} onInput={(e) => onChange(e.currentTarget.value)} />;
      break;
    case 'string':
      control = <input {...common} type="text" value={typeof draft === 'string' ? draft : ''} onInput={(e) => onChange(e.currentTarget.value)} />;
      break;
    default:
      control = <textarea {...common} class="json" rows={4} spellcheck={false} value={typeof draft === 'string' ? draft : ''} onInput={(e) => onChange(e.currentTarget.value)} />;
  }
  return (
    <div class="field">
      <Label id={id} name={name} schema={schema} required={required} kind={kind === 'raw' ? 'JSON' : kind} />
      {control}
      {kind === 'raw' && !issue && (
        <details class="schema">
          <summary>Its schema</summary>
          <pre>{JSON.stringify(schema, null, 2)}</pre>
        </details>
      )}
      <Help id={id} schema={schema} issue={issue} />
    </div>
  );
}
