// Pure helpers of the run page's Examples tab: the columns of a page of rows, a cell's text, and which
// fields of two runs' rows for one example differ.

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

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** The fields of either row, those whose values differ first (each in first-seen order). */
export function diffFields(
  a: Record<string, unknown> | null | undefined,
  b: Record<string, unknown> | null | undefined,
): { field: string; changed: boolean }[] {
  const fields: string[] = [];
  for (const field of [...Object.keys(a ?? {}), ...Object.keys(b ?? {})]) if (!fields.includes(field)) fields.push(field);
  const out = fields.map((field) => ({ field, changed: !a || !b || !same(a[field], b[field]) }));
  return [...out.filter((f) => f.changed), ...out.filter((f) => !f.changed)];
}

/** A run id typed by the user: a positive integer, or null. */
export function parseRunId(text: string): number | null {
  const t = text.trim().replace(/^run\s*/i, '');
  if (!/^[0-9]{1,10}$/.test(t)) return null;
  const n = Number(t);
  return n >= 1 && n < 2 ** 31 ? n : null;
}
