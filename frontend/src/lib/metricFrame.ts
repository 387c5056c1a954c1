// What a run's metric chart draws, as columns over one x (the layout of a uPlot chart, components/charts/
// LinePlot.tsx): per bucket its x under the axis mode, the line (smoothed if asked), the raw values under a
// smoothed line, the min/max band; the gaps where a NaN or an infinity was logged; the x window of a zoom.
// Pure: tested without a browser (metricFrame.test.ts).
import type { Bucket, StepRange } from './buckets';
import { bucketX, emaSmooth, nonfiniteLabel, type ChartOptions } from './metricPanels';

/** A y value: a number, `null` (a gap: the line breaks there) or `undefined` (nothing here: the line joins
 *  its neighbours across it, as uPlot draws them). */
export type Y = number | null | undefined;

export interface MetricFrame {
  /** each drawn bucket's x (its last step, epoch ms, or seconds since the origin), ascending */
  xs: number[];
  /** the last value per bucket, smoothed if asked */
  line: Y[];
  /** the raw last values under a smoothed line (all undefined without smoothing) */
  raw: Y[];
  /** the band: each bucket's min and max when buckets aggregate several points (all undefined when none does) */
  lower: Y[];
  upper: Y[];
  hasBand: boolean;
  /** buckets left out: not positive on a log scale (`notPositive` of them), or without a time on a time axis */
  dropped: number;
  notPositive: number;
  /** buckets holding NaN or infinite values: where, and what (the last value's kind, else how many) */
  nonfinite: { x: number; label: string }[];
  /** the extent a zoom's percentages are of: the run's step range on a step axis, else the drawn x's */
  extent: [number, number] | null;
  /** the x window the zoom selects (null: let the chart range itself over the data) */
  window: [number, number] | null;
}

const finite = (v: number | null | undefined): v is number => v !== null && v !== undefined && Number.isFinite(v);

/**
 * The chart's columns under its options: the EMA runs over the buckets' last values in step order; on a
 * log scale only positive values are drawn (a band whose min is not positive is left out, its line point
 * kept if positive); a bucket whose last value is NaN or infinite breaks the line (`null`), any other
 * missing value is joined across (`undefined`).
 */
export function metricFrame(
  buckets: readonly Bucket[],
  full: StepRange | null,
  zoom: { start: number; end: number },
  options: ChartOptions,
  originMs: number | null = null,
): MetricFrame {
  const smoothed = emaSmooth(buckets.map((b) => (finite(b.last) ? b.last : null)), options.smoothing);
  const ok = (v: number) => !options.logScale || v > 0;
  const f: MetricFrame = { xs: [], line: [], raw: [], lower: [], upper: [], hasBand: false, dropped: 0, notPositive: 0, nonfinite: [], extent: null, window: null };
  buckets.forEach((b, i) => {
    const x = bucketX(b, options.xAxis, originMs);
    if (x === null) {
      f.dropped += 1;
      return;
    }
    f.xs.push(x);
    const odd = nonfiniteLabel(b);
    if (odd !== null) f.nonfinite.push({ x, label: odd });
    const gap = b.last_nonfinite ? null : undefined;
    const y = smoothed[i];
    if (finite(y) && ok(y)) f.line.push(y);
    else {
      f.line.push(gap);
      if (finite(b.last)) {
        f.dropped += 1;
        f.notPositive += 1;
      }
    }
    f.raw.push(options.smoothing > 0 && finite(b.last) && ok(b.last) ? b.last : gap);
    if (finite(b.min) && finite(b.max) && ok(b.min)) {
      f.lower.push(b.min);
      f.upper.push(b.max);
      if (b.count > 1 && b.max > b.min) f.hasBand = true;
    } else {
      f.lower.push(undefined);
      f.upper.push(undefined);
    }
  });
  if (!f.hasBand) f.lower = f.upper = f.xs.map(() => undefined);
  if (options.xAxis === 'step' && full) f.extent = [full.min, full.max];
  else if (f.xs.length > 0) f.extent = [f.xs[0]!, f.xs[f.xs.length - 1]!];
  f.window = zoomWindow(f.extent, zoom);
  return f;
}

/** The x window of a zoom (percentages of `extent`, as the zoom state keeps them); null when the extent
 *  is one point. */
export function zoomWindow(extent: [number, number] | null, zoom: { start: number; end: number }): [number, number] | null {
  if (!extent || !(extent[1] > extent[0])) return null;
  const span = extent[1] - extent[0];
  const pct = (p: number) => Math.max(0, Math.min(100, p)) / 100;
  return [extent[0] + pct(zoom.start) * span, extent[0] + pct(zoom.end) * span];
}

/** The zoom (percentages of `extent`, clamped to it) of the x window [a, b]: what a drag or a wheel
 *  gesture selected; null when it selects nothing. */
export function zoomOfWindow(extent: [number, number] | null, a: number, b: number): { start: number; end: number } | null {
  if (!extent || !(extent[1] > extent[0]) || !Number.isFinite(a) || !Number.isFinite(b)) return null;
  const span = extent[1] - extent[0];
  const pct = (x: number) => Math.max(0, Math.min(100, ((x - extent[0]) / span) * 100));
  const start = pct(Math.min(a, b));
  const end = pct(Math.max(a, b));
  return end > start ? { start, end } : null;
}

/** The window of a wheel step: `factor` > 1 zooms out, < 1 in, about `at` (the x under the pointer),
 *  kept inside `extent`. */
export function wheelWindow(window: [number, number], extent: [number, number], at: number, factor: number): [number, number] {
  const [lo, hi] = window;
  const min = Math.max(extent[0], at - (at - lo) * factor);
  const max = Math.min(extent[1], at + (hi - at) * factor);
  return [min, max];
}

/** The zoom factor of one wheel event: 1.25x out (0.8x in) per notch of a mouse wheel (100 px), less for
 *  the small steps of a trackpad's many events; 1 for a horizontal swipe (no vertical delta). */
export function wheelFactor(deltaY: number, deltaMode = 0): number {
  const px = deltaMode === 1 ? (deltaY * 100) / 3 : deltaMode === 2 ? deltaY * 400 : deltaY; // lines (a notch is 3), pages
  return 1.25 ** Math.max(-1, Math.min(1, px / 100));
}

/** Decimal places of `x` (at most 12): 0.25 has 2, 100 has 0, 2e-6 has 6. */
function decimalsOf(x: number): number {
  let d = 0;
  for (; d < 12; d += 1) {
    const scaled = x * 10 ** d;
    if (Math.abs(Math.round(scaled) - scaled) <= 1e-6 * Math.max(1, Math.abs(scaled))) break;
  }
  return d;
}

/** An axis' tick labels: `incr` is the distance between two ticks (the labels get the digits it needs; a
 *  log axis passes the tick itself); whole numbers grouped by thousands, tiny and huge fractions in
 *  exponent form. No Intl: ICU's number formatting costs 50-140 ms on its first use on a slow CPU
 *  (docs/benchmarks.md), which would fall on the run page's first chart. */
export function tickLabel(v: number, incr: number): string {
  if (!Number.isFinite(v)) return '';
  const abs = Math.abs(v);
  const step = Math.abs(incr) || abs;
  const wholeTicks = Number.isInteger(v) && step >= 1;
  if (abs !== 0 && !wholeTicks && (abs >= 1e7 || abs < 1e-4)) {
    // as many significant digits as tell two ticks apart
    const digits = Math.max(1, Math.min(15, Math.ceil(Math.log10(abs / step) + 1e-9) + 1));
    return Number(v.toPrecision(digits)).toExponential();
  }
  const text = v.toFixed(wholeTicks ? 0 : decimalsOf(step));
  if (/^-0(\.0*)?$/.test(text)) return text.slice(1);
  const [int, frac] = text.split('.');
  const grouped = int!.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return frac === undefined ? grouped : `${grouped}.${frac}`;
}
