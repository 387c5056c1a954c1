// Pure helpers of the run page's Examples tab: the columns of a page of rows, a cell's text (folded past
// FOLD_AT characters, pretty-printed when unfolded), and which fields of two runs' rows for one example differ.

/** The data fields of ``rows`` in the order they first appear (the table's columns after idx and key). */
export function exampleColumns(rows: { data: Record<string, unknown> }[], max = 12): string[] {
  const seen: string[] = [];
  for (const row of rows) {
    for (const field of Object.keys(row.data)) {
      if (!seen.includes(field)) seen.push(field);
      if (seen.length >= max) return seen;
    }
  }
  return seen;
}

/** A cell's text: strings as they are, numbers and booleans printed, anything else as compact JSON. */
export function cellText(value: unknown, limit = 200): string {
  let text: string;
  if (value === null || value === undefined) text = '';
  else if (typeof value === 'string') text = value;
  else if (typeof value === 'number' || typeof value === 'boolean') text = String(value);
  else text = JSON.stringify(value);
  return text.length > limit ? `${text.slice(0, limit - 1)}…` : text;
}

/** Past this many characters a value is folded: its start, and a toggle to the whole of it. */
export const FOLD_AT = 200;

/** A value as a folded cell shows it: its text (``cellText``) up to ``at`` characters, and whether it was cut. */
export function foldText(value: unknown, at = FOLD_AT): { text: string; folded: boolean } {
  const full = cellText(value, Infinity);
  return full.length > at ? { text: `${full.slice(0, at)}…`, folded: true } : { text: full, folded: false };
}

/** A value unfolded: JSON (objects, arrays) indented by two spaces, anything else as ``cellText``. */
export function prettyText(value: unknown): string {
  return value !== null && typeof value === 'object' ? JSON.stringify(value, null, 2) : cellText(value, Infinity);
}

export interface FieldMark {
  field: string;
  /** its values differ under the diff's tolerance (every field of an item one run lacks) */
  differs: boolean;
  /** it differs and is one of the fields that define a change (any field when the rule names none) */
  counts: boolean;
}

/** The fields of either row, those that differ first (each in first-seen order). ``differing``: the server's
 * fields that differ under the tolerance (ExampleDiff.differing); ``compared``: the rule's fields. */
export function diffFields(
  a: Record<string, unknown> | null | undefined,
  b: Record<string, unknown> | null | undefined,
  differing: readonly string[],
  compared: readonly string[] = [],
): FieldMark[] {
  const fields: string[] = [];
  for (const field of [...Object.keys(a ?? {}), ...Object.keys(b ?? {})]) if (!fields.includes(field)) fields.push(field);
  const out = fields.map((field) => {
    const differs = !a || !b || differing.includes(field);
    return { field, differs, counts: differs && (!a || !b || compared.length === 0 || compared.includes(field)) };
  });
  return [...out.filter((f) => f.differs), ...out.filter((f) => !f.differs)];
}

/** A run id typed by the user: a positive integer, or null. */
export function parseRunId(text: string): number | null {
  const t = text.trim().replace(/^run\s*/i, '');
  if (!/^[0-9]{1,10}$/.test(t)) return null;
  const n = Number(t);
  return n >= 1 && n < 2 ** 31 ? n : null;
}
