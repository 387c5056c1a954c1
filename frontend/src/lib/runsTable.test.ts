import { describe, expect, it } from 'vitest';
import { columnsOf, durationSeconds, filterAndSort, matchesFilter, statusCounts, type RunFilter, type RunRow } from './runsTable';
import type { RunStatus } from './runStatus';

const run = (id: number, status: RunStatus, params: Record<string, unknown>, summary: Record<string, number | null>): RunRow => ({
  id, index: id, status, attempt: 1, params, summary, created_at: '2026-01-01T00:00:00Z', started_at: null, finished_at: null,
});
const runs = [
  run(1, 'succeeded', { 'train.lr': 0.1, opt: 'adam' }, { loss: 0.5 }),
  run(2, 'failed', { 'train.lr': 0.01, opt: 'sgd' }, {}),
  run(3, 'succeeded', { 'train.lr': 0.001, opt: 'adam' }, { loss: 0.2 }),
  run(4, 'running', { 'train.lr': 0.1, opt: 'sgd' }, { loss: 0.9 }),
];
const none: RunFilter = { statuses: new Set(), columns: {} };

describe('filterAndSort', () => {
  it('filters by status', () => {
    expect(filterAndSort(runs, { ...none, statuses: new Set(['succeeded']) }, null).map((r) => r.id)).toEqual([1, 3]);
  });
  it('filters by param text and by metric comparison', () => {
    expect(filterAndSort(runs, { ...none, columns: { 'param:opt': 'ad' } }, null).map((r) => r.id)).toEqual([1, 3]);
    expect(filterAndSort(runs, { ...none, columns: { 'metric:loss': '< 0.6' } }, null).map((r) => r.id)).toEqual([1, 3]);
  });
  it('sorts by a final metric with missing values last in both directions', () => {
    expect(filterAndSort(runs, none, { column: 'metric:loss', desc: false }).map((r) => r.id)).toEqual([3, 1, 4, 2]);
    expect(filterAndSort(runs, none, { column: 'metric:loss', desc: true }).map((r) => r.id)).toEqual([4, 1, 3, 2]);
  });
  it('sorts by a param, ties by id', () => {
    expect(filterAndSort(runs, none, { column: 'param:train.lr', desc: true }).map((r) => r.id)).toEqual([1, 4, 2, 3]);
  });
  it('sorts 10,000 runs quickly', () => {
    const many = Array.from({ length: 10_000 }, (_, i) => run(i, 'succeeded', { x: Math.random() }, { loss: Math.random() }));
    const t0 = performance.now();
    filterAndSort(many, { ...none, columns: { 'metric:loss': '>0.1' } }, { column: 'metric:loss', desc: false });
    expect(performance.now() - t0).toBeLessThan(500);
  });
});

describe('helpers', () => {
  it('lists param and metric columns', () => {
    expect(columnsOf(runs)).toEqual({ params: ['opt', 'train.lr'], metrics: ['loss'] });
  });
  it('counts statuses', () => {
    expect(statusCounts(runs)).toEqual({ succeeded: 2, failed: 1, running: 1 });
  });
  it('sorts a metric that is null (not finite in the run) with the missing values', () => {
    const withNull = [run(1, 'succeeded', {}, { loss: null }), run(2, 'succeeded', {}, { loss: 0.3 })];
    expect(filterAndSort(withNull, none, { column: 'metric:loss', desc: false }).map((r) => r.id)).toEqual([2, 1]);
  });
  it('measures a run from its start to its end, or to now while it runs', () => {
    const r = { ...run(1, 'running', {}, {}), started_at: '2026-01-01T00:00:00Z' };
    expect(durationSeconds(r, Date.parse('2026-01-01T00:01:00Z'))).toBe(60);
    expect(durationSeconds({ ...r, status: 'succeeded' as const, finished_at: '2026-01-01T00:00:30Z' })).toBe(30);
    expect(durationSeconds(run(2, 'queued', {}, {}))).toBeNull();
  });
  it('does not count a retried run that waits in the queue again, nor a finished run without its end', () => {
    const retried = { ...run(1, 'queued', {}, {}), started_at: '2026-01-01T00:00:00Z' };
    expect(durationSeconds(retried, Date.parse('2026-01-01T00:07:00Z'))).toBeNull();
    const failed = { ...run(1, 'failed', {}, {}), started_at: '2026-01-01T00:00:00Z' };
    expect(durationSeconds(failed, Date.parse('2026-01-01T00:07:00Z'))).toBeNull();
    expect(durationSeconds({ ...failed, finished_at: '2026-01-01T00:00:05Z' })).toBe(5);
  });
  it('does not match a comparison against a missing value', () => {
    expect(matchesFilter(undefined, '>1')).toBe(false);
    expect(matchesFilter(3, '>=3')).toBe(true);
  });
});
