import { describe, expect, it } from 'vitest';
import { filterExperiments, kindsOf, NO_FILTER, type ExperimentRow } from './experimentsFilter';

const exp = (id: number, name: string, kind: string, status_counts: Record<string, number>): ExperimentRow => ({
  id, name, kind, status_counts, tags: [], author: 'admin',
});
const rows = [
  exp(1, 'diagnostic', 'diagnostic', { succeeded: 3 }),
  exp(2, 'diagnostic', 'diagnostic', { failed: 1 }),
  exp(3, 'sraven grid', 'smoe_sraven', { running: 2, queued: 4 }),
];

describe('experiments filter', () => {
  it('searches by name and by id', () => {
    expect(filterExperiments(rows, { ...NO_FILTER, search: 'DIAG' }).map((e) => e.id)).toEqual([1, 2]);
    expect(filterExperiments(rows, { ...NO_FILTER, search: '#2' }).map((e) => e.id)).toEqual([2]);
    expect(filterExperiments(rows, { ...NO_FILTER, search: '3' }).map((e) => e.id)).toEqual([3]);
  });
  it('filters by kind and by a status some run has', () => {
    expect(filterExperiments(rows, { ...NO_FILTER, kind: 'smoe_sraven' }).map((e) => e.id)).toEqual([3]);
    expect(filterExperiments(rows, { ...NO_FILTER, status: 'failed' }).map((e) => e.id)).toEqual([2]);
    expect(filterExperiments(rows, { search: 'diag', kind: 'diagnostic', status: 'succeeded' }).map((e) => e.id)).toEqual([1]);
  });
  it('lists the kinds present', () => {
    expect(kindsOf(rows)).toEqual(['diagnostic', 'smoe_sraven']);
  });
});
