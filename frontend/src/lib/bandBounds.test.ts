import { describe, expect, it } from 'vitest';
import { clipBands, clipNote, isProportionKey, naturalBounds } from './bandBounds';

describe('naturalBounds', () => {
  it('puts 0 under a metric whose values are all >= 0, and 1 over a proportion within [0, 1]', () => {
    expect(naturalBounds('loss', [0.05, 0.1, 0.6])).toEqual({ lo: 0, hi: null });
    expect(naturalBounds('val/acc', [0, 0.4, 1])).toEqual({ lo: 0, hi: 1 });
    expect(naturalBounds('test_acc/f0', [0.2, 0.9])).toEqual({ lo: 0, hi: 1 });
    // a proportion's name with values past 1 (a percentage): 0 only
    expect(naturalBounds('acc', [12, 80])).toEqual({ lo: 0, hi: null });
    // not a proportion by name: 0 only, whatever its values
    expect(naturalBounds('lr', [0.001, 0.0005])).toEqual({ lo: 0, hi: null });
  });

  it('has no bound where a value is negative, or no value at all', () => {
    expect(naturalBounds('reward', [-1, 2])).toEqual({ lo: null, hi: null });
    expect(naturalBounds('val/acc', [-0.01, 0.5])).toEqual({ lo: null, hi: null });
    expect(naturalBounds('loss', [])).toEqual({ lo: null, hi: null });
    expect(naturalBounds('loss', [Number.NaN, Infinity])).toEqual({ lo: null, hi: null });
  });

  it('reads a proportion from any word of the key', () => {
    expect(isProportionKey('ood_acc')).toBe(true);
    expect(isProportionKey('moe/drop_rate')).toBe(true);
    expect(isProportionKey('loss')).toBe(false);
    expect(isProportionKey('accumulated')).toBe(false);
  });
});

describe('clipBands', () => {
  it("clips a loss's interval at 0 and says so", () => {
    // the case: a mean under 0.4 whose 95% interval reached -0.6
    const bounds = naturalBounds('loss', [0.05, 0.1, 0.6]);
    const clip = clipBands([{ lo: -0.6, hi: 1.1 }, { lo: 0.1, hi: 0.3 }, null], bounds);
    expect(clip.bands).toEqual([{ lo: 0, hi: 1.1 }, { lo: 0.1, hi: 0.3 }, null]);
    expect(clip.clippedLo).toBe(true);
    expect(clip.clippedHi).toBe(false);
    expect(clipNote(clip, bounds)).toBe('band clipped at 0: no value is below 0');
  });

  it("clips a proportion's interval at 0 and 1", () => {
    const bounds = naturalBounds('acc', [0.02, 0.98]);
    const clip = clipBands([{ lo: -0.1, hi: 0.3 }, { lo: 0.8, hi: 1.2 }], bounds);
    expect(clip.bands).toEqual([{ lo: 0, hi: 0.3 }, { lo: 0.8, hi: 1 }]);
    expect(clipNote(clip, bounds)).toBe('band clipped at 0 and 1: no value is below 0, a proportion is at most 1');
  });

  it('leaves a band inside its bounds alone and says nothing', () => {
    const bounds = naturalBounds('loss', [1, 2]);
    const clip = clipBands([{ lo: 0.5, hi: 2.5 }], bounds);
    expect(clip.bands).toEqual([{ lo: 0.5, hi: 2.5 }]);
    expect(clipNote(clip, bounds)).toBeNull();
    // a metric that goes below 0: no bound, nothing clipped
    const free = clipBands([{ lo: -3, hi: 1 }], naturalBounds('reward', [-1, 0.5]));
    expect(free.bands).toEqual([{ lo: -3, hi: 1 }]);
    expect(free.clippedLo).toBe(false);
  });

  it('raises a lower end that is not positive to the floor on a log axis', () => {
    const bounds = naturalBounds('loss', [0.05, 0.1, 0.6]);
    const clip = clipBands([{ lo: -0.6, hi: 1.1 }, { lo: 0.2, hi: 0.3 }], bounds, 0.05);
    expect(clip.bands).toEqual([{ lo: 0.05, hi: 1.1 }, { lo: 0.2, hi: 0.3 }]);
    expect(clipNote(clip, bounds, true)).toBe('band clipped at 0.05: the smallest value drawn (a log scale has no 0)');
  });
});
