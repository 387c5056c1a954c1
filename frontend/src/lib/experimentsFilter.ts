// The experiments list's search and filters, done in the browser over the page the API returned:
// a name (or id, "#7" or "7") search, a kind and a run status ("has a run that is ...").
import type { Experiment } from '../api/types';
import type { RunStatus } from './runStatus';

export type ExperimentRow = Pick<Experiment, 'id' | 'name' | 'kind' | 'status_counts' | 'tags' | 'author'>;

export interface ExperimentFilter {
  search: string;
  kind: string | null;
  status: RunStatus | null;
}

export const NO_FILTER: ExperimentFilter = { search: '', kind: null, status: null };

export function matchesExperiment(e: ExperimentRow, f: ExperimentFilter): boolean {
  if (f.kind && e.kind !== f.kind) return false;
  if (f.status && !((e.status_counts[f.status] ?? 0) > 0)) return false;
  const q = f.search.trim().toLowerCase();
  if (!q) return true;
  const id = /^#?(\d+)$/.exec(q);
  if (id && e.id === Number(id[1])) return true;
  return (
    e.name.toLowerCase().includes(q) ||
    e.tags.some((t) => t.toLowerCase().includes(q)) ||
    (e.author ?? '').toLowerCase().includes(q)
  );
}

export function filterExperiments<T extends ExperimentRow>(rows: readonly T[], f: ExperimentFilter): T[] {
  return rows.filter((e) => matchesExperiment(e, f));
}

export function kindsOf(rows: readonly ExperimentRow[]): string[] {
  return [...new Set(rows.map((e) => e.kind))].sort();
}
