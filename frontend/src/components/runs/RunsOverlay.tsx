// One metric of several runs overlaid: their series (hooks/metrics.ts) drawn by the pure OverlayChart.
import { Loader, Text } from '@mantine/core';
import { memo } from 'react';
import { OVERLAY_MAX_RUNS, useOverlaySeries, type OverlayRun } from '../../hooks/metrics';
import { OverlayChart } from '../charts/OverlayChart';

function RunsOverlayImpl({ runs, metricKey }: { runs: readonly OverlayRun[]; metricKey: string }) {
  const { isPending, series } = useOverlaySeries(runs, metricKey);
  if (runs.length === 0) return <Text c="dimmed">Select runs to overlay their curves.</Text>;
  if (isPending) return <Loader size="sm" />;
  return (
    <>
      {runs.length > OVERLAY_MAX_RUNS && <Text size="xs" c="dimmed">Showing the first {OVERLAY_MAX_RUNS} of {runs.length} selected runs.</Text>}
      <OverlayChart metricKey={metricKey} series={series} />
    </>
  );
}

export const RunsOverlay = memo(RunsOverlayImpl);
