// The compare page's parameter table: every dotted spec path of the compared runs, with the rows whose
// values differ flagged (and listed first), so what changed between runs is what the eye lands on.
import { flatten, type Json } from './dotted';

export interface DiffRow {
  key: string;
  values: (Json | undefined)[];
  differs: boolean;
}

function same(a: Json | undefined, b: Json | undefined): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

export function diffParams(specs: readonly unknown[], opts: { onlyDiffering?: boolean } = {}): DiffRow[] {
  const flats = specs.map((s) => flatten(s));
  const keys = new Set<string>();
  for (const f of flats) for (const k of Object.keys(f)) keys.add(k);
  const rows: DiffRow[] = [...keys].sort().map((key) => {
    const values = flats.map((f) => (key in f ? f[key] : undefined));
    return { key, values, differs: values.some((v) => !same(v, values[0])) };
  });
  const ordered = [...rows.filter((r) => r.differs), ...rows.filter((r) => !r.differs)];
  return opts.onlyDiffering ? ordered.filter((r) => r.differs) : ordered;
}
