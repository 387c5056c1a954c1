// Turns a kind's JSON schema (pydantic v2's output: $defs + $ref, anyOf [X, null] for optionals,
// enum / const for Literals, exclusiveMinimum for gt, oneOf + discriminator for a discriminated union) into
// a tree of form fields, and checks a value against a field the way the server will, so most mistakes show
// before a round trip.
import { isPlainObject, type Json, type JsonObject } from './dotted';

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
/** One member of a discriminated union: the discriminator's value that selects it, and its other fields. */
export interface UnionVariant {
  tag: Json;
  title?: string;
  description?: string;
  /** the variant's fields, the discriminator excluded; paths under the union field's path */
  children: FormField[];
}
/**
 * A union of objects told apart by one property (pydantic's `Field(discriminator=...)`: `oneOf` +
 * `discriminator.propertyName`, each variant's property a `const`): a choice of variant, then its fields.
 */
export interface UnionField extends FieldBase {
  type: 'union';
  /** the property whose value picks the variant (`type`) */
  discriminator: string;
  variants: UnionVariant[];
}
/** Arrays, maps and unions the form does not model: edited as JSON text. */
export interface JsonField extends FieldBase {
  type: 'json';
}
export type FormField = NumberField | StringField | EnumField | BooleanField | ObjectField | UnionField | JsonField;

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
  const union = s.oneOf ?? s.anyOf;
  if (union) return toUnion(union, s.discriminator, root, base) ?? { ...base, type: 'json' };
  return { ...base, type: 'json' };
}

/** A Literal's one value: `const`, or an `enum` of one. */
function constOf(schema: JsonSchema | undefined, root: JsonSchema): Json | undefined {
  if (!schema) return undefined;
  const s = normalise(schema, root).schema;
  if (s.const !== undefined) return s.const;
  if (s.enum && s.enum.length === 1) return s.enum[0];
  return undefined;
}

/**
 * The union as a choice of variants when every member is an object and one property tells them apart:
 * the discriminator's propertyName (each member's value from its `const` / one-value `enum`, else from
 * the discriminator's mapping of values to $refs), or, without a discriminator, a property every member
 * fixes to a distinct const. Null when the union is not of that shape (it is then edited as JSON).
 */
function toUnion(members: JsonSchema[], discriminator: unknown, root: JsonSchema, base: FieldBase): UnionField | null {
  const objects = members.filter((m) => m.type !== 'null').map((m) => ({ ref: m.$ref, schema: normalise(m, root).schema }));
  if (objects.length < 2 || !objects.every((o) => o.schema.type === 'object' && o.schema.properties)) return null;
  const disc = isPlainObject(discriminator as Json) ? (discriminator as { propertyName?: unknown; mapping?: unknown }) : {};
  const mapping = isPlainObject(disc.mapping as Json) ? (disc.mapping as Record<string, unknown>) : {};
  const name =
    typeof disc.propertyName === 'string'
      ? disc.propertyName
      : Object.keys(objects[0]!.schema.properties!).find((k) => objects.every((o) => constOf(o.schema.properties![k], root) !== undefined));
  if (name === undefined) return null;
  const variants: UnionVariant[] = [];
  for (const { ref, schema } of objects) {
    const tag = constOf(schema.properties![name], root) ?? Object.entries(mapping).find(([, r]) => r === ref)?.[0];
    if (tag === undefined) return null;
    variants.push({
      tag,
      ...(schema.title ? { title: schema.title } : {}),
      ...(schema.description ? { description: schema.description } : {}),
      children: Object.entries(schema.properties!)
        .filter(([n]) => n !== name)
        .map(([n, c]) => toField(c, root, [...base.path, n])),
    });
  }
  const tags = variants.map((v) => JSON.stringify(v.tag));
  if (new Set(tags).size !== tags.length) return null;
  return { ...base, type: 'union', discriminator: name, variants };
}

/** The variant a union's value selects by its discriminator, if any. */
export function variantOf(field: UnionField, value: unknown): UnionVariant | undefined {
  if (!isPlainObject(value as Json)) return undefined;
  const tag = (value as JsonObject)[field.discriminator];
  return field.variants.find((v) => v.tag === tag);
}

/**
 * A variant's starting value: the discriminator set, and the fields with a default in the schema (a field
 * without one is left out, so the server applies its own, e.g. a default_factory).
 */
export function variantDefault(field: UnionField, variant: UnionVariant): JsonObject {
  const out: JsonObject = { [field.discriminator]: variant.tag };
  for (const c of variant.children) if (c.default !== undefined) out[c.path[c.path.length - 1]!] = c.default;
  return out;
}

/** Whether a value of field `from` fits field `to` as it is (same kind of field, and valid there). */
function typesAgree(from: FormField, to: FormField, value: Json): boolean {
  const numeric = (f: FormField) => f.type === 'number' || f.type === 'integer';
  if (from.type !== to.type && !(numeric(from) && numeric(to))) return false;
  if (value === null) return to.nullable;
  if (to.type === 'object') {
    if (!isPlainObject(value)) return false;
    const names = new Set(to.children.map((c) => c.path[c.path.length - 1]!));
    return Object.keys(value).every((k) => names.has(k)) && Object.keys(validateSpec(to.children, value)).length === 0;
  }
  if (to.type === 'union') return variantOf(to, value) !== undefined && validateField(to, value) === null;
  return validateField(to, value) === null;
}

/**
 * The union's value after choosing variant `tag`: the discriminator set, the new variant's defaults, and the
 * old value's fields that the new variant has too, under the same name and of a type that agrees (the
 * others dropped).
 */
export function switchVariant(field: UnionField, value: unknown, tag: Json): JsonObject {
  const to = field.variants.find((v) => v.tag === tag);
  if (!to) throw new Error(`${field.label}: no variant ${JSON.stringify(tag)}`);
  const out = variantDefault(field, to);
  const from = variantOf(field, value);
  if (!from) return out;
  const old = value as JsonObject;
  for (const c of to.children) {
    const key = c.path[c.path.length - 1]!;
    const was = from.children.find((f) => f.path[f.path.length - 1] === key);
    const v = old[key];
    if (was && v !== undefined && typesAgree(was, c, v)) out[key] = v;
  }
  return out;
}

/**
 * The value a field starts from: its schema default, or its children's defaults for an object, or the first
 * variant's defaults for a union.
 */
export function fieldDefault(field: FormField): Json {
  if (field.default !== undefined) return field.default;
  if (field.type === 'union' && !field.nullable && field.variants[0]) return variantDefault(field, field.variants[0]);
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
    case 'union': {
      if (!isPlainObject(value as Json)) return 'must be an object';
      const tag = (value as JsonObject)[field.discriminator];
      if (tag === undefined) return `${field.discriminator} is required`;
      if (variantOf(field, value)) return null;
      return `${field.discriminator} must be one of ${field.variants.map((v) => JSON.stringify(v.tag)).join(', ')}`;
    }
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
      if (f.type === 'union') {
        // the variant its discriminator picks is checked field by field; a missing or unknown one is named
        const variant = variantOf(f, value);
        if (variant) walk(variant.children, value);
        else {
          const msg = validateField(f, value);
          if (msg) errors[isPlainObject(value as Json) ? [...f.path, f.discriminator].join('.') : f.path.join('.')] = msg;
        }
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
