import { describe, expect, it } from 'vitest';
import { runsQueryParams } from '../hooks/projectRuns';
import {
  caretLines,
  columnsOf,
  DEFAULT_RUN_COLUMNS,
  effectiveQuery,
  groupByParam,
  groupCell,
  groupLabels,
  groupSortParam,
  isPlainSearch,
  metricExpr,
  metricsParam,
  nextSort,
  paramPaths,
  queryProblem,
  runFieldValue,
  runSortParam,
  sortMatches,
  type RunGroup,
} from './runsQuery';
import { decodeViewState, DEFAULT_GROUP, encodeViewState, EMPTY_VIEW, type ViewState } from './viewState';

const stats = (over: Partial<RunGroup['metrics'][string]>) => ({ n: 0, mean: null, std: null, ci_low: null, ci_high: null, min: null, max: null, ...over });

describe('the search text', () => {
  it('plain words search names; anything with an operator, quote or keyword is an expression', () => {
    expect(effectiveQuery('  ')).toBeNull();
    expect(effectiveQuery('carma')).toBe('name contains "carma"');
    expect(effectiveQuery('carma lambda')).toBe('name contains "carma lambda"');
    expect(effectiveQuery('#12')).toBe('id = 12');
    expect(effectiveQuery(' 12 ')).toBe('id = 12 or name contains "12"');
    expect(effectiveQuery('a\\b')).toBe('name contains "a\\\\b"');
    expect(effectiveQuery('status = "failed"')).toBe('status = "failed"');
    expect(effectiveQuery('tags exists')).toBe('tags exists');
    expect(effectiveQuery('max(metrics.acc) > 0.9')).toBe('max(metrics.acc) > 0.9');
    expect(isPlainSearch('carma')).toBe(true);
    expect(isPlainSearch('kind = "carma"')).toBe(false);
    expect(isPlainSearch('')).toBe(false);
  });
});

describe('view state -> API parameters', () => {
  it("metric columns become the language's fields, keys quoted when needed", () => {
    expect(metricExpr('metrics.acc', null)).toBe('metrics.acc');
    expect(metricExpr('metrics.acc', 'last')).toBe('metrics.acc');
    expect(metricExpr('metrics.val/loss', 'min')).toBe('min(metrics.val/loss)');
    expect(metricExpr('metrics.eval acc', 'best')).toBe('best(metrics."eval acc")');
    expect(
      metricsParam([
        { field: 'name', aggregate: null, width: null },
        { field: 'metrics.acc', aggregate: 'max', width: null },
        { field: 'metrics.loss', aggregate: null, width: 90 },
        { field: 'metrics.acc', aggregate: 'max', width: 200 },
      ]),
    ).toBe('max(metrics.acc),metrics.loss');
    expect(metricsParam(DEFAULT_RUN_COLUMNS)).toBeNull();
  });

  it('sorts: created on its keyset, metrics by aggregate, groups by mean or a group field', () => {
    expect(runSortParam(null)).toEqual({});
    expect(runSortParam({ field: 'created', order: 'desc', aggregate: null })).toEqual({ sort: 'created_at', order: 'desc' });
    expect(runSortParam({ field: 'params.train.lr', order: 'asc', aggregate: null })).toEqual({ sort: 'params.train.lr', order: 'asc' });
    expect(runSortParam({ field: 'metrics.acc', order: 'desc', aggregate: 'best' })).toEqual({ sort: 'best(metrics.acc)', order: 'desc' });
    expect(groupSortParam({ field: 'metrics.acc', order: 'desc', aggregate: null }, null)).toEqual({ sort: 'metric-mean:metrics.acc', order: 'desc' });
    expect(groupSortParam({ field: 'params.lambda', order: 'asc', aggregate: null }, ['params.lambda'])).toEqual({ sort: 'params.lambda', order: 'asc' });
    expect(groupSortParam({ field: 'name', order: 'asc', aggregate: null }, ['params.lambda'])).toEqual({});
  });

  it('group_by: default or the fields', () => {
    expect(groupByParam(null)).toBeNull();
    expect(groupByParam(DEFAULT_GROUP)).toBe('default');
    expect(groupByParam(['params.lambda', 'kind'])).toBe('params.lambda,kind');
  });

  it("a page's request leaves out what is empty; metrics only with group_by", () => {
    expect(runsQueryParams({ project: 'p', q: null, metrics: 'metrics.acc' }, null)).toEqual({ project: 'p', limit: 100 });
    expect(runsQueryParams({ project: 'p', q: 'kind = "x"', sort: 'id', order: 'asc', group_by: 'default', metrics: 'metrics.acc' }, 'c1', 5)).toEqual({
      project: 'p', limit: 5, q: 'kind = "x"', sort: 'id', order: 'asc', group_by: 'default', metrics: 'metrics.acc', cursor: 'c1',
    });
  });

  it('a header click sorts ascending, then descending, then not', () => {
    const col = { field: 'metrics.acc', aggregate: 'max' as const, width: null };
    const s1 = nextSort(null, col);
    expect(s1).toEqual({ field: 'metrics.acc', order: 'asc', aggregate: 'max' });
    expect(sortMatches(s1, col)).toBe('asc');
    expect(sortMatches(s1, { ...col, aggregate: 'min' })).toBeNull();
    const s2 = nextSort(s1, col);
    expect(s2?.order).toBe('desc');
    expect(nextSort(s2, col)).toBeNull();
    expect(nextSort(s2, { field: 'name', aggregate: null, width: null })).toEqual({ field: 'name', order: 'asc', aggregate: null });
  });

  it('the runs page state round-trips through the URL', () => {
    const state: ViewState = {
      query: 'params.carma.lambda = 0.2 and status = "succeeded"',
      columns: [
        { field: 'id', aggregate: null, width: null },
        { field: 'params.carma.lambda', aggregate: null, width: null },
        { field: 'metrics.test_acc', aggregate: 'max', width: 160 },
      ],
      group_by: DEFAULT_GROUP,
      sort: { field: 'metrics.test_acc', order: 'desc', aggregate: 'max' },
      chart: null,
      charts: [],
      runs: [],
    };
    const url = encodeViewState(state).toString();
    expect(decodeViewState(new URLSearchParams(url))).toEqual(state);
    expect(columnsOf(decodeViewState(new URLSearchParams(url)))).toEqual(state.columns);
    expect(columnsOf(EMPTY_VIEW)).toEqual(DEFAULT_RUN_COLUMNS);
  });
});

describe('group cells', () => {
  it('mean ± half the interval, the bounds in the tooltip', () => {
    const cell = groupCell(stats({ n: 3, mean: 0.8, std: 0.1, ci_low: 0.55159, ci_high: 1.04841, min: 0.7, max: 0.9 }));
    expect(cell.text).toBe('0.8 ± 0.24841');
    expect(cell.title).toContain('95% CI [0.55159, 1.0484]');
    expect(cell.title).toContain('n = 3');
  });

  it('a group of one shows its value, never an interval; no value: a dash', () => {
    expect(groupCell(stats({ n: 1, mean: 0.75, min: 0.75, max: 0.75 }))).toEqual({ text: '0.75', title: 'n = 1: no interval' });
    expect(groupCell(stats({ n: 0 })).text).toBe('—');
    expect(groupCell(undefined).text).toBe('—');
  });

  it("labels show the key's paths that differ between groups", () => {
    const g = (key: Record<string, unknown>): RunGroup => ({ key, n: 1, run_ids: [1], metrics: {} });
    expect(groupLabels([g({ kind: 'carma', carma: { lambda: 0.2, steps: 10 } }), g({ kind: 'carma', carma: { lambda: 0, steps: 10 } })])).toEqual(['carma.lambda=0.2', 'carma.lambda=0']);
    expect(groupLabels([g({ 'params.lambda': 0.2 })])).toEqual(['params.lambda=0.2']);
    expect(groupLabels([g({})])).toEqual(['(all)']);
  });
});

describe('columns', () => {
  it("param paths come from the loaded specs; a run's fields read as the language names them", () => {
    expect(paramPaths([{ carma: { lambda: 0.2 }, seed: 1 }, { train: { lr: 0.1 }, seed: 2 }, null])).toEqual(['carma.lambda', 'seed', 'train.lr']);
    const run = { id: 7, name: null, kind: 'carma', status: 'succeeded', experiment_id: 3, created_at: '2026-01-01T00:00:00Z', spec: { carma: { lambda: 0.2 } } };
    expect(runFieldValue(run, 'experiment')).toBe(3);
    expect(runFieldValue(run, 'params.carma.lambda')).toBe(0.2);
    expect(runFieldValue(run, 'params.carma.missing')).toBeUndefined();
  });
});

describe("a query's 422", () => {
  it('the message and a caret under the position it names', () => {
    const p = queryProblem([{ loc: ['query', 'q'], msg: "position 28: expected a value after '>', found the end of the query" }], 'bad');
    expect(p.position).toBe(28);
    expect(caretLines('status = "failed" and name >', p.position)).toEqual(['status = "failed" and name >', `${' '.repeat(28)}^`]);
    expect(queryProblem([{ loc: ['query', 'q'], msg: 'unknown field foo; fields: id, name' }], 'bad')).toEqual({ message: 'unknown field foo; fields: id, name', position: null });
    expect(queryProblem([], 'the detail').message).toBe('the detail');
    expect(caretLines('abc', 9)).toBeNull();
  });
});
