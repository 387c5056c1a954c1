// A table as columns, written as CSV in the browser (a chart's "Download data", lib/chartTable.ts), and
// the download of a file the page holds. The same rules as the API's export (backend/exports/tables.py):
// RFC 4180 with \r\n line ends; a missing value or a non-finite number is an empty cell; a text cell that
// starts with = + - @ tab or CR would run as a formula in a spreadsheet (OWASP "CSV Injection"), so it is
// written with a leading ' (numbers stay numbers: -0.5 is not text).

export type Cell = string | number | boolean | null;

export interface DataColumn {
  name: string;
  values: Cell[];
}

/** Columns of equal length (the body of POST /exports/parquet). */
export interface DataTable {
  columns: DataColumn[];
}

const FORMULA_START = /^[=+\-@\t\r]/;
const NEEDS_QUOTES = /[",\r\n]/;

/** Text a spreadsheet shows and never runs. */
export function safeText(text: string): string {
  return FORMULA_START.test(text) ? `'${text}` : text;
}

export function csvCell(value: Cell | undefined): string {
  let text: string;
  if (value === null || value === undefined) text = '';
  else if (typeof value === 'number') text = Number.isFinite(value) ? String(value) : '';
  else if (typeof value === 'boolean') text = value ? 'true' : 'false';
  else text = safeText(value);
  return NEEDS_QUOTES.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export function rowCount(table: DataTable): number {
  return table.columns[0]?.values.length ?? 0;
}

export function toCsv(table: DataTable): string {
  const lines = [table.columns.map((c) => csvCell(c.name)).join(',')];
  const n = rowCount(table);
  for (let i = 0; i < n; i++) lines.push(table.columns.map((c) => csvCell(c.values[i])).join(','));
  return lines.join('\r\n') + '\r\n';
}

/** A file name from a chart's label: letters, digits, . _ - kept, the rest as one -. */
export function fileSlug(text: string): string {
  const slug = text.normalize('NFKD').replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[-.]+|-+$/g, '').slice(0, 80);
  return slug || 'data';
}

/** The file name a Content-Disposition header gives (RFC 6266: filename* first), else `fallback`. */
export function dispositionFilename(header: string | null, fallback: string): string {
  if (!header) return fallback;
  const star = /filename\*=UTF-8''([^;]+)/i.exec(header);
  if (star) {
    try {
      return decodeURIComponent(star[1]!);
    } catch {
      // a malformed escape: the plain name below
    }
  }
  const plain = /filename="([^"]+)"/i.exec(header);
  return plain ? plain[1]! : fallback;
}

/** Let the browser save `blob` as `filename` (a link to an object URL, clicked). */
export function saveBlob(blob: Blob, filename: string): void {
  const url = URL.createObjectURL(blob);
  const link = document.createElement('a');
  link.href = url;
  link.download = filename;
  document.body.appendChild(link);
  link.click();
  link.remove();
  // after the click's navigation has taken the URL
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
