// Shapes the downsampled metric API (buckets of min / max / last over step ranges) into chart series.
// A bucket's `max` keeps a spike visible however coarse the buckets are; the line is `last`.
import type { MetricsResponse } from '../api/types';

/** One bucket of `GET /runs/{id}/metrics`: min / max over the finite values of a step range, the last
 *  value (null where it is NaN or infinite: `last_nonfinite` says which), and how many points were not
 *  finite (`nonfinite`). */
export type Bucket = Series['buckets'][number];
/** One metric key's downsampled series. */
export type Series = MetricsResponse['series'][string];

export interface BandSeries {
  /** [step, last] per bucket, at the bucket's last step. */
  line: [number, number][];
  /** [step, min] per bucket: the band's lower edge. */
  lower: [number, number][];
  /** [step, max - min] per bucket: stacked on `lower` to draw the band. */
  width: [number, number][];
  /** true when any bucket aggregates more than one point (draw the band). */
  hasBand: boolean;
}

/** Non-finite values (NaN, inf are stored as given) would break a stacked band: they become gaps. */
function finite(v: number | null): number | null {
  return v !== null && Number.isFinite(v) ? v : null;
}

export function bucketsToSeries(buckets: readonly Bucket[]): BandSeries {
  const line: [number, number][] = [];
  const lower: [number, number][] = [];
  const width: [number, number][] = [];
  let hasBand = false;
  for (const b of buckets) {
    const step = b.step_end;
    const last = finite(b.last);
    const lo = finite(b.min);
    const hi = finite(b.max);
    if (last !== null) line.push([step, last]);
    if (lo !== null && hi !== null) {
      lower.push([step, lo]);
      width.push([step, hi - lo]);
      if (b.count > 1 && hi > lo) hasBand = true;
    }
  }
  return { line, lower, width, hasBand };
}

/** Fraction of the full range below which a zoom asks the API for finer buckets. */
export const ZOOM_REFETCH_FRACTION = 0.9;

export interface StepRange {
  min: number;
  max: number;
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

/**
 * The step range a zoom of [startPct, endPct] (0..100) selects over the full range, or null when the
 * zoom covers (nearly) everything and the overview buckets are enough.
 */
export function zoomToStepRange(full: StepRange, startPct: number, endPct: number): StepRange | null {
  const w = zoomWindow([full.min, full.max], { start: startPct, end: endPct });
  if (!w || (w[1] - w[0]) / (full.max - full.min) >= ZOOM_REFETCH_FRACTION) return null;
  return { min: Math.floor(w[0]), max: Math.ceil(w[1]) };
}

/** The zoom (percent of `next`) that shows the same steps as `zoom` did over `prev`: a live run's step
 *  range grows under a zoomed chart, whose window must stay on the steps the user chose. */
export function rezoom(zoom: { start: number; end: number }, prev: StepRange, next: StepRange): { start: number; end: number } {
  if (zoom.start <= 0 && zoom.end >= 100) return zoom;
  const w = zoomWindow([prev.min, prev.max], zoom);
  return (w && zoomOfWindow([next.min, next.max], w[0], w[1])) ?? zoom;
}

/** Merges finer buckets of a zoomed range into the overview: overview outside, fine inside. */
export function mergeZoomed(overview: readonly Bucket[], fine: readonly Bucket[], range: StepRange): Bucket[] {
  const before = overview.filter((b) => b.step_end < range.min);
  const after = overview.filter((b) => b.step_start > range.max);
  return [...before, ...fine, ...after];
}
