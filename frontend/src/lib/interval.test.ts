// Expected values computed independently (Python: scipy.stats.t.ppf, and the Wilson formula by hand from
// Wilson 1927 / Agresti & Coull 1998), not by this module.
import { describe, expect, it } from 'vitest';
import {
  cellInterval,
  formatWithInterval,
  halfWidth,
  intervalCaption,
  bracket,
  meanOfProportions,
  t975,
  TIED_TEXT,
  tFromStderr,
  tInterval,
  wilson,
} from './interval';

describe('wilson', () => {
  it('matches hand-computed Wilson intervals, asymmetric around p', () => {
    const ci = wilson(205 / 256, 256)!;
    expect(ci.lo).toBeCloseTo(0.747567, 6);
    expect(ci.hi).toBeCloseTo(0.845102, 6);
    expect(ci.method).toBe('wilson');
    const half = wilson(0.5, 256)!;
    expect(half.lo).toBeCloseTo(0.439206, 6);
    expect(half.hi).toBeCloseTo(0.560794, 6);
  });

  it('keeps a width at 0 and 1, where the normal interval collapses to a point', () => {
    const zero = wilson(0, 10)!;
    expect(zero.lo).toBe(0);
    expect(zero.hi).toBeCloseTo(0.277533, 6);
    const one = wilson(1, 5)!;
    expect(one.lo).toBeCloseTo(0.565518, 6);
    expect(one.hi).toBe(1);
  });

  it('gives none without a usable n (old results)', () => {
    expect(wilson(0.5, null)).toBeNull();
    expect(wilson(0.5, undefined)).toBeNull();
    expect(wilson(0.5, 0)).toBeNull();
    expect(wilson(Number.NaN, 10)).toBeNull();
  });
});

describe('t intervals', () => {
  it('uses the tabled quantile for small df and the expansion beyond (scipy.stats.t.ppf(0.975, df))', () => {
    expect(t975(1)).toBeCloseTo(12.7062, 4);
    expect(t975(2)).toBeCloseTo(4.302653, 4);
    expect(t975(30)).toBeCloseTo(2.042272, 4);
    expect(t975(31)).toBeCloseTo(2.039513, 4);
    expect(t975(40)).toBeCloseTo(2.021075, 4);
    expect(t975(100)).toBeCloseTo(1.983972, 4);
    expect(() => t975(0)).toThrow(/degrees of freedom/);
  });

  it('gives mean ± t·s/sqrt(m) over seeds, none for a single seed', () => {
    const ci = tInterval([0.5, 0.6, 0.7])!;
    expect(ci.lo).toBeCloseTo(0.351586, 5);
    expect(ci.hi).toBeCloseTo(0.848414, 5);
    expect(ci.method).toBe('t');
    expect(tInterval([0.5])).toBeNull();
  });

  it('clips to the bounds of the score', () => {
    const ci = tInterval([0.95, 1, 1])!;
    expect(ci.hi).toBe(1);
    const pct = tInterval([60, 70, 80], [0, 100])!;
    expect(pct.lo).toBeCloseTo(70 - 4.302653 * 10 / Math.sqrt(3), 3);
  });

  it('builds the interval from a given standard error over m units', () => {
    const ci = tFromStderr(0.4, 0.05, 5)!;
    expect(ci.lo).toBeCloseTo(0.4 - 2.776445 * 0.05, 5);
    expect(ci.hi).toBeCloseTo(0.4 + 2.776445 * 0.05, 5);
    expect(tFromStderr(0.4, null, 5)).toBeNull();
    expect(tFromStderr(0.4, 0.05, 1)).toBeNull();
  });
});

describe('meanOfProportions', () => {
  it('is the Wilson interval over the pooled items, n_eff = T^2 / sum 1/n', () => {
    // tasks 0.5 of 100 and 0.9 of 50: mean 0.7, n_eff = 4 / (1/100 + 1/50) = 133.33...
    const ci = meanOfProportions([{ p: 0.5, n: 100 }, { p: 0.9, n: 50 }])!;
    const n = 4 / (1 / 100 + 1 / 50);
    const z2 = 1.959964 ** 2;
    const centre = (0.7 + z2 / (2 * n)) / (1 + z2 / n);
    const half = (1.959964 / (1 + z2 / n)) * Math.sqrt((0.7 * 0.3) / n + z2 / (4 * n * n));
    expect(ci.lo).toBeCloseTo(centre - half, 5);
    expect(ci.hi).toBeCloseTo(centre + half, 5);
    expect(ci.method).toBe('wilson');
    expect(meanOfProportions([])).toBeNull();
    expect(meanOfProportions([{ p: 0.5, n: 0 }])).toBeNull();
  });

  it('keeps a width at an average of zeros: the pooled items bound it (equal n: Wilson over T*n)', () => {
    const ci = meanOfProportions([{ p: 0, n: 4 }, { p: 0, n: 4 }, { p: 0, n: 4 }])!;
    expect(ci.lo).toBeCloseTo(0, 12);
    expect(ci.hi).toBeGreaterThan(0.2); // Wilson's upper end at 0 of 12: z^2/(n+z^2) = 0.2425
    expect(ci.hi).toBeCloseTo(wilson(0, 12)!.hi, 12);
  });
});

describe('tied values', () => {
  it('say that n is too small instead of a zero-width interval', () => {
    const ci = tInterval([0, 0])!;
    expect(ci.tied).toBe(true);
    expect(formatWithInterval(0, ci, 2)).toBe(`0.00 [${TIED_TEXT}]`);
    expect(tFromStderr(0, 0, 2)!.tied).toBe(true);
    expect(bracket(tInterval([0.5, 0.6, 0.7])!, (v) => v.toFixed(2))).toBe('[0.35, 0.85]');
    expect(tInterval([0.5, 0.6, 0.7])!.tied).toBeUndefined();
  });
});

describe('cellInterval and the text', () => {
  it('is Wilson for one run and t over several', () => {
    expect(cellInterval([0.5], [256])!.method).toBe('wilson');
    expect(cellInterval([0.5, 0.6], [256, 256])!.method).toBe('t');
    expect(cellInterval([0.5], [null])).toBeNull();
  });

  it('formats a value with its interval, or alone', () => {
    expect(formatWithInterval(0.8, wilson(0.8, 256), 3)).toBe('0.800 [0.747, 0.844]');
    expect(formatWithInterval(0.8, null, 2)).toBe('0.80');
    expect(halfWidth({ lo: 0.2, hi: 0.3, method: 'wilson' })).toBeCloseTo(0.05, 10);
  });

  it('names the interval and its n in the caption', () => {
    expect(intervalCaption({ sizes: [256, 256] })).toBe('[lo, hi]: 95% Wilson score interval over n = 256 problems');
    expect(intervalCaption({ sizes: [128, 512, null], missing: true, seeds: true })).toBe(
      '[lo, hi]: 95% Wilson score interval over n = 128–512 problems; cells averaged over seeds: 95% Student-t interval ' +
        'over the seeds; no interval where the result does not record its n (written before intervals)',
    );
    expect(intervalCaption({ method: 't', sizes: [5], unit: 'combinations' })).toBe('[lo, hi]: 95% Student-t interval over n = 5 combinations');
  });
});
