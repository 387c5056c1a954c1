// A run's metric chart: the zoomable, live-refreshed series (hooks/metrics.ts) drawn by the pure
// MetricChart under the chart's options (log scale, smoothing, x axis: lib/metricPanels.ts).
import { Loader, Text } from '@mantine/core';
import { memo, useCallback, useMemo, useRef } from 'react';
import { errorMessage } from '../../api/errors';
import { useZoomableMetric, type XExtent, type Zoom } from '../../hooks/metrics';
import { ZOOM_REFETCH_FRACTION, type Bucket } from '../../lib/buckets';
import { bucketX, DEFAULT_CHART_OPTIONS, drawnExtent, relativeOrigin, zoomToStepRangeByX, type ChartOptions } from '../../lib/metricPanels';
import { MetricChart } from '../charts/MetricChart';

interface Props {
  runId: number;
  metricKey: string;
  /** the newest step the run's event stream reported for this key (-1: none) */
  latestStep?: number;
  options?: ChartOptions;
  /** the run's start (ISO), the origin of relative time */
  startedAt?: string | null;
}

function RunMetricChartImpl({ runId, metricKey, latestStep = -1, options = DEFAULT_CHART_OPTIONS, startedAt = null }: Props) {
  const overviewRef = useRef<readonly Bucket[]>([]);
  const originRef = useRef<number | null>(null);
  const mode = options.xAxis;
  // over time the zoom window is a time window: its steps are read off the drawn buckets
  const toRange = useCallback(
    (z: Zoom) => {
      const buckets = overviewRef.current;
      const xs = buckets.map((b) => bucketX(b, mode, originRef.current));
      return zoomToStepRangeByX(buckets, xs, z.start, z.end, ZOOM_REFETCH_FRACTION);
    },
    [mode],
  );
  // the drawn times' extent, in wall-clock time whatever the axis shows: a live run's zoom over time stays on
  // the times chosen, also where relative time's origin moves (a run without a start counts from its first
  // bucket's time, which moves as the buckets widen)
  const extentOf = useCallback(
    (buckets: readonly Bucket[]): XExtent | null => {
      const e = drawnExtent(buckets, 'time', null);
      return e && { axis: mode, min: e[0], max: e[1] };
    },
    [mode],
  );
  const { isPending, error, view, onZoom } = useZoomableMetric(runId, metricKey, latestStep, {
    withTime: mode !== 'step',
    toRange: mode === 'step' ? undefined : toRange,
    extentOf,
  });
  const overview = view?.series.buckets;
  const originMs = useMemo(() => relativeOrigin(startedAt, overview ?? []), [startedAt, overview]);
  overviewRef.current = overview ?? [];
  originRef.current = originMs;
  if (isPending) return <Loader size="sm" />;
  if (error) return <Text c="red">{errorMessage(error)}</Text>;
  if (!view) return <Text c="dimmed">No points for {metricKey} yet.</Text>;
  return <MetricChart metricKey={metricKey} view={view} onZoom={onZoom} options={options} originMs={originMs} />;
}

export const RunMetricChart = memo(RunMetricChartImpl);
