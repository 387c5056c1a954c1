// What a run's metric chart draws, as columns over one x (the layout of a uPlot chart, components/charts/
// LinePlot.tsx): per bucket its x under the axis mode, the line (smoothed if asked), the raw values under a
// smoothed line, the min/max band; the gaps where a NaN or an infinity was logged; the x window of a zoom.
// Pure: tested without a browser (metricFrame.test.ts).
import { zoomWindow, type Bucket, type StepRange } from './buckets';
import { formatCount } from './plainFormat';
import { drawnExtent, shapeColumns, type ChartOptions, type ShapedColumns } from './metricPanels';

export { zoomOfWindow, zoomWindow } from './buckets';

export interface MetricFrame extends ShapedColumns {
  /** the extent a zoom's percentages are of: the run's step range on a step axis, else the drawn x's */
  extent: [number, number] | null;
  /** the x window the zoom selects (null: let the chart range itself over the data) */
  window: [number, number] | null;
}

/** The chart's columns (shapeColumns) with the band only where some bucket aggregates several values, and
 *  the x window of the zoom. The zoom is in percent of the x extent: the run's step range on a step axis,
 *  else the drawn extent of the `overview` (the buckets without a zoom's finer ones, as the zoom's hook
 *  and its step ranges read it: hooks/metrics.ts). */
export function metricFrame(
  buckets: readonly Bucket[],
  full: StepRange | null,
  zoom: { start: number; end: number },
  options: ChartOptions,
  originMs: number | null = null,
  overview: readonly Bucket[] = buckets,
): MetricFrame {
  const c = shapeColumns(buckets, options, originMs);
  const none = c.hasBand ? null : c.xs.map(() => undefined);
  const extent = options.xAxis === 'step' && full ? ([full.min, full.max] as [number, number]) : drawnExtent(overview, options.xAxis, originMs);
  return { ...c, lower: none ?? c.lower, upper: none ?? c.upper, extent, window: zoomWindow(extent, zoom) };
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
  // the whole part grouped as counts are (formatCount), the sign kept apart: -0.5's whole part is "-0"
  const [int, frac] = text.replace('-', '').split('.');
  return `${text.startsWith('-') ? '-' : ''}${formatCount(Number(int))}${frac === undefined ? '' : `.${frac}`}`;
}
