import { describe, expect, it } from 'vitest';
import type { Bucket } from './buckets';
import { STEP_INCRS } from '../components/charts/metricPlot';
import { metricFrame, tickLabel, wheelFactor, wheelWindow, zoomOfWindow, zoomWindow } from './metricFrame';
import { DEFAULT_CHART_OPTIONS } from './metricPanels';

const b = (step: number, last: number | null, extra: Partial<Bucket> = {}): Bucket => ({
  step_start: step, step_end: step, min: last, max: last, last, count: 1, time: null, nonfinite: 0, ...extra,
});

describe('a metric chart frame: the columns uPlot draws', () => {
  it('aligns the band, the raw values and the smoothed line on one x', () => {
    const buckets = [b(0, 1, { min: 0.5, max: 2, count: 4 }), b(10, 3, { min: 2, max: 5, count: 4 })];
    const f = metricFrame(buckets, { min: 0, max: 10 }, { start: 0, end: 100 }, { ...DEFAULT_CHART_OPTIONS, smoothing: 0.5 });
    expect(f.xs).toEqual([0, 10]);
    expect(f.raw).toEqual([1, 3]);
    // debiased EMA, by hand: s0 = 0.5*1 / (1-0.5) = 1; s1 = (0.25*1 + 0.5*3) / (1-0.25)
    expect(f.line[0]).toBeCloseTo(1, 12);
    expect(f.line[1]).toBeCloseTo(1.75 / 0.75, 12);
    expect([f.lower, f.upper, f.hasBand]).toEqual([[0.5, 2], [2, 5], true]);
  });

  it('draws no band when every bucket is one point, and no raw line without smoothing', () => {
    const f = metricFrame([b(0, 1), b(1, 2)], null, { start: 0, end: 100 }, DEFAULT_CHART_OPTIONS);
    expect([f.lower, f.upper, f.raw, f.hasBand]).toEqual([[undefined, undefined], [undefined, undefined], [undefined, undefined], false]);
    expect(f.extent).toEqual([0, 1]); // no step range given: the drawn x's
  });

  it('leaves out what a log scale cannot draw, joining the line across it', () => {
    const buckets = [b(0, 1), b(1, 0), b(2, -1, { min: -2, max: 3, count: 2 }), b(3, 0.1)];
    const f = metricFrame(buckets, { min: 0, max: 3 }, { start: 0, end: 100 }, { ...DEFAULT_CHART_OPTIONS, logScale: true });
    expect(f.line).toEqual([1, undefined, undefined, 0.1]);
    expect([f.dropped, f.notPositive]).toEqual([2, 2]);
    expect(f.hasBand).toBe(false); // the one wide bucket's min is not positive
  });

  it('puts time on x in epoch ms, or in seconds since the origin, dropping buckets without a time', () => {
    const t0 = Date.parse('2026-01-01T00:00:00Z');
    const buckets = [b(0, 1, { time: '2026-01-01T00:00:05Z' }), b(1, 2), b(2, 3, { time: '2026-01-01T00:01:05Z' })];
    const abs = metricFrame(buckets, { min: 0, max: 2 }, { start: 0, end: 100 }, { ...DEFAULT_CHART_OPTIONS, xAxis: 'time' });
    expect(abs.xs).toEqual([t0 + 5000, t0 + 65000]);
    expect([abs.dropped, abs.notPositive]).toEqual([1, 0]);
    expect(abs.extent).toEqual([t0 + 5000, t0 + 65000]); // a zoom is of the drawn times, not of the steps
    const rel = metricFrame(buckets, { min: 0, max: 2 }, { start: 0, end: 100 }, { ...DEFAULT_CHART_OPTIONS, xAxis: 'relative' }, t0);
    expect(rel.xs).toEqual([5, 65]);
  });

  it('ticks a step axis at whole steps', () => {
    expect(STEP_INCRS.slice(0, 7)).toEqual([1, 2, 5, 10, 20, 50, 100]);
    expect(STEP_INCRS.every(Number.isInteger)).toBe(true);
  });

  it("gives the zoom's window over the run's step range", () => {
    const f = metricFrame([b(100, 1), b(200, 2)], { min: 0, max: 1000 }, { start: 10, end: 30 }, DEFAULT_CHART_OPTIONS);
    expect(f.extent).toEqual([0, 1000]);
    expect(f.window).toEqual([100, 300]);
  });
});

describe('zoom windows and gestures', () => {
  it('maps a zoom to a window and back', () => {
    const extent: [number, number] = [50, 250];
    expect(zoomWindow(extent, { start: 25, end: 75 })).toEqual([100, 200]);
    expect(zoomOfWindow(extent, 200, 100)).toEqual({ start: 25, end: 75 }); // either direction of a drag
    expect(zoomOfWindow(extent, 0, 1000)).toEqual({ start: 0, end: 100 }); // clamped to the extent
    expect(zoomOfWindow(extent, 120, 120)).toBeNull();
    expect(zoomWindow([5, 5], { start: 0, end: 100 })).toBeNull();
    expect(zoomWindow(null, { start: 0, end: 100 })).toBeNull();
  });

  it('zooms the wheel about the pointer, inside the extent', () => {
    expect(wheelWindow([0, 100], [0, 100], 50, 0.8)).toEqual([10, 90]);
    expect(wheelWindow([10, 90], [0, 100], 10, 1.25)).toEqual([10, 100]); // about the left edge; clamped at 100
    expect(wheelWindow([0, 100], [0, 100], 30, 1.25)).toEqual([0, 100]);
  });

  it("scales a wheel event's zoom by its delta: a mouse notch 1.25x, a trackpad's small steps less", () => {
    expect(wheelFactor(100)).toBeCloseTo(1.25, 12);
    expect(wheelFactor(-100)).toBeCloseTo(0.8, 12);
    expect(wheelFactor(600)).toBeCloseTo(1.25, 12); // one event zooms one notch at most
    expect(wheelFactor(4)).toBeCloseTo(1.25 ** 0.04, 12);
    expect(wheelFactor(3, 1)).toBeCloseTo(1.25, 12); // 3 lines
    expect(wheelFactor(0)).toBe(1); // a horizontal swipe: no zoom
  });
});

describe('tick labels without Intl', () => {
  it('groups integers as en-US does', () => {
    for (const v of [0, 7, 999, 1000, 12_345, -12_345, 1_234_567])
      expect(tickLabel(v, 1)).toBe(v.toLocaleString('en-US'));
  });

  it('gives fractions the decimals of the tick distance', () => {
    expect([0, 0.25, 0.5, 0.75].map((v) => tickLabel(v, 0.25))).toEqual(['0.00', '0.25', '0.50', '0.75']);
    expect([1.2, 1.4].map((v) => tickLabel(v, 0.2))).toEqual(['1.2', '1.4']);
    expect(tickLabel(-0.04, 0.1)).toBe('0.0'); // rounds to zero: no "-0.0"
    expect(tickLabel(-0.5, 0.5)).toBe('-0.5'); // a negative fraction keeps its sign
    expect(tickLabel(2500.5, 0.5)).toBe('2,500.5');
  });

  it('gives ticks closer than a millionth their digits', () => {
    // a learning rate between 1.000e-4 and 1.015e-4: ticks 2e-6 apart
    expect([1e-4, 1.02e-4, 1.04e-4].map((v) => tickLabel(v, 2e-6))).toEqual(['0.000100', '0.000102', '0.000104']);
    expect([1.5e-5, 2e-5].map((v) => tickLabel(v, 5e-6))).toEqual(['1.5e-5', '2e-5']);
  });

  it('keeps large whole steps exact, and enough digits to tell large fractions apart', () => {
    expect([12_340_000, 12_342_000].map((v) => tickLabel(v, 2_000))).toEqual(['12,340,000', '12,342,000']);
    expect(tickLabel(12_345_678, 12_345_678)).toBe('12,345,678'); // a tooltip's exact step
    expect([12_340_000.5, 12_340_001.5].map((v) => tickLabel(v, 1))).toEqual(['1.23400005e+7', '1.23400015e+7']);
  });

  it('writes large and tiny magnitudes in exponent form', () => {
    expect(tickLabel(3e7, 1e7)).toBe('30,000,000');
    expect(tickLabel(0.00001, 0.00001)).toBe('1e-5');
    expect(tickLabel(0.001, 0.001)).toBe('0.001'); // a log axis's tick, its own distance
  });
});
