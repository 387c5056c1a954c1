// 95% confidence intervals for the accuracies result views show: a test set of 256
// problems leaves about ±0.026 on an accuracy near 0.8, more than most differences between cells, so every
// cell says how far its value can be trusted.
//
// - A proportion of n problems (accuracy, exact match, a 0/1 score per combination): the Wilson score
//   interval (Wilson 1927). Unlike the normal (Wald) interval p ± z·sqrt(p(1-p)/n) it stays inside [0, 1]
//   and does not collapse to a zero width at p = 0 or 1, and its coverage is close to 95% from n ≈ 10.
// - A mean over seeds (a cell several runs fill): the Student-t interval over the seeds' values
//   (mean ± t_{0.975, m-1} · s / sqrt(m)), which carries the variation between seeds as well as the
//   sampling of problems; one seed gives none.
// - A mean with its standard error over m units (Skill-Mix's graded points over combinations): the same
//   t interval from the given standard error.
// - A mean of per-task proportions (ReasonFormer's average over tasks): the Wilson interval over the tasks'
//   pooled items, n_eff = T^2 / sum_i 1/n_i (T*n for equal n, the pooled count), so an average of zeros
//   keeps the width its items allow instead of the normal interval's zero width.
// - Tied values (every seed the same, a zero standard error): no spread to estimate from, so n is too
//   small for a t interval; the interval says so (`tied`) instead of claiming a zero width.

import { tQuantile } from './studentT';

/** z of a two-sided 95% interval: the 0.975 quantile of the standard normal. */
export const Z95 = 1.959963984540054;

export type IntervalMethod = 'wilson' | 't' | 'normal';

export interface Interval {
  lo: number;
  hi: number;
  method: IntervalMethod;
  /** the values were tied (zero spread): n is too small to estimate one; lo = hi = the mean, not a claim */
  tied?: boolean;
}

/** What an interval of tied values says in place of `[lo, hi]`. */
export const TIED_TEXT = 'n too small: values tied';

/** "[0.56, 0.68]" with `fmt` for each end; "[n too small: values tied]" for tied values. */
export function bracket(ci: Interval, fmt: (v: number) => string): string {
  return ci.tied ? `[${TIED_TEXT}]` : `[${fmt(ci.lo)}, ${fmt(ci.hi)}]`;
}

/** A bounded score's range: intervals of means are clipped to it (an accuracy is never above 1). */
export type Bounds = readonly [number, number];
export const UNIT: Bounds = [0, 1];

const clip = (v: number, [lo, hi]: Bounds) => Math.min(hi, Math.max(lo, v));

/** Wilson score interval of a proportion `p` of `n` trials (95%); null without a usable n. */
export function wilson(p: number, n: number | null | undefined, z = Z95): Interval | null {
  if (n === null || n === undefined || !Number.isFinite(n) || n < 1 || !Number.isFinite(p)) return null;
  const q = Math.min(1, Math.max(0, p));
  const z2 = z * z;
  const denom = 1 + z2 / n;
  const centre = (q + z2 / (2 * n)) / denom;
  const half = (z / denom) * Math.sqrt((q * (1 - q)) / n + z2 / (4 * n * n));
  return { lo: Math.max(0, centre - half), hi: Math.min(1, centre + half), method: 'wilson' };
}

/** The 0.975 quantile of Student's t with `df` degrees of freedom (df >= 1; lib/studentT.ts, exact). */
export function t975(df: number): number {
  if (!(df >= 1)) throw new Error(`t975: degrees of freedom must be >= 1, got ${df}`);
  return tQuantile(0.975, Math.floor(df));
}

/** Student-t 95% interval of the mean from its standard error over `m` units (m >= 2), clipped to `bounds`. */
export function tFromStderr(mean: number, stderr: number | null | undefined, m: number, bounds: Bounds = UNIT): Interval | null {
  if (stderr === null || stderr === undefined || !Number.isFinite(stderr) || !Number.isFinite(mean) || !(m >= 2)) return null;
  if (stderr === 0) return { lo: mean, hi: mean, method: 't', tied: true };
  const half = t975(m - 1) * stderr;
  return { lo: clip(mean - half, bounds), hi: clip(mean + half, bounds), method: 't' };
}

/** Student-t 95% interval of the mean of `values` (seeds), clipped to `bounds`; null for fewer than 2. */
export function tInterval(values: readonly number[], bounds: Bounds = UNIT): Interval | null {
  const m = values.length;
  if (m < 2 || !values.every(Number.isFinite)) return null;
  const mean = values.reduce((a, b) => a + b, 0) / m;
  const variance = values.reduce((a, v) => a + (v - mean) ** 2, 0) / (m - 1);
  return tFromStderr(mean, Math.sqrt(variance / m), m, bounds);
}

/**
 * 95% interval of the mean of T per-task proportions, each over its own n items: the Wilson score interval
 * over the pooled items, n_eff = T^2 / sum 1/n_i (the variance of the mean of T proportions of a common p is
 * p(1-p)/n_eff; for equal n it is T*n, the pooled count).
 */
export function meanOfProportions(parts: readonly { p: number; n: number }[]): Interval | null {
  if (parts.length === 0 || parts.some((x) => !(x.n >= 1) || !Number.isFinite(x.p))) return null;
  const T = parts.length;
  const mean = parts.reduce((a, x) => a + x.p, 0) / T;
  const nEff = (T * T) / parts.reduce((a, x) => a + 1 / x.n, 0);
  return wilson(mean, nEff);
}

/**
 * The interval of a cell that shows the mean of `values` (one per run or seed), each a proportion of
 * `sizes[i]` problems: one value gives its Wilson interval, several the t interval over them.
 */
export function cellInterval(values: readonly number[], sizes: readonly (number | null | undefined)[]): Interval | null {
  if (values.length === 1) return wilson(values[0]!, sizes[0]);
  return tInterval(values);
}

/** "0.620 [0.560, 0.680]": a value and its interval at `digits`; the value alone without one. */
export function formatWithInterval(value: number, ci: Interval | null | undefined, digits = 3): string {
  const v = value.toFixed(digits);
  return ci ? `${v} ${bracket(ci, (x) => x.toFixed(digits))}` : v;
}

/** The ±half-width an interval amounts to, for captions ("± 0.026"): half of hi - lo. */
export function halfWidth(ci: Interval): number {
  return (ci.hi - ci.lo) / 2;
}

const METHOD_NAMES: Record<IntervalMethod, string> = {
  wilson: 'Wilson score interval',
  t: 'Student-t interval',
  normal: 'normal interval',
};

/** "n = 256" for one size, "n = 128–512" for a range, null for none. */
function sizeRange(sizes: readonly (number | null | undefined)[]): string | null {
  const known = sizes.filter((s): s is number => typeof s === 'number' && s > 0);
  if (known.length === 0) return null;
  const lo = Math.min(...known);
  const hi = Math.max(...known);
  return lo === hi ? `n = ${lo}` : `n = ${lo}–${hi}`;
}

/**
 * The caption line naming the interval a view shows, e.g. "[lo, hi]: 95% Wilson score interval over
 * n = 256 problems"; `unit` names what n counts. `seeds`: some cells are means over seeds (t interval).
 * `missing`: some values have no size (results written before sizes were recorded): no interval.
 */
export function intervalCaption({
  method = 'wilson',
  sizes = [],
  unit = 'problems',
  seeds = false,
  missing = false,
}: {
  method?: IntervalMethod;
  sizes?: readonly (number | null | undefined)[];
  unit?: string;
  seeds?: boolean;
  missing?: boolean;
}): string {
  const n = sizeRange(sizes);
  const parts = [`[lo, hi]: 95% ${METHOD_NAMES[method]}${n ? ` over ${n} ${unit}` : method === 'wilson' ? '' : ` over ${unit}`}`];
  if (seeds) parts.push('cells averaged over seeds: 95% Student-t interval over the seeds');
  if (missing) parts.push('no interval where the result does not record its n (written before intervals)');
  return parts.join('; ');
}
