import { describe, expect, it } from 'vitest';
import { incompleteBeta, logGamma, normalQuantile, t975, tCdf, tQuantile } from './studentT';

// reference values: scipy.stats.t.ppf / t.cdf (SciPy 1.x), computed outside this code
describe('Student t', () => {
  it('has the tabled 0.975 quantiles to 12 digits', () => {
    const known: [number, number][] = [
      [1, 12.706204736174694],
      [2, 4.302652729749462],
      [3, 3.1824463052837078],
      [4, 2.7764451051977934],
      [5, 2.5705818356363146],
      [10, 2.228138851986274],
      [29, 2.045229642132703],
      [30, 2.0422724563012378],
      [31, 2.039513446396408],
      [100, 1.9839715185235518],
      [1000, 1.9623390808264083],
    ];
    for (const [df, t] of known) expect(t975(df)).toBeCloseTo(t, 12);
  });

  it('inverts its CDF at other levels, fractional df and the lower tail', () => {
    expect(tQuantile(0.995, 7)).toBeCloseTo(3.4994832973504924, 11);
    expect(tQuantile(0.9, 3)).toBeCloseTo(1.637744353696209, 12);
    expect(tQuantile(0.975, 2.5)).toBeCloseTo(3.5746548420036817, 11);
    expect(tQuantile(0.025, 4)).toBeCloseTo(-2.7764451051977934, 12);
    expect(tQuantile(0.5, 9)).toBe(0);
    expect(tCdf(2.0, 3)).toBeCloseTo(0.9303370157205785, 13);
    expect(tCdf(-1.5, 7.5)).toBeCloseTo(0.08724028529323204, 13);
    expect(tCdf(tQuantile(0.99, 13), 13)).toBeCloseTo(0.99, 13);
  });

  it('builds on the right special functions', () => {
    expect(logGamma(5)).toBeCloseTo(Math.log(24), 13);
    expect(logGamma(0.5)).toBeCloseTo(Math.log(Math.sqrt(Math.PI)), 13);
    expect(incompleteBeta(0.3, 2, 3)).toBeCloseTo(0.3483, 13); // 6x²-8x³+3x⁴ at 0.3
    expect(normalQuantile(0.975)).toBeCloseTo(1.959963984540054, 8);
  });

  it('refuses what has no quantile', () => {
    expect(() => tQuantile(0.975, 0)).toThrow(/degrees of freedom/);
    expect(() => tQuantile(1, 4)).toThrow(/p must be/);
    expect(() => t975(0.5)).toThrow(/degrees of freedom/);
  });
});
