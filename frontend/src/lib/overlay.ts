// Overlaid curves of several runs: one line per run (the last value of each bucket), named by the run's
// name (if it has one), its id and the params that differ between the shown runs. The chart's options
// (log scale, smoothing) shape each run's series with the run page's own function (metricPanels.ts
// shapeSeries): the same EMA, the raw values kept for a faint line under the smoothed one, and on a log
// scale the values that are not positive left out and counted.
import type { MetricsResponse, Run } from '../api/types';
import { DEFAULT_CHART_OPTIONS, shapeSeries, type ChartOptions } from './metricPanels';
import { runLabel, varyingParams } from './labels';
import type { Cell, DataTable } from './tableExport';

export interface OverlaySeries {
  runId: number;
  name: string;
  /** [step, last value] per bucket, smoothed when the options ask */
  points: [number, number][];
  /** [step, raw last value] when smoothing (drawn faint under `points`), else empty */
  raw: [number, number][];
  /** values left out: not positive on a log scale */
  dropped: number;
  /** steps whose value is NaN or infinite: the drawn line breaks there (metricPanels.ts withBreaks) */
  breaks: number[];
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
    return { runId: r.id, name: runLabel(r, keys), points: shaped.line, raw: shaped.raw, dropped: shaped.dropped, breaks: shaped.breaks };
  });
}

/** How many values of all the series a log scale leaves out (not positive). */
export const droppedOnLog = (series: readonly OverlaySeries[]): number => series.reduce((n, s) => n + s.dropped, 0);

/**
 * What the overlay draws, as the table its "Download data" writes: the long form every line chart's table
 * has (lib/chartTable.ts: `series` = the run's legend label, `step`, the metric's value), and when smoothing
 * the smoothed value beside the raw one (the chart's raw and smoothed lines share the run's name, which the
 * table derived from the option could not tell apart).
 */
export function overlayTable(metricKey: string, series: readonly OverlaySeries[], options: OverlayOptions = DEFAULT_OVERLAY_OPTIONS): DataTable {
  const smoothed = options.smoothing > 0;
  const run: Cell[] = [];
  const step: Cell[] = [];
  const value: Cell[] = [];
  const smooth: Cell[] = [];
  for (const s of series) {
    const bySmoothed = new Map(s.points);
    const rows: [number, number | null][] = smoothed ? s.raw : s.points;
    // a step with a smoothed value but no raw one (a log scale keeps a positive average of a value <= 0)
    const steps = smoothed ? [...new Set([...s.raw.map(([x]) => x), ...s.points.map(([x]) => x)])].sort((a, b) => a - b) : rows.map(([x]) => x);
    const raw = new Map(rows);
    for (const x of steps) {
      run.push(s.name);
      step.push(x);
      value.push(raw.get(x) ?? null);
      if (smoothed) smooth.push(bySmoothed.get(x) ?? null);
    }
  }
  const columns: DataTable['columns'] = [
    { name: 'series', values: run },
    { name: 'step', values: step },
    { name: metricKey, values: value },
  ];
  if (smoothed) columns.push({ name: `${metricKey} (smoothed ${options.smoothing.toFixed(2)})`, values: smooth });
  return { columns };
}
