import { describe, expect, it } from 'vitest';
import { overlayOption } from '../components/charts/OverlayChart';
import { parallelOption } from '../components/charts/ParallelCoords';
import { perFeatureOption } from '../kinds/smoe/smoe_sraven/SravenCellView';
import { bucketsTable, chartTable, parallelRunsTable } from './chartTable';
import { toCsv } from './tableExport';

const plain = (t: ReturnType<typeof chartTable>) => Object.fromEntries(t.columns.map((c) => [c.name, c.values]));

describe('chartTable', () => {
  it('lines of [x, y] points: one row per point, the axes naming the columns', () => {
    const option = overlayOption('val/loss', [
      { runId: 1, name: 'run 1', points: [[0, 2.5], [10, 1.25]], raw: [], dropped: 0, breaks: [] },
      { runId: 2, name: 'run 2', points: [[0, 3]], raw: [], dropped: 0, breaks: [] },
    ]);
    expect(plain(chartTable(option))).toEqual({
      series: ['run 1', 'run 1', 'run 2'],
      step: [0, 10, 0],
      'val/loss': [2.5, 1.25, 3],
    });
  });
  it('bars on a category axis: the category label per value, NaN and null as missing', () => {
    const option = perFeatureOption({ per_feature_acc: [0.5, NaN], ood_per_feature_acc: [0.25, null as never] });
    expect(plain(chartTable(option))).toEqual({
      series: ['ID', 'ID', 'OOD', 'OOD'],
      x: ['feature 1', 'feature 2', 'feature 1', 'feature 2'],
      value: [0.5, null, 0.25, null],
    });
  });
  it('a heatmap: the cell labels of both category axes and the value', () => {
    const option = {
      xAxis: { type: 'category', data: ['1', '2'], name: "eval k'" },
      yAxis: { type: 'category', data: ['k=1', 'dense'], name: 'train k' },
      series: [{ type: 'heatmap', data: [{ value: [0, 1, 0.75, 42, 1] }, [1, 0, 0.5]] }],
    };
    expect(plain(chartTable(option))).toEqual({ "eval k'": ['1', '2'], 'train k': ['dense', 'k=1'], value: [0.75, 0.5] });
  });
  it('a time axis writes ISO times', () => {
    const option = { xAxis: { type: 'time' }, yAxis: { type: 'value' }, series: [{ type: 'line', name: 'cpu', data: [[Date.UTC(2026, 10, 25, 12), 5]] }] };
    expect(plain(chartTable(option))).toEqual({ series: ['cpu'], x: ['2026-11-25T12:00:00.000Z'], value: [5] });
  });
  it('parallel coordinates: a column per axis', () => {
    const option = parallelOption({
      axes: [
        { dim: 0, name: 'train.lr', type: 'value' },
        { dim: 1, name: 'opt', type: 'category', data: ['adam', 'sgd'] },
        { dim: 2, name: 'loss', type: 'value' },
      ],
      rows: [[0.1, 'adam', 0.5, 7], [0.01, 'sgd', 0.25, 8]],
    } as never);
    expect(plain(chartTable(option))).toEqual({ 'train.lr': [0.1, 0.01], opt: ['adam', 'sgd'], loss: [0.5, 0.25] });
  });
  it('repeated column names are told apart, and the CSV of the table is formula-safe', () => {
    const option = { xAxis: { name: 'v' }, yAxis: { name: 'v' }, series: [{ type: 'line', name: '=cmd', data: [[1, 2]] }] };
    const t = chartTable(option);
    expect(t.columns.map((c) => c.name)).toEqual(['series', 'v', 'v (2)']);
    expect(toCsv(t)).toBe("series,v,v (2)\r\n'=cmd,1,2\r\n");
  });
  it('no option, no series: an empty table', () => {
    expect(chartTable(undefined)).toEqual({ columns: [] });
    expect(plain(chartTable({ series: [] }))).toEqual({ series: [], x: [], value: [] });
  });
});

describe('bucketsTable', () => {
  it('one row per bucket: its step range, count, min, max and last', () => {
    const t = bucketsTable('loss', [
      { step_start: 0, step_end: 9, count: 10, min: 0.5, max: 2, last: 0.75 },
      { step_start: 10, step_end: 10, count: 1, min: null, max: null, last: null },
    ]);
    expect(plain(t)).toEqual({
      key: ['loss', 'loss'], step_start: [0, 10], step_end: [9, 10], count: [10, 1], min: [0.5, null], max: [2, null], last: [0.75, null],
    });
  });
});

describe('parallelRunsTable', () => {
  it('names the run of each line, then one column per axis', () => {
    const t = parallelRunsTable([{ name: 'train.lr' }, { name: 'loss' }], [[0.1, 0.5, 7], [0.01, 0.25, 8]]);
    expect(plain(t)).toEqual({ run: [7, 8], 'train.lr': [0.1, 0.01], loss: [0.5, 0.25] });
  });
});
