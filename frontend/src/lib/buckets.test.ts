import { describe, expect, it } from 'vitest';
import { bucketsToSeries, mergeZoomed, rezoom, zoomToStepRange, type Bucket } from './buckets';

const b = (step_start: number, step_end: number, min: number | null, max: number | null, last: number | null, count = 1): Bucket => ({
  step_start, step_end, min, max, last, count, nonfinite: 0,
});

describe('bucketsToSeries', () => {
  it('puts the last value at the bucket end step and the band from min to max', () => {
    const s = bucketsToSeries([b(0, 9, 1, 5, 2, 10), b(10, 19, 0.5, 0.9, 0.6, 10)]);
    expect(s.line).toEqual([[9, 2], [19, 0.6]]);
    expect(s.lower).toEqual([[9, 1], [19, 0.5]]);
    expect(s.width[0]).toEqual([9, 4]);
    expect(s.width[1]![1]).toBeCloseTo(0.4);
    expect(s.hasBand).toBe(true);
  });

  it('keeps a spike that only the max of a coarse bucket remembers', () => {
    const s = bucketsToSeries([b(0, 999, 0.1, 100, 0.2, 1000)]);
    const top = s.lower[0]![1] + s.width[0]![1];
    expect(top).toBe(100);
    expect(s.line[0]![1]).toBe(0.2);
  });

  it('draws no band when every bucket holds one point', () => {
    expect(bucketsToSeries([b(0, 0, 1, 1, 1), b(1, 1, 2, 2, 2)]).hasBand).toBe(false);
  });

  it('turns non-finite values into gaps instead of breaking the stack', () => {
    const s = bucketsToSeries([b(0, 0, NaN, NaN, NaN), b(1, 1, 1, Infinity, 1), b(2, 2, null, null, null)]);
    expect(s.line).toEqual([[1, 1]]);
    expect(s.lower).toEqual([]);
  });
});

describe('zoomToStepRange', () => {
  it('maps dataZoom percentages onto the full step range', () => {
    expect(zoomToStepRange({ min: 0, max: 1_000_000 }, 10, 20)).toEqual({ min: 100_000, max: 200_000 });
  });
  it('asks nothing when the zoom shows (nearly) everything', () => {
    expect(zoomToStepRange({ min: 0, max: 100 }, 0, 100)).toBeNull();
    expect(zoomToStepRange({ min: 0, max: 100 }, 2, 98)).toBeNull();
  });
  it('asks nothing for an empty range', () => {
    expect(zoomToStepRange({ min: 5, max: 5 }, 10, 20)).toBeNull();
  });
});

describe('mergeZoomed', () => {
  it('replaces the overview buckets inside the zoomed range with the fine ones', () => {
    const overview = [b(0, 99, 0, 1, 1), b(100, 199, 0, 1, 1), b(200, 299, 0, 1, 1)];
    const fine = [b(100, 149, 0, 1, 1), b(150, 199, 0, 1, 1)];
    const merged = mergeZoomed(overview, fine, { min: 100, max: 199 });
    expect(merged.map((x) => x.step_start)).toEqual([0, 100, 150, 200]);
  });
});

describe('a zoom on a growing run', () => {
  it('stays on the steps chosen as the run grows', () => {
    // steps 1,000-2,000 of a run at 10,000 steps; the run reaches 20,000
    const z = rezoom({ start: 10, end: 20 }, { min: 0, max: 10_000 }, { min: 0, max: 20_000 });
    expect(z.start).toBeCloseTo(5, 12);
    expect(z.end).toBeCloseTo(10, 12);
    expect(zoomToStepRange({ min: 0, max: 20_000 }, z.start, z.end)).toEqual({ min: 1_000, max: 2_000 });
  });

  it('leaves the whole run and an unchanged range as they are', () => {
    const all = { start: 0, end: 100 };
    expect(rezoom(all, { min: 0, max: 10 }, { min: 0, max: 20 })).toBe(all);
    expect(rezoom({ start: 10, end: 20 }, { min: 0, max: 0 }, { min: 0, max: 20 })).toEqual({ start: 10, end: 20 });
  });
});
