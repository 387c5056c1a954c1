// A run's metric chart: the zoomable, live-refreshed series (hooks/metrics.ts) drawn by the pure
// MetricChart under the chart's options (log scale, smoothing, x axis: lib/metricPanels.ts).
import { Loader, Text } from '@mantine/core';
import { memo, useMemo } from 'react';
import { errorMessage } from '../../api/errors';
import { useZoomableMetric, type Zoom } from '../../hooks/metrics';
import { ZOOM_REFETCH_FRACTION, type Bucket } from '../../lib/buckets';
import { bucketX, DEFAULT_CHART_OPTIONS, relativeOrigin, zoomToStepRangeByX, type ChartOptions } from '../../lib/metricPanels';
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

// over time the zoom window is a time window: its steps are read off the overview's buckets, in wall-clock
// time whatever the axis shows (a zoom's percentages are the same of relative time, which only shifts it)
function timeToRange(z: Zoom, overview: readonly Bucket[]) {
  const xs = overview.map((b) => bucketX(b, 'time', null));
  return zoomToStepRangeByX(overview, xs, z.start, z.end, ZOOM_REFETCH_FRACTION);
}

function RunMetricChartImpl({ runId, metricKey, latestStep = -1, options = DEFAULT_CHART_OPTIONS, startedAt = null }: Props) {
  const mode = options.xAxis;
  const { isPending, error, view, onZoom } = useZoomableMetric(runId, metricKey, latestStep, {
    withTime: mode !== 'step',
    toRange: mode === 'step' ? undefined : timeToRange,
  });
  const overview = view?.series.buckets;
  const originMs = useMemo(() => relativeOrigin(startedAt, overview ?? []), [startedAt, overview]);
  if (isPending) return <Loader size="sm" />;
  if (error) return <Text c="red">{errorMessage(error)}</Text>;
  if (!view) return <Text c="dimmed">No points for {metricKey} yet.</Text>;
  return <MetricChart metricKey={metricKey} view={view} onZoom={onZoom} options={options} originMs={originMs} />;
}

export const RunMetricChart = memo(RunMetricChartImpl);
