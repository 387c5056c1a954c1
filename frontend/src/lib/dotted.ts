// Dotted spec paths ("train.lr") are how sweeps and run params name spec fields (docs/api.md).
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

/** JSON with object keys sorted: equal values written in different key orders give the same text (a spec's
 *  seed-group key, whether a claim's definition changed). Any value a typed API object holds is taken as
 *  JSON.stringify takes it: an object's undefined fields are left out, an undefined in an array is null. */
export function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const fields = Object.entries(value).filter(([, v]) => v !== undefined);
    fields.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${fields.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export function isPlainObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** True for a value JSON can carry (no undefined, functions, class instances or non-finite numbers). */
export function isJson(value: unknown): value is Json {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value);
  if (Array.isArray(value)) return value.every(isJson);
  if (typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) return Object.values(value).every(isJson);
  return false;
}

/** `value` as a JSON object when it is one (an API field typed as a schema or `Record<string, unknown>`), else {}. */
export function jsonObjectOf(value: unknown): JsonObject {
  return isPlainObject(value) && isJson(value) ? value : {};
}

/** `over` laid onto `base`: nested objects merge, anything else in `over` replaces. */
export function deepMerge(base: JsonObject, over: JsonObject): JsonObject {
  const out: JsonObject = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const under = out[key];
    out[key] = isPlainObject(under) && isPlainObject(value) ? deepMerge(under, value) : value;
  }
  return out;
}

export function getPath(obj: unknown, path: readonly string[]): unknown {
  let cur: unknown = obj;
  for (const part of path) {
    if (!isPlainObject(cur)) return undefined;
    cur = cur[part];
  }
  return cur;
}

/** Returns a copy of `obj` with `value` at `path` (objects on the way are created). */
export function setPath(obj: JsonObject, path: readonly string[], value: Json | undefined): JsonObject {
  if (path.length === 0) return isPlainObject(value) ? value : obj;
  const [head, ...rest] = path as [string, ...string[]];
  const copy: JsonObject = { ...obj };
  if (rest.length === 0) {
    if (value === undefined) delete copy[head];
    else copy[head] = value;
    return copy;
  }
  const child = isPlainObject(copy[head]) ? (copy[head] as JsonObject) : {};
  copy[head] = setPath(child, rest, value);
  return copy;
}

/** Flattens nested objects to dotted keys; arrays and scalars are leaves. */
export function flatten(obj: unknown, prefix = ''): Record<string, Json> {
  const out: Record<string, Json> = {};
  if (!isPlainObject(obj)) return out;
  for (const [key, value] of Object.entries(obj)) {
    const dotted = prefix ? `${prefix}.${key}` : key;
    if (isPlainObject(value) && Object.keys(value).length > 0) Object.assign(out, flatten(value, dotted));
    else out[dotted] = value;
  }
  return out;
}

export function formatValue(value: unknown): string {
  if (value === undefined) return '';
  if (value === null) return 'null';
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return String(value);
    if (Number.isInteger(value)) return String(value);
    const abs = Math.abs(value);
    return abs !== 0 && (abs < 1e-3 || abs >= 1e5) ? value.toExponential(3) : String(Number(value.toPrecision(5)));
  }
  if (typeof value === 'string') return value;
  return JSON.stringify(value);
}
