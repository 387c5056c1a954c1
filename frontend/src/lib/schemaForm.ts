// Turns a kind's JSON schema (pydantic v2's output: $defs + $ref, anyOf [X, null] for optionals,
// enum / const for Literals, exclusiveMinimum for gt) into a tree of form fields, and checks a value
// against a field the way the server will, so most mistakes show before a round trip.
import type { Json } from './dotted';

export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  enum?: Json[];
  const?: Json;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  $ref?: string;
  $defs?: Record<string, JsonSchema>;
  definitions?: Record<string, JsonSchema>;
  default?: Json;
  title?: string;
  description?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minLength?: number;
  maxLength?: number;
  [key: string]: unknown;
}

interface FieldBase {
  path: string[];
  /** the field's name as the spec writes it (`lr`, `qk_dim`): what a user types in YAML or a sweep axis */
  label: string;
  description?: string;
  nullable: boolean;
  default?: Json;
}
export interface NumberField extends FieldBase {
  type: 'number' | 'integer';
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
}
export interface StringField extends FieldBase {
  type: 'string';
  minLength?: number;
  maxLength?: number;
}
export interface EnumField extends FieldBase {
  type: 'enum';
  options: Json[];
}
export interface BooleanField extends FieldBase {
  type: 'boolean';
}
export interface ObjectField extends FieldBase {
  type: 'object';
  children: FormField[];
}
/** Arrays, maps and unions the form does not model: edited as JSON text. */
export interface JsonField extends FieldBase {
  type: 'json';
}
export type FormField = NumberField | StringField | EnumField | BooleanField | ObjectField | JsonField;

/** Top-level fields that identify the kind and are not edited. */
const HIDDEN = new Set(['kind']);

function resolveRef(schema: JsonSchema, root: JsonSchema, seen = new Set<string>()): JsonSchema {
  if (!schema.$ref) return schema;
  const ref = schema.$ref;
  if (seen.has(ref)) return {};
  seen.add(ref);
  const m = /^#\/(\$defs|definitions)\/(.+)$/.exec(ref);
  const target = m ? (root[m[1] as '$defs' | 'definitions'] ?? {})[decodeURIComponent(m[2]!)] : undefined;
  const { $ref: _ignored, ...siblings } = schema;
  return { ...resolveRef(target ?? {}, root, seen), ...siblings };
}

/** Unwraps $ref, a single-element allOf, and anyOf [X, null]; reports whether null is allowed. */
export function normalise(schema: JsonSchema, root: JsonSchema): { schema: JsonSchema; nullable: boolean } {
  let s = resolveRef(schema, root);
  if (s.allOf && s.allOf.length === 1) {
    const { allOf, ...rest } = s;
    s = { ...resolveRef(allOf[0]!, root), ...rest };
  }
  const union = s.anyOf ?? s.oneOf;
  if (union) {
    const nonNull = union.filter((u) => u.type !== 'null');
    const nullable = nonNull.length < union.length;
    if (nonNull.length === 1) {
      const { anyOf: _a, oneOf: _o, ...rest } = s;
      const inner = normalise(nonNull[0]!, root);
      return { schema: { ...inner.schema, ...rest }, nullable: nullable || inner.nullable };
    }
    return { schema: s, nullable };
  }
  if (Array.isArray(s.type)) {
    const types = s.type.filter((t) => t !== 'null');
    return { schema: { ...s, type: types.length === 1 ? types[0] : types }, nullable: types.length < s.type.length };
  }
  return { schema: s, nullable: false };
}

export function schemaToFields(root: JsonSchema): FormField[] {
  const top = normalise(root, root).schema;
  return Object.entries(top.properties ?? {})
    .filter(([name, s]) => !HIDDEN.has(name) && s.const === undefined)
    .map(([name, s]) => toField(s, root, [name]));
}

function toField(raw: JsonSchema, root: JsonSchema, path: string[]): FormField {
  const { schema: s, nullable } = normalise(raw, root);
  const base: FieldBase = {
    path,
    label: path[path.length - 1]!,
    nullable,
    ...(s.description ? { description: s.description } : {}),
    ...(s.default !== undefined ? { default: s.default } : {}),
  };
  if (s.enum) return { ...base, type: 'enum', options: s.enum };
  if (s.const !== undefined) return { ...base, type: 'enum', options: [s.const] };
  if (s.type === 'object' && s.properties)
    return { ...base, type: 'object', children: Object.entries(s.properties).map(([n, c]) => toField(c, root, [...path, n])) };
  if (s.type === 'number' || s.type === 'integer') {
    const f: NumberField = { ...base, type: s.type };
    for (const k of ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'] as const) if (typeof s[k] === 'number') f[k] = s[k];
    return f;
  }
  if (s.type === 'boolean') return { ...base, type: 'boolean' };
  if (s.type === 'string') {
    const f: StringField = { ...base, type: 'string' };
    if (typeof s.minLength === 'number') f.minLength = s.minLength;
    if (typeof s.maxLength === 'number') f.maxLength = s.maxLength;
    return f;
  }
  return { ...base, type: 'json' };
}

/** The value a field starts from: its schema default, or its children's defaults for an object. */
export function fieldDefault(field: FormField): Json {
  if (field.default !== undefined) return field.default;
  if (field.type === 'object') {
    const out: { [k: string]: Json } = {};
    for (const c of field.children) out[c.path[c.path.length - 1]!] = fieldDefault(c);
    return out;
  }
  if (field.nullable) return null;
  if (field.type === 'boolean') return false;
  if (field.type === 'enum') return field.options[0] ?? null;
  if (field.type === 'string') return '';
  return null;
}

/** The message the server would give for this value, or null when it is acceptable. */
export function validateField(field: FormField, value: unknown): string | null {
  if (value === null || value === undefined) return field.nullable ? null : 'a value is required';
  switch (field.type) {
    case 'number':
    case 'integer': {
      if (typeof value !== 'number' || Number.isNaN(value)) return 'must be a number';
      if (field.type === 'integer' && !Number.isInteger(value)) return 'must be a whole number';
      if (field.minimum !== undefined && value < field.minimum) return `must be ≥ ${field.minimum}`;
      if (field.maximum !== undefined && value > field.maximum) return `must be ≤ ${field.maximum}`;
      if (field.exclusiveMinimum !== undefined && value <= field.exclusiveMinimum) return `must be > ${field.exclusiveMinimum}`;
      if (field.exclusiveMaximum !== undefined && value >= field.exclusiveMaximum) return `must be < ${field.exclusiveMaximum}`;
      return null;
    }
    case 'enum':
      return field.options.some((o) => o === value) ? null : `must be one of ${field.options.map((o) => JSON.stringify(o)).join(', ')}`;
    case 'boolean':
      return typeof value === 'boolean' ? null : 'must be true or false';
    case 'string':
      if (typeof value !== 'string') return 'must be text';
      if (field.minLength !== undefined && value.length < field.minLength) return `at least ${field.minLength} characters`;
      if (field.maxLength !== undefined && value.length > field.maxLength) return `at most ${field.maxLength} characters`;
      return null;
    default:
      return null;
  }
}

/** Every field error of a spec, keyed by dotted path (nested objects walked when present). */
export function validateSpec(fields: readonly FormField[], spec: unknown): Record<string, string> {
  const errors: Record<string, string> = {};
  const walk = (fs: readonly FormField[], obj: unknown) => {
    for (const f of fs) {
      const key = f.path[f.path.length - 1]!;
      const value = typeof obj === 'object' && obj !== null ? (obj as Record<string, unknown>)[key] : undefined;
      if (value === undefined) continue; // absent: the server applies the default
      if (f.type === 'object') {
        if (value === null) {
          if (!f.nullable) errors[f.path.join('.')] = 'a value is required';
        } else walk(f.children, value);
        continue;
      }
      const msg = validateField(f, value);
      if (msg) errors[f.path.join('.')] = msg;
    }
  };
  walk(fields, spec);
  return errors;
}

/** A short hint of a number field's range for its label ("0 < x ≤ 10"). */
export function rangeHint(field: NumberField): string | null {
  const lo = field.exclusiveMinimum !== undefined ? `${field.exclusiveMinimum} <` : field.minimum !== undefined ? `${field.minimum} ≤` : '';
  const hi = field.exclusiveMaximum !== undefined ? `< ${field.exclusiveMaximum}` : field.maximum !== undefined ? `≤ ${field.maximum}` : '';
  if (!lo && !hi) return null;
  return [lo, 'x', hi].filter(Boolean).join(' ');
}
