// A run's metric chart: the zoomable, live-refreshed series (hooks/metrics.ts) drawn by the pure
// MetricChart.
import { Loader, Text } from '@mantine/core';
import { memo } from 'react';
import { errorMessage } from '../../api/errors';
import { useZoomableMetric } from '../../hooks/metrics';
import { MetricChart } from '../charts/MetricChart';

/** `latestStep`: the newest step the run's event stream reported for this key (-1: none). */
function RunMetricChartImpl({ runId, metricKey, latestStep = -1 }: { runId: number; metricKey: string; latestStep?: number }) {
  const { isPending, error, view, onZoom } = useZoomableMetric(runId, metricKey, latestStep);
  if (isPending) return <Loader size="sm" />;
  if (error) return <Text c="red">{errorMessage(error)}</Text>;
  if (!view) return <Text c="dimmed">No points for {metricKey} yet.</Text>;
  return <MetricChart metricKey={metricKey} view={view} onZoom={onZoom} />;
}

export const RunMetricChart = memo(RunMetricChartImpl);
