// The new-experiment form's data: a kind's defaults and examples (GET /kinds) in, the request body of
// POST /experiments out. The form edits plain JSON (fields generated from the kind's JSON schema, or
// YAML / JSON text), so its output is checked here against what the generated request type needs; the
// server checks every field (a 422 names each wrong one, lib/apiErrors.ts puts it on the field).
import type { ExperimentCreate, Kind, KindExample, Spec, Sweep } from '../api/types';
import { deepMerge, isPlainObject, jsonObjectOf, type Json, type JsonObject } from './dotted';
import { schemaToFields, variantDefault, variantOf, type FormField, type JsonSchema } from './schemaForm';
import { sweepToModel, type SweepModel } from './sweep';

/** The form's starting spec for a kind: every field at its default. */
export function defaultSpec(kind: Kind): JsonObject {
  return jsonObjectOf(kind.defaults);
}

/**
 * `over` laid onto `base` (deepMerge), except that a discriminated union (topk_eval's target) whose value in
 * `over` picks another variant than `base`'s goes onto that variant's defaults: the other variant's fields
 * are not its own (the server would refuse them as extra).
 */
function layOver(fields: readonly FormField[], base: JsonObject, over: JsonObject): JsonObject {
  const out = deepMerge(base, over);
  for (const f of fields) {
    const key = f.path[f.path.length - 1]!;
    const [b, o] = [base[key], over[key]];
    if (!isPlainObject(o)) continue;
    if (f.type === 'object' && isPlainObject(b)) out[key] = layOver(f.children, b, o);
    else if (f.type === 'union') {
      const variant = variantOf(f, o);
      if (!variant) continue;
      out[key] = variant === variantOf(f, b) && isPlainObject(b) ? layOver(variant.children, b, o) : deepMerge(variantDefault(f, variant), o);
    }
  }
  return out;
}

/** What "Load example" puts in the form: the example's spec over the defaults (so every field shows), its sweep. */
export function exampleForm(kind: Kind, example: KindExample): { spec: JsonObject; sweep: SweepModel } {
  const fields = schemaToFields(jsonObjectOf(kind.spec_schema) as JsonSchema);
  return { spec: layOver(fields, defaultSpec(kind), jsonObjectOf(example.spec)), sweep: sweepToModel(example.sweep) };
}

const scalarType = (v: Json | undefined) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);

/**
 * The top-level fields whose value does not have the JSON type of the kind's default, e.g. a seed typed
 * as text in the YAML editor. Only top-level scalars are checked: they are what the generated spec type
 * requires (`kind`, `seed`); nested fields are the server's to judge.
 */
export function specShapeProblems(kind: Kind, spec: JsonObject): Record<string, string> {
  const problems: Record<string, string> = {};
  for (const [key, value] of Object.entries(defaultSpec(kind))) {
    if (value === null || typeof value === 'object' || !(key in spec)) continue;
    if (scalarType(spec[key]) !== typeof value) problems[key] = `must be a ${typeof value}`;
  }
  return problems;
}

/** `spec` has the kind's discriminant and its top-level scalars their defaults' types: the generated Spec. */
function isSpecOf(kind: Kind, spec: JsonObject): spec is JsonObject & Spec {
  return spec.kind === kind.defaults.kind && Object.keys(specShapeProblems(kind, spec)).length === 0;
}

export interface FormValues {
  name: string;
  description: string;
  project: string;
  spec: JsonObject;
  sweep: Sweep | null;
}

/**
 * The request body, or the top-level problems that keep the spec from being one. The spec is sent
 * with its kind named and every top-level scalar the form left out at its default (the server would
 * apply the same defaults).
 */
export function experimentBody(kind: Kind, form: FormValues, now = new Date()): { body: ExperimentCreate } | { problems: Record<string, string> } {
  const scalars = Object.fromEntries(Object.entries(defaultSpec(kind)).filter(([, v]) => v !== null && typeof v !== 'object'));
  const spec: JsonObject = { ...scalars, ...form.spec, kind: kind.defaults.kind };
  if (!isSpecOf(kind, spec)) return { problems: specShapeProblems(kind, spec) };
  return {
    body: {
      name: form.name.trim() || `${kind.name} ${now.toISOString().slice(0, 16).replace('T', ' ')}`,
      kind: kind.name,
      spec,
      sweep: form.sweep,
      project: form.project,
      description: form.description,
      tags: [],
    },
  };
}
