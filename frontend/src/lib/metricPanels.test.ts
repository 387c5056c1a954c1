import { describe, expect, it } from 'vitest';
import { metricPlotOptions, secondsLabel, xFormat } from '../components/charts/metricPlot';
import { metricFrame } from './metricFrame';
import { bucketsTable } from './chartTable';
import type { Bucket } from './buckets';
import {
  DEFAULT_CHART_OPTIONS, emaSmooth, formatSeconds, groupMetricKeys, matchesSearch, nonfiniteLabel, pointAt, relativeOrigin, sectionOf, shapeSeries, drawnExtent,
  withBreaks, xAxisChoices, xAxisName, zoomToStepRangeByX,
} from './metricPanels';

const b = (step: number, last: number | null, extra: Partial<Bucket> = {}): Bucket => ({
  step_start: step, step_end: step, min: last, max: last, last, count: 1, time: null, nonfinite: 0, ...extra,
});

// the keys of a one-layer SMoE run on SRAVEN and the worker's system metrics
const SMOE_KEYS = [
  'loss', 'lr', 'train_acc', 'test_acc', 'ood_acc', 'test_acc/f0', 'test_acc/f1', 'ood_acc/f0',
  'moe/entropy', 'moe/load/e0', 'moe/load/e1', 'moe/load/e10', 'moe/load/e2',
  'system/cpu_percent', 'system/memory_percent', 'system/gpu0/utilization',
];

describe('groupMetricKeys', () => {
  it('groups by the first path segment, general first and system last, keys in natural order', () => {
    const sections = groupMetricKeys(SMOE_KEYS);
    expect(sections.map((s) => s.name)).toEqual(['general', 'moe', 'ood_acc', 'test_acc', 'system']);
    expect(sections[0]!.keys).toEqual(['loss', 'lr', 'ood_acc', 'test_acc', 'train_acc']);
    expect(sections[1]!.keys).toEqual(['moe/entropy', 'moe/load/e0', 'moe/load/e1', 'moe/load/e2', 'moe/load/e10']);
    expect(sections[4]!.keys).toEqual(['system/cpu_percent', 'system/gpu0/utilization', 'system/memory_percent']);
  });

  it('shows a key once however often it is listed', () => {
    const sections = groupMetricKeys(['moe/load/e0', 'loss', 'moe/load/e0', 'loss']);
    expect(sections).toEqual([
      { name: 'general', keys: ['loss'] },
      { name: 'moe', keys: ['moe/load/e0'] },
    ]);
  });

  it('keeps only the keys that match every search term, and drops emptied sections', () => {
    expect(groupMetricKeys(SMOE_KEYS, 'LOAD e1')).toEqual([{ name: 'moe', keys: ['moe/load/e1', 'moe/load/e10'] }]);
    expect(groupMetricKeys(SMOE_KEYS, 'nothing-like-this')).toEqual([]);
    expect(groupMetricKeys(SMOE_KEYS, '  ').flatMap((s) => s.keys)).toHaveLength(SMOE_KEYS.length);
  });

  it('names sections and matches as documented', () => {
    expect(sectionOf('loss')).toBe('general');
    expect(sectionOf('/odd')).toBe('general');
    expect(sectionOf('moe/l0/load/e1')).toBe('moe');
    expect(matchesSearch('moe/l0/load/e3', 'load l0')).toBe(true);
    expect(matchesSearch('moe/load/e3', 'load l0')).toBe(false);
  });
});

describe('emaSmooth', () => {
  it('matches a step-by-step debiased EMA', () => {
    const values = [4, 2, 8, 6, 10];
    const w = 0.6;
    // independent computation: s_i = w*s_{i-1} + (1-w)*v_i, s_{-1} = 0, debiased by 1 - w^(i+1)
    const expected: number[] = [];
    let s = 0;
    values.forEach((v, i) => {
      s = w * s + (1 - w) * v;
      expected.push(s / (1 - Math.pow(w, i + 1)));
    });
    const got = emaSmooth(values, w);
    got.forEach((g, i) => expect(g).toBeCloseTo(expected[i]!, 12));
    expect(got[0]).toBe(4); // debiased: the first point is itself, not 0.4 * 4
  });

  it('is the identity at 0, keeps gaps without advancing, and caps the weight', () => {
    expect(emaSmooth([1, null, 3], 0)).toEqual([1, null, 3]);
    const gap = emaSmooth([2, null, 4], 0.5);
    expect(gap[1]).toBeNull();
    expect(gap[2]).toBeCloseTo((0.25 * 2 + 0.5 * 4) / (1 - 0.25), 12); // as if the gap were not there
    const capped = emaSmooth([1, 1000], 5);
    expect(capped).toEqual(emaSmooth([1, 1000], 0.99));
  });
});

describe('shapeSeries', () => {
  const buckets = [
    b(0, 5, { time: '2026-01-01T00:00:00Z' }),
    b(10, -1, { time: '2026-01-01T00:00:30Z' }),
    b(20, 0.5, { time: '2026-01-01T00:01:00Z', min: 0.1, max: 2, count: 10 }),
    b(30, null, { time: null }),
  ];

  it('draws steps by default, with the band where a bucket aggregates points', () => {
    const s = shapeSeries(buckets, DEFAULT_CHART_OPTIONS);
    expect(s.line).toEqual([[0, 5], [10, -1], [20, 0.5]]);
    expect(s.hasBand).toBe(true);
    expect(s.width[2]).toEqual([20, 1.9]);
    expect(s.raw).toEqual([]);
  });

  it('drops values a log scale cannot draw and says how many', () => {
    const s = shapeSeries(buckets, { ...DEFAULT_CHART_OPTIONS, logScale: true });
    expect(s.line).toEqual([[0, 5], [20, 0.5]]);
    expect(s.lower.map(([x]) => x)).toEqual([0, 20]);
    expect(s.dropped).toBe(1);
  });

  it('puts wall time (ms) or seconds since the origin on x; a bucket without a time is dropped', () => {
    const t0 = Date.parse('2026-01-01T00:00:00Z');
    expect(shapeSeries(buckets, { ...DEFAULT_CHART_OPTIONS, xAxis: 'time' }).line.map(([x]) => x)).toEqual([t0, t0 + 30_000, t0 + 60_000]);
    const rel = shapeSeries(buckets, { ...DEFAULT_CHART_OPTIONS, xAxis: 'relative' }, t0 - 10_000);
    expect(rel.line.map(([x]) => x)).toEqual([10, 40, 70]);
    expect(rel.dropped).toBe(1);
  });

  it('smooths the line and keeps the raw values beside it', () => {
    const s = shapeSeries([b(0, 1), b(1, 3)], { ...DEFAULT_CHART_OPTIONS, smoothing: 0.5 });
    expect(s.raw).toEqual([[0, 1], [1, 3]]);
    expect(s.line[1]![1]).toBeCloseTo((0.25 * 1 + 0.5 * 3) / 0.75, 12);
  });
});

describe('NaN and infinities (stored as values, not gaps)', () => {
  // what GET /runs/{id}/metrics answers: last null with last_nonfinite naming it, min / max over finite values
  const buckets = [
    b(0, 3),
    b(1, null, { min: null, max: null, nonfinite: 1, last_nonfinite: 'NaN' }),
    b(2, 2),
    b(3, null, { min: null, max: null, nonfinite: 1, last_nonfinite: 'Infinity' }),
    b(13, 1, { step_start: 4, min: 0.5, max: 4, count: 10, nonfinite: 2 }), // two -inf inside, last finite
    b(14, null, { step_start: 14, min: null, max: null, last: null }), // a gap (null logged): no mark
  ];

  it('names what a bucket holds: the last value kind, else how many', () => {
    expect(buckets.map(nonfiniteLabel)).toEqual([null, 'NaN', null, 'Infinity', '2 NaN/inf', null]);
  });

  it('marks each bucket holding NaN or inf and breaks the line where the last value is one', () => {
    const s = shapeSeries(buckets, DEFAULT_CHART_OPTIONS);
    expect(s.line).toEqual([[0, 3], [2, 2], [13, 1]]);
    expect(s.nonfinite).toEqual([{ x: 1, label: 'NaN' }, { x: 3, label: 'Infinity' }, { x: 13, label: '2 NaN/inf' }]);
    expect(s.breaks).toEqual([1, 3]);
    // the band never sees them: a NaN would make max - min NaN, an inf would flatten the axis
    expect(s.lower).toEqual([[0, 3], [2, 2], [13, 0.5]]);
    expect(s.width).toEqual([[0, 0], [2, 0], [13, 3.5]]);
  });

  it('draws the line with gaps (null) at the breaks, in x order', () => {
    expect(withBreaks([[0, 3], [2, 2], [13, 1]], [1, 3])).toEqual([[0, 3], [1, null], [2, 2], [3, null], [13, 1]]);
    expect(withBreaks([[0, 3]], [])).toEqual([[0, 3]]);
  });

  it('puts a labelled mark at each on the chart and gaps in the drawn line', () => {
    const f = metricFrame(buckets, { min: 0, max: 14 }, { start: 0, end: 100 }, DEFAULT_CHART_OPTIONS);
    expect(f.xs).toEqual([0, 1, 2, 3, 13, 14]);
    // null: the line breaks (NaN, inf at the bucket's last step); undefined: joined across (a logged null)
    expect(f.line).toEqual([3, null, 2, null, 1, undefined]);
    expect(f.nonfinite).toEqual([{ x: 1, label: 'NaN' }, { x: 3, label: 'Infinity' }, { x: 13, label: '2 NaN/inf' }]);
    // the band never sees them
    expect(f.lower).toEqual([3, undefined, 2, undefined, 0.5, undefined]);
    expect(f.upper).toEqual([3, undefined, 2, undefined, 4, undefined]);
  });

  it('keeps them in the downloaded data (CSV, Parquet): the count and the last value kind', () => {
    const t = bucketsTable('loss', buckets.slice(0, 2));
    expect(t.columns.map((c) => c.name)).toEqual(['key', 'step_start', 'step_end', 'count', 'min', 'max', 'last', 'nonfinite', 'last_nonfinite']);
    expect(t.columns.find((c) => c.name === 'last_nonfinite')!.values).toEqual([null, 'NaN']);
    expect(t.columns.find((c) => c.name === 'nonfinite')!.values).toEqual([0, 1]);
    // a series without any: the table as before
    expect(bucketsTable('loss', [buckets[0]!]).columns.map((c) => c.name)).not.toContain('nonfinite');
  });
});

describe('relative time and zoom over time', () => {
  it('starts relative time at the run start, else at the first timed bucket', () => {
    const buckets = [b(0, 1), b(1, 1, { time: '2026-01-01T00:00:05Z' })];
    expect(relativeOrigin('2026-01-01T00:00:00Z', buckets)).toBe(Date.parse('2026-01-01T00:00:00Z'));
    expect(relativeOrigin(null, buckets)).toBe(Date.parse('2026-01-01T00:00:05Z'));
    expect(relativeOrigin(undefined, [b(0, 1)])).toBeNull();
  });

  it("takes the extent over time from the first and last bucket with a time, as the chart's columns", () => {
    const buckets = [b(0, 1), b(1, -1, { time: '2026-01-01T00:00:05Z' }), b(2, 1, { time: '2026-01-01T00:00:09Z' }), b(3, 1)];
    const origin = Date.parse('2026-01-01T00:00:00Z');
    expect(drawnExtent(buckets, 'relative', origin)).toEqual([5, 9]);
    expect(drawnExtent(buckets, 'time', null)).toEqual([origin + 5_000, origin + 9_000]);
    // a log scale leaves the negative bucket's line out, not its x: the frame's extent is the same
    const c = metricFrame(buckets, null, { start: 0, end: 100 }, { logScale: true, smoothing: 0, xAxis: 'relative' }, origin);
    expect(c.extent).toEqual(drawnExtent(buckets, 'relative', origin));
    expect(drawnExtent(buckets.slice(0, 2), 'relative', origin)).toBeNull(); // one timed bucket: no extent
    // zoomed, the frame's extent is the overview's (as the zoom's hook reads it), not its finer buckets'
    const fine = [b(2, 1, { time: '2026-01-01T00:00:07Z' }), b(3, 1, { time: '2026-01-01T00:00:12Z' })];
    const zoomed = metricFrame(fine, null, { start: 0, end: 50 }, { logScale: false, smoothing: 0, xAxis: 'time' }, null, buckets);
    expect(zoomed.extent).toEqual([origin + 5_000, origin + 9_000]);
    expect(zoomed.window).toEqual([origin + 5_000, origin + 7_000]);
  });

  it('maps a zoom window over x to the steps of the buckets inside it', () => {
    // x (seconds) grows unevenly with the step: a pause between steps 20 and 30
    const buckets = [0, 10, 20, 30, 40].map((s) => b(s, 1, { step_start: s, step_end: s + 9 }));
    const xs = [0, 10, 20, 80, 100];
    expect(zoomToStepRangeByX(buckets, xs, 0, 25)).toEqual({ min: 0, max: 29 }); // x 0..25
    expect(zoomToStepRangeByX(buckets, xs, 75, 100)).toEqual({ min: 30, max: 49 }); // x 75..100
    expect(zoomToStepRangeByX(buckets, xs, 0, 100)).toBeNull(); // all of it: the overview is enough
    expect(zoomToStepRangeByX(buckets, xs, 30, 50)).toBeNull(); // x 30..50: no bucket there
  });

  it('formats seconds for the relative axis', () => {
    expect([formatSeconds(45), formatSeconds(725), formatSeconds(12_000), formatSeconds(-60)]).toEqual(['45s', '12m 5s', '3h 20m', '-1m']);
  });
});

describe("system metrics: their step is seconds since the run was created (worker/runtime/sysmetrics.py)", () => {
  const buckets = [b(0, 12), b(30, 40), b(725, 35)];
  const xAxisOf = (key: string, xAxis = DEFAULT_CHART_OPTIONS.xAxis) => {
    const options = { ...DEFAULT_CHART_OPTIONS, xAxis };
    const frame = metricFrame(buckets, { min: 0, max: 725 }, { start: 0, end: 100 }, options);
    const plot = metricPlotOptions(key, options, { frame: () => frame, onZoom: () => {} });
    const axis = plot.axes![0]!;
    const values = axis.values as ((u: unknown, splits: number[], i: number, s: number, incr: number) => string[]) | undefined;
    return { name: axis.label, time: plot.scales!.x!.time === true, tick: (v: number) => values?.(null, [v], 0, 0, 100)[0], tooltipX: xFormat(key, xAxis) };
  };

  it('draws them against time since the run was created, labelled in seconds, not against "step"', () => {
    const x = xAxisOf('system/cpu_percent');
    expect(x.name).toBe('time since the run was created');
    expect(x.tick(725)).toBe('12m 5s');
    expect(x.tooltipX(725, 725)).toBe('12m 5s');
    expect(xFormat('loss', 'relative')(3.5, 0.5)).toBe('3.5s'); // ticks half a second apart keep their fraction
    // ticks 15 s apart past an hour keep their seconds (formatSeconds rounds to the minute there)
    expect([3600, 3615, 3630].map((x) => secondsLabel(x, 15))).toEqual(['1h 0m 0s', '1h 0m 15s', '1h 0m 30s']);
    expect([3600, 7200].map((x) => secondsLabel(x, 3600))).toEqual(['1h', '2h']);
    const loss = xAxisOf('loss');
    expect(loss.name).toBe('step');
    expect(loss.tick(12_500)).toBe('12,500'); // a training step stays a number
  });

  it('offers the x axes that mean something for them: since created and wall time', () => {
    expect(xAxisChoices('system/gpu0/utilization').map((c) => [c.value, c.label])).toEqual([['step', 'Since created'], ['time', 'Wall time']]);
    expect(xAxisChoices('loss').map((c) => c.value)).toEqual(['step', 'time', 'relative']);
    expect(xAxisName('system/memory_percent', 'time')).toBe('time');
    expect(xAxisOf('system/cpu_percent', 'time').time).toBe(true);
    expect(xAxisOf('system/cpu_percent').time).toBe(false);
  });

  it('says where a single sample lies in time', () => {
    expect(pointAt('system/cpu_percent', 45)).toBe('at 45s after the run was created');
    expect(pointAt('loss', 45)).toBe('at step 45');
  });
});
