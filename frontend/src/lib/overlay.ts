// Overlaid curves of several runs: one line per run (the last value of each bucket), named by the run's
// name (if it has one), its id and the params that differ between the shown runs. The chart's options
// (log scale, smoothing) shape each run's series with the run page's own function (metricPanels.ts
// shapeSeries): the same EMA, the raw values kept for a faint line under the smoothed one, and on a log
// scale the values that are not positive left out and counted.
import type { MetricsResponse, Run } from '../api/types';
import { DEFAULT_CHART_OPTIONS, shapeSeries, type ChartOptions } from './metricPanels';
import { runLabel, varyingParams } from './labels';

export interface OverlaySeries {
  runId: number;
  name: string;
  /** [step, last value] per bucket, smoothed when the options ask */
  points: [number, number][];
  /** [step, raw last value] when smoothing (drawn faint under `points`), else empty */
  raw: [number, number][];
  /** values left out: not positive on a log scale */
  dropped: number;
}

/** The overlay draws steps on x: the options it offers are log scale and smoothing. */
export type OverlayOptions = Pick<ChartOptions, 'logScale' | 'smoothing'>;

export const DEFAULT_OVERLAY_OPTIONS: OverlayOptions = { logScale: false, smoothing: 0 };

/** `responses[i]` is the metrics answer for `runs[i]` (undefined while it loads: an empty line). */
export function overlaySeries(
  runs: readonly (Pick<Run, 'id' | 'params'> & { name?: string | null })[],
  responses: readonly (MetricsResponse | undefined)[],
  metricKey: string,
  options: OverlayOptions = DEFAULT_OVERLAY_OPTIONS,
): OverlaySeries[] {
  const keys = varyingParams(runs);
  const shaping: ChartOptions = { ...DEFAULT_CHART_OPTIONS, ...options, xAxis: 'step' };
  return runs.map((r, i) => {
    const shaped = shapeSeries(responses[i]?.series[metricKey]?.buckets ?? [], shaping);
    return { runId: r.id, name: runLabel(r, keys), points: shaped.line, raw: shaped.raw, dropped: shaped.dropped };
  });
}

/** How many values of all the series a log scale leaves out (not positive). */
export const droppedOnLog = (series: readonly OverlaySeries[]): number => series.reduce((n, s) => n + s.dropped, 0);
