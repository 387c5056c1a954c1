import { describe, expect, it } from 'vitest';
import { attemptCell, cellValue, columnsOf, durationSeconds, filterAndSort, matchesFilter, patchTable, rowsOfTable, statusCounts, withEtas, type RunFilter, type RunRow } from './runsTable';
import type { RunStatus } from './runStatus';

const run = (id: number, status: RunStatus, params: Record<string, unknown>, summary: RunRow['summary']): RunRow => ({
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
  it('reads a non-finite latest value as its number: NaN sorts with the missing, infinities at the ends', () => {
    const nf = [...runs, run(5, 'succeeded', {}, { loss: 'NaN' }), run(6, 'succeeded', {}, { loss: 'Infinity' }), run(7, 'succeeded', {}, { loss: '-Infinity' })];
    expect(filterAndSort(nf, none, { column: 'metric:loss', desc: false }).map((r) => r.id)).toEqual([7, 3, 1, 4, 6, 2, 5]);
    expect(filterAndSort(nf, none, { column: 'metric:loss', desc: true }).map((r) => r.id)).toEqual([6, 4, 1, 3, 7, 2, 5]);
    expect(filterAndSort(nf, { ...none, columns: { 'metric:loss': '> 0.6' } }, null).map((r) => r.id)).toEqual([4, 6]);
    expect(cellValue(nf[4]!, 'metric:loss')).toBeNaN();
  });
  it('sorts by a param, ties by id', () => {
    expect(filterAndSort(runs, none, { column: 'param:train.lr', desc: true }).map((r) => r.id)).toEqual([1, 4, 2, 3]);
  });
  it('filters and sorts 10,000 runs (speed is measured by make perf, not asserted here)', () => {
    const many = Array.from({ length: 10_000 }, (_, i) => run(i, 'succeeded', { x: i }, { loss: ((i * 7919) % 10_000) / 10_000 }));
    const out = filterAndSort(many, { ...none, columns: { 'metric:loss': '>0.1' } }, { column: 'metric:loss', desc: false });
    expect(out).toHaveLength(8_999);
    const losses = out.map((r) => r.summary.loss as number);
    expect(losses.every((v, i) => v > 0.1 && (i === 0 || losses[i - 1]! <= v))).toBe(true);
  });
});

describe('helpers', () => {
  it('lists param and metric columns', () => {
    expect(columnsOf(runs)).toEqual({ params: ['opt', 'train.lr'], metrics: ['loss'] });
  });
  it('leaves the worker system samples out of the metric columns', () => {
    const sampled = [run(1, 'succeeded', { lr: 1 }, { loss: 0.5, 'system/cpu_percent': 90, 'system/memory_percent': 30 })];
    expect(columnsOf(sampled)).toEqual({ params: ['lr'], metrics: ['loss'] });
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

describe('rowsOfTable / patchTable (GET /experiments/{id}/runs-table)', () => {
  const table = {
    experiment_id: 7,
    id: [11, 12, 13],
    index: [0, 1, 2],
    name: [null, 'lr 0.01 long', null],
    status: ['succeeded', 'running', 'queued'] as const,
    attempt: [1, 2, 1],
    released: [0, 1, 0],
    created_at: ['2026-01-01T00:00:00Z', '2026-01-01T00:00:01Z', '2026-01-01T00:00:02Z'],
    started_at: ['2026-01-01T00:01:00Z', '2026-01-01T00:02:00Z', null],
    finished_at: ['2026-01-01T00:03:00Z', null, null],
    // run 12 worked 30 s in attempt 1, was released, and its attempt 2 started at 00:10
    ended_seconds: [100, 30, null],
    attempt_started_at: [null, '2026-01-01T00:10:00Z', null],
    params: { 'train.lr': [0.1, 0.01, null], seed: [0, 0, 1] },
    summary: { loss: [0.5, null, null], acc: [null, 0.75, null] },
  };

  it("knows its columns from the table's, as a pass over each run's keys finds them, and keeps them under ETAs", () => {
    const t = {
      ...table,
      status: [...table.status],
      params: { ...table.params, unset: [null, null, null], 'model.width': [null, 64, null] },
      summary: { ...table.summary, 'system/cpu_percent': [1, 2, 3], never: [null, null, null] },
    };
    const rows = rowsOfTable(t);
    const known = columnsOf(rows);
    expect(known).toEqual(columnsOf([...rows])); // a new array: counted from the runs' keys
    expect(known).toEqual({ params: ['model.width', 'seed', 'train.lr'], metrics: ['acc', 'loss'] });
    const withEta = withEtas(rows, new Map([[12, '2026-01-01T01:00:00Z']]));
    expect(withEta).not.toBe(rows);
    expect(columnsOf(withEta)).toBe(known);
  });

  it('counts the attempts as the run page does: a released attempt is shown apart, never counted', () => {
    const rows = rowsOfTable({ ...table, status: [...table.status] });
    // run 12 is at attempt 2 after one release: its first counted attempt
    expect(rows.map((r) => [r.attempt, r.released])).toEqual([[1, 0], [2, 1], [1, 0]]);
    expect(rows.map((r) => cellValue(r, 'attempt'))).toEqual([1, 1, 1]);
    expect(rows.map(attemptCell)).toEqual(['1', '1 +1r', '1']);
    expect(attemptCell({ attempt: 4, released: 3 })).toBe('1 +3r');
    expect(attemptCell({ attempt: 2 })).toBe('2'); // a row without the field: nothing released
    // a filter for runs that used more than one attempt does not catch the released one
    expect(filterAndSort(rows, { ...none, columns: { attempt: '> 1' } }, null)).toEqual([]);
    // a fresh run from a release answer: its released count comes with it
    const t = patchTable({ ...table, status: [...table.status] }, { id: 13, status: 'queued', attempt: 2, released: 1, started_at: null, finished_at: null });
    expect([t.attempt[2], t.released[2]]).toEqual([2, 1]);
  });

  it('gives one row per run, nulls left out of params and summary', () => {
    const rows = rowsOfTable({ ...table, status: [...table.status] });
    expect(rows.map((r) => [r.id, r.index, r.status, r.attempt])).toEqual([[11, 0, 'succeeded', 1], [12, 1, 'running', 2], [13, 2, 'queued', 1]]);
    expect(rows.map((r) => r.params)).toEqual([{ 'train.lr': 0.1, seed: 0 }, { 'train.lr': 0.01, seed: 0 }, { seed: 1 }]);
    expect(rows.map((r) => r.summary)).toEqual([{ loss: 0.5 }, { acc: 0.75 }, {}]);
    expect(rows[2]!.started_at).toBeNull();
    expect(rows[1]!.finished_at).toBeNull();
    // the table's columns and sorting see the same runs as from ExperimentDetail.runs
    expect(columnsOf(rows)).toEqual({ params: ['seed', 'train.lr'], metrics: ['acc', 'loss'] });
    expect(filterAndSort(rows, { statuses: new Set(), columns: {} }, { column: 'metric:loss', desc: false }).map((r) => r.id)[0]).toBe(11);
  });

  it("carries each run's name: a column to filter and sort by, patched by a rename", () => {
    const t = { ...table, status: [...table.status] };
    const rows = rowsOfTable(t);
    expect(rows.map((r) => r.name)).toEqual([null, 'lr 0.01 long', null]);
    expect(cellValue(rows[1]!, 'name')).toBe('lr 0.01 long');
    expect(filterAndSort(rows, { statuses: new Set(), columns: { name: 'long' } }, null).map((r) => r.id)).toEqual([12]);
    const renamed = patchTable(t, { id: 13, status: 'queued', attempt: 1, started_at: null, finished_at: null, name: 'third' });
    expect(renamed.name).toEqual([null, 'lr 0.01 long', 'third']);
    // an answer without a name (a status change from the event stream) keeps the name
    expect(patchTable(t, { id: 12, status: 'failed', attempt: 2, started_at: null, finished_at: null }).name).toEqual(t.name);
  });

  it('counts the run time of the attempts, not the downtime between them', () => {
    const rows = rowsOfTable({ ...table, status: [...table.status] });
    const now = Date.parse('2026-01-01T00:10:20Z');
    // running: 30 s of attempt 1 and 20 s of attempt 2, not the 8m20s since the first start at 00:02
    expect(durationSeconds(rows[1]!, now)).toBe(50);
    expect(cellValue(rows[1]!, 'duration')).toBeGreaterThanOrEqual(30);
    // finished: its attempts' seconds (the run page's run_seconds), not started_at to finished_at (120 s)
    expect(durationSeconds(rows[0]!, now)).toBe(100);
    expect(durationSeconds(rows[2]!, now)).toBeNull(); // never ran
    // released and queued again: the work so far, not counting up while it waits
    const waiting = { ...rows[1]!, status: 'queued' as const, attempt_started_at: null };
    expect(durationSeconds(waiting, now)).toBe(30);
    expect(durationSeconds(waiting, now + 3_600_000)).toBe(30);
    // a retry answered with the run: no running attempt, its run_seconds as the ended seconds
    const t = { ...table, status: [...table.status] };
    const cancelled = patchTable(t, { id: 12, status: 'cancelled', attempt: 2, started_at: '2026-01-01T00:02:00Z', finished_at: '2026-01-01T00:11:00Z', run_seconds: 90 });
    expect(cancelled.ended_seconds).toEqual([100, 90, null]);
    expect(cancelled.attempt_started_at).toEqual([null, null, null]);
    expect(durationSeconds(rowsOfTable(cancelled)[1]!, now)).toBe(90);
    // an answer without run_seconds keeps the table's
    expect(patchTable(t, { id: 13, status: 'cancelled', attempt: 1, started_at: null, finished_at: null }).ended_seconds).toEqual([100, 30, null]);
  });

  it('patches one run and leaves the others', () => {
    const t = { ...table, status: [...table.status] };
    const next = patchTable(t, { id: 12, status: 'cancelled', attempt: 2, started_at: '2026-01-01T00:02:00Z', finished_at: '2026-01-01T00:04:00Z' });
    expect(next.status).toEqual(['succeeded', 'cancelled', 'queued']);
    expect(next.finished_at).toEqual(['2026-01-01T00:03:00Z', '2026-01-01T00:04:00Z', null]);
    expect(t.status[1]).toBe('running');
    expect(patchTable(t, { id: 99, status: 'failed', attempt: 1, started_at: null, finished_at: null })).toBe(t);
  });
});

describe('ETA column', () => {
  const inMinutes = (m: number) => new Date(Date.now() + m * 60_000).toISOString();
  const rows = [run(1, 'running', {}, {}), run(2, 'running', {}, {}), run(3, 'running', {}, {}), run(4, 'succeeded', {}, {})];

  it("puts each running run's ETA on its row, and none on the others", () => {
    const etas = new Map([[1, inMinutes(30)], [2, inMinutes(5)], [3, null], [4, inMinutes(1)]]);
    const merged = withEtas(rows, etas);
    expect(merged.map((r) => r.eta_at ?? null)).toEqual([etas.get(1), etas.get(2), null, null]);
    expect(merged[3]).toBe(rows[3]); // rows without an ETA are passed through
    expect(withEtas(rows, undefined)).toBe(rows);
  });
  it('is the seconds left, sortable (no estimate last) and filterable', () => {
    const merged = withEtas(rows, new Map([[1, inMinutes(30)], [2, inMinutes(5)], [3, null]]));
    expect(cellValue(merged[1]!, 'eta')).toBeCloseTo(300, -1);
    expect(cellValue(merged[3]!, 'eta')).toBeNull();
    expect(filterAndSort(merged, none, { column: 'eta', desc: false }).map((r) => r.id)).toEqual([2, 1, 3, 4]);
    expect(filterAndSort(merged, { ...none, columns: { eta: '< 600' } }, null).map((r) => r.id)).toEqual([2]);
  });
});
