// Overlaid curves of several runs: one line per run (the last value of each bucket), named by the run
// id and the params that differ between the shown runs.
import type { MetricsResponse, Run } from '../api/types';
import { bucketsToSeries } from './buckets';
import { runLabel, varyingParams } from './labels';

export interface OverlaySeries {
  runId: number;
  name: string;
  /** [step, last value] per bucket */
  points: [number, number][];
}

/** `responses[i]` is the metrics answer for `runs[i]` (undefined while it loads: an empty line). */
export function overlaySeries(
  runs: readonly Pick<Run, 'id' | 'params'>[],
  responses: readonly (MetricsResponse | undefined)[],
  metricKey: string,
): OverlaySeries[] {
  const keys = varyingParams(runs);
  return runs.map((r, i) => ({
    runId: r.id,
    name: runLabel(r, keys),
    points: bucketsToSeries(responses[i]?.series[metricKey]?.buckets ?? []).line,
  }));
}
