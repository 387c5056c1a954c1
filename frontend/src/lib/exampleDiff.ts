// The rule of a per-example diff (the API's `fields`, `tolerance` and `abs_tolerance`, decided by
// backend/examples/compare.py): the data fields that define a change (none chosen: every field) and the
// tolerance numbers are compared with, also inside JSON arrays and objects (a and b are the same when
// |a - b| <= max(rel * max(|a|, |b|), abs)). A rule is kept per table: in the run page's URL while it
// shows the table, and in localStorage under the table's name, so a reload, a shared link or the next
// run's page with the same table compares the way the user last chose.
//
// The run page's params for its Examples tab, each left out at its default:
//   tab     the run page's tab                    tab=examples
//   table   the table shown (default: the first)  table=predictions
//   mode    `diff`: the diff with another run     mode=diff
//   other   the run it is compared with           other=12
//   fields  the fields that define a change       fields=prediction,correct
//   rtol    relative tolerance (default 1e-6)     rtol=0.01
//   atol    absolute tolerance (default 0)        atol=0.001
// The URL's rule, when it has any of fields, rtol and atol, wins over the stored one.

/** The API's default relative tolerance (backend/examples/compare.py, DEFAULT_TOLERANCE). */
export const DEFAULT_RTOL = 1e-6;
/** A field a rule can name: the API's pattern (no comma, quote or control character; 1-64 characters). */
export const DIFF_FIELD = /^[^",\x00-\x1f\x7f]{1,64}$/;
export const MAX_DIFF_FIELDS = 32;
export const RULE_PARAMS = ['fields', 'rtol', 'atol'] as const;

export interface DiffRule {
  fields: string[];
  rel: number;
  abs: number;
}

export const DEFAULT_RULE: DiffRule = { fields: [], rel: DEFAULT_RTOL, abs: 0 };

/** A tolerance typed or read from a URL: a plain or exponent number from 0 to ``max``, or null. */
export function parseTolerance(text: string, max = Number.MAX_VALUE): number | null {
  const t = text.trim();
  if (!/^\+?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(t)) return null;
  const n = Number(t);
  return Number.isFinite(n) && n >= 0 && n <= max ? n : null;
}

/** The fields a rule can hold: names the API takes, each once, at most ``MAX_DIFF_FIELDS``. */
export function cleanFields(fields: unknown): string[] {
  if (!Array.isArray(fields)) return [];
  const out: string[] = [];
  for (const f of fields) {
    if (typeof f === 'string' && DIFF_FIELD.test(f) && f.trim() === f && !out.includes(f)) out.push(f);
  }
  return out.slice(0, MAX_DIFF_FIELDS);
}

export function sameRule(a: DiffRule, b: DiffRule): boolean {
  return a.rel === b.rel && a.abs === b.abs && a.fields.length === b.fields.length && a.fields.every((f, i) => f === b.fields[i]);
}

/** The rule the URL holds, if it holds any of its params (those left out at their defaults); else null. */
export function decodeRule(params: URLSearchParams): DiffRule | null {
  if (!RULE_PARAMS.some((p) => params.has(p))) return null;
  const fields = params.get('fields');
  return {
    fields: cleanFields(fields ? fields.split(',') : []),
    rel: parseTolerance(params.get('rtol') ?? '', 1) ?? DEFAULT_RTOL,
    abs: parseTolerance(params.get('atol') ?? '') ?? 0,
  };
}

/** ``params`` with ``rule`` written into them (its params dropped where it holds the default). */
export function writeRule(params: URLSearchParams, rule: DiffRule): URLSearchParams {
  const next = new URLSearchParams(params);
  for (const p of RULE_PARAMS) next.delete(p);
  if (rule.fields.length) next.set('fields', rule.fields.join(','));
  if (rule.rel !== DEFAULT_RTOL) next.set('rtol', String(rule.rel));
  if (rule.abs !== 0) next.set('atol', String(rule.abs));
  return next;
}

export function storageKey(table: string): string {
  return `reasonlab.exampleDiff.${table}`;
}

/** The rule last chosen for ``table`` (null: none stored, or what is stored is not a rule). */
export function loadRule(table: string, storage: Storage | undefined = globalThis.localStorage): DiffRule | null {
  let raw: string | null = null;
  try {
    raw = storage?.getItem(storageKey(table)) ?? null;
  } catch {
    return null; // storage refused (a private window's quota, a sandbox)
  }
  if (!raw) return null;
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return null;
  }
  if (!value || typeof value !== 'object') return null;
  const { fields, rel, abs } = value as Record<string, unknown>;
  return {
    fields: cleanFields(fields),
    rel: typeof rel === 'number' && rel >= 0 && rel <= 1 ? rel : DEFAULT_RTOL,
    abs: typeof abs === 'number' && Number.isFinite(abs) && abs >= 0 ? abs : 0,
  };
}

/** Remember ``rule`` for ``table`` (the default is forgotten rather than stored). */
export function saveRule(table: string, rule: DiffRule, storage: Storage | undefined = globalThis.localStorage): void {
  try {
    if (sameRule(rule, DEFAULT_RULE)) storage?.removeItem(storageKey(table));
    else storage?.setItem(storageKey(table), JSON.stringify(rule));
  } catch {
    // storage refused: the URL still holds the rule
  }
}

/** The rule in force for ``table``: the URL's, else the one stored for the table, else the default. */
export function currentRule(params: URLSearchParams, table: string | null, storage?: Storage): DiffRule {
  return decodeRule(params) ?? (table !== null ? loadRule(table, storage ?? globalThis.localStorage) : null) ?? DEFAULT_RULE;
}

/** The diff request's query params for ``rule`` (`fields` left out when every field counts). */
export function ruleQuery(rule: DiffRule): { fields?: string; tolerance: number; abs_tolerance: number } {
  return { ...(rule.fields.length ? { fields: rule.fields.join(',') } : {}), tolerance: rule.rel, abs_tolerance: rule.abs };
}

/** What the rule says, in words: "prediction, correct; numbers within 1e-6 relative". */
export function ruleSummary(rule: DiffRule): string {
  const fields = rule.fields.length ? rule.fields.join(', ') : 'every field';
  const within = [rule.rel ? `${rule.rel} relative` : '', rule.abs ? `${rule.abs} absolute` : ''].filter(Boolean);
  return `${fields}; numbers ${within.length ? `within ${within.join(' or ')}` : 'exactly'}`;
}
