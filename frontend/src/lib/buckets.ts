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

/**
 * The step range a dataZoom of [startPct, endPct] (0..100) selects over the full range, or null when the
 * zoom covers (nearly) everything and the overview buckets are enough.
 */
export function zoomToStepRange(full: StepRange, startPct: number, endPct: number): StepRange | null {
  const span = full.max - full.min;
  if (span <= 0) return null;
  const lo = Math.max(0, Math.min(100, startPct)) / 100;
  const hi = Math.max(0, Math.min(100, endPct)) / 100;
  if (hi - lo >= ZOOM_REFETCH_FRACTION) return null;
  return { min: Math.floor(full.min + lo * span), max: Math.ceil(full.min + hi * span) };
}

/** The zoom (percent of `next`) that shows the same steps as `zoom` did over `prev`: a live run's step
 *  range grows under a zoomed chart, whose window must stay on the steps the user chose. */
export function rezoom(zoom: { start: number; end: number }, prev: StepRange, next: StepRange): { start: number; end: number } {
  const was = prev.max - prev.min;
  const span = next.max - next.min;
  if (was <= 0 || span <= 0 || (zoom.start <= 0 && zoom.end >= 100)) return zoom;
  const pct = (step: number) => Math.max(0, Math.min(100, ((step - next.min) / span) * 100));
  return { start: pct(prev.min + (zoom.start / 100) * was), end: pct(prev.min + (zoom.end / 100) * was) };
}

/** Merges finer buckets of a zoomed range into the overview: overview outside, fine inside. */
export function mergeZoomed(overview: readonly Bucket[], fine: readonly Bucket[], range: StepRange): Bucket[] {
  const before = overview.filter((b) => b.step_end < range.min);
  const after = overview.filter((b) => b.step_start > range.max);
  return [...before, ...fine, ...after];
}
