import { describe, expect, it } from 'vitest';
import type { Bucket } from './buckets';
import { emaSmooth } from './metricPanels';
import { droppedOnLog, overlaySeries, overlayTable } from './overlay';
import { runLabel, runTitle } from './labels';

const bucket = (step: number, last: number): Bucket => ({ step_start: step, step_end: step, min: last, max: last, last, count: 1, nonfinite: 0 });
const answer = (runId: number, values: number[]) => ({
  run_id: runId,
  series: { loss: { buckets: values.map((v, i) => bucket(i, v)), step_min: 0, step_max: values.length - 1, total_points: values.length } },
});

describe('overlaySeries under the chart options', () => {
  const runs = [{ id: 1, params: { lr: 0.1 } }, { id: 2, params: { lr: 0.01 }, name: 'small lr' }];
  const responses = [answer(1, [4, 2, 1, 0.5]), answer(2, [3, -1, 0, 2])];

  it('smooths each run with the run page EMA and keeps its raw values for the faint line', () => {
    const [a, b] = overlaySeries(runs, responses, 'loss', { logScale: false, smoothing: 0.6 });
    const smoothA = emaSmooth([4, 2, 1, 0.5], 0.6) as number[];
    expect(a!.points).toEqual(smoothA.map((v, i) => [i, v]));
    expect(a!.raw).toEqual([[0, 4], [1, 2], [2, 1], [3, 0.5]]);
    expect(b!.raw).toEqual([[0, 3], [1, -1], [2, 0], [3, 2]]);
    expect(a!.points[1]![1]).not.toBe(2); // smoothed, not the raw value
  });

  it('says where a run logged NaN or an infinity, for the line to break there', () => {
    const nan = { ...bucket(1, 0), last: null, min: null, max: null, nonfinite: 1, last_nonfinite: 'NaN' as const };
    const response = { run_id: 1, series: { loss: { buckets: [bucket(0, 4), nan, bucket(2, 1)], step_min: 0, step_max: 2, total_points: 3 } } };
    const [a] = overlaySeries([runs[0]!], [response], 'loss');
    expect(a!.points).toEqual([[0, 4], [2, 1]]);
    expect(a!.breaks).toEqual([1]);
  });

  it('draws raw lines only (no faint copy) without smoothing', () => {
    const [a] = overlaySeries(runs, responses, 'loss', { logScale: false, smoothing: 0 });
    expect(a!.points).toEqual([[0, 4], [1, 2], [2, 1], [3, 0.5]]);
    expect(a!.raw).toEqual([]);
  });

  it('leaves values that are not positive out of a log scale, and counts them', () => {
    const series = overlaySeries(runs, responses, 'loss', { logScale: true, smoothing: 0 });
    expect(series[0]!.points).toEqual([[0, 4], [1, 2], [2, 1], [3, 0.5]]);
    expect(series[1]!.points).toEqual([[0, 3], [3, 2]]); // -1 and 0 have no place on a log axis
    expect(series[1]!.dropped).toBe(2);
    expect(droppedOnLog(series)).toBe(2);
    // smoothed on a log scale: the faint raw line also keeps only the positive values
    const smoothed = overlaySeries(runs, responses, 'loss', { logScale: true, smoothing: 0.5 });
    expect(smoothed[1]!.raw).toEqual([[0, 3], [3, 2]]);
    expect(smoothed[1]!.points.every(([, y]) => y > 0)).toBe(true);
  });

  it("labels a named run by its name and id, before the params that differ", () => {
    const series = overlaySeries(runs, responses, 'loss');
    expect(series.map((s) => s.name)).toEqual(['run 1 lr=0.1', 'small lr (run 2) lr=0.01']);
    expect(runTitle({ id: 7, name: null })).toBe('run 7');
    expect(runTitle({ id: 7, name: 'baseline' })).toBe('baseline (run 7)');
    expect(runLabel({ id: 7, name: 'baseline', params: { a: 1 } }, [])).toBe('baseline (run 7)');
  });
});

describe('overlayTable (the overlay chart\'s "Download data")', () => {
  const runs = [{ id: 1, params: {} }, { id: 2, params: {}, name: 'b' }];
  const responses = [answer(1, [4, 2]), answer(2, [3, 1])];

  it('is one row per run and step with the drawn value', () => {
    const t = overlayTable('loss', overlaySeries(runs, responses, 'loss'));
    expect(t.columns.map((c) => c.name)).toEqual(['series', 'step', 'loss']); // as every line chart's table
    expect(t.columns.map((c) => c.values)).toEqual([['run 1', 'run 1', 'b (run 2)', 'b (run 2)'], [0, 1, 0, 1], [4, 2, 3, 1]]);
  });

  it('puts the raw and the smoothed value side by side when smoothing', () => {
    const options = { logScale: false, smoothing: 0.5 };
    const series = overlaySeries(runs, responses, 'loss', options);
    const t = overlayTable('loss', series, options);
    expect(t.columns.map((c) => c.name)).toEqual(['series', 'step', 'loss', 'loss (smoothed 0.50)']);
    expect(t.columns[2]!.values).toEqual([4, 2, 3, 1]);
    expect(t.columns[3]!.values).toEqual(series.flatMap((s) => s.points.map(([, y]) => y)));
  });
});
