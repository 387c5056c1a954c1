// Counts, natural order and dates without the browser's Intl (ICU). Each of ICU's services costs its
// first use dearly (number formatting, collation, date formatting are set up apart): in Chromium with
// the CPU slowed 4x, as `make perf` measures, a first `toLocaleString()` takes 50-135 ms, a first
// `Intl.Collator` 25-45 ms, a first `toLocaleDateString()` 85-100 ms, each paid on the main thread while
// a page loads (docs/benchmarks.md, "Dashboard in the browser"). The dashboard is in English: counts read
// 12,345 and dates 2026-11-29 whatever the browser's locale.

/** An integer with a comma every three digits (`12,345`, `-1,000,000`); other numbers as `String` does,
 *  their integer part grouped the same way (`1,234.5`). */
export function formatCount(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  const [whole = '', fraction] = String(Math.abs(n)).split('.');
  if (whole.includes('e')) return String(n); // 1e21 and beyond: as it is
  const grouped = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return `${n < 0 ? '-' : ''}${grouped}${fraction !== undefined ? `.${fraction}` : ''}`;
}

const CHUNKS = /(\d+)|(\D+)/g;

/**
 * Natural order, ignoring case: `e2` before `e10`, `Loss` with `loss`. Runs of digits compare as numbers
 * (a tie in value, `02` and `2`, by length), other runs by their lower-cased UTF-16 code units.
 * What `Intl.Collator(undefined, { numeric: true, sensitivity: 'base' })` does for ASCII names (metric
 * keys, param values), without its cost; it does not fold accents.
 */
export function naturalCompare(a: string, b: string): number {
  const x = a.toLowerCase().match(CHUNKS) ?? [];
  const y = b.toLowerCase().match(CHUNKS) ?? [];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const p = x[i]!;
    const q = y[i]!;
    if (p === q) continue;
    const pd = p.charCodeAt(0) >= 48 && p.charCodeAt(0) <= 57;
    const qd = q.charCodeAt(0) >= 48 && q.charCodeAt(0) <= 57;
    if (pd && qd) {
      const diff = compareDigits(p, q);
      if (diff !== 0) return diff;
      continue;
    }
    return p < q ? -1 : 1;
  }
  return x.length - y.length;
}

/** Two runs of digits by value (any length, no precision lost), then the shorter (fewer leading zeros) first. */
function compareDigits(p: string, q: string): number {
  const a = p.replace(/^0+(?=\d)/, '');
  const b = q.replace(/^0+(?=\d)/, '');
  if (a.length !== b.length) return a.length - b.length;
  if (a !== b) return a < b ? -1 : 1;
  return p.length - q.length;
}

const pad = (n: number) => String(n).padStart(2, '0');
const dayOf = (d: Date) => `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;

/** The calendar date of a timestamp (ISO text or ms since the epoch) in the browser's time zone, as
 *  `2026-11-29`; text that is no date, as it is. */
export function isoDate(t: string | number): string {
  const d = new Date(t);
  return Number.isNaN(d.getTime()) ? String(t) : dayOf(d);
}

/** The date and time of a timestamp in the browser's time zone, to the second: `2026-11-29 13:05:09`. */
export function isoDateTime(t: string | number): string {
  const d = new Date(t);
  return Number.isNaN(d.getTime()) ? String(t) : `${dayOf(d)} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}
