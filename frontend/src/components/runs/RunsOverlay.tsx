// One metric of several runs overlaid: their series (hooks/metrics.ts) drawn by the pure OverlayChart,
// with the run page's chart options (ChartOptionsMenu.tsx: log scale, smoothing; the overlay's x axis is
// the step). As on the run page, each chart keeps its own options while the page is open: here one set
// per metric, so switching the metric and back finds them again.
import { Group, Loader, Text } from '@mantine/core';
import { memo, useMemo, useState } from 'react';
import { OVERLAY_MAX_RUNS, useOverlaySeries, type OverlayRun } from '../../hooks/metrics';
import { DEFAULT_CHART_OPTIONS, type ChartOptions } from '../../lib/metricPanels';
import { DEFAULT_OVERLAY_OPTIONS, type OverlayOptions } from '../../lib/overlay';
import { OverlayChart } from '../charts/OverlayChart';
import { ChartOptionsBar, ChartOptionsButton, isDefault } from './ChartOptionsMenu';

function RunsOverlayImpl({ runs, metricKey }: { runs: readonly OverlayRun[]; metricKey: string }) {
  const [byMetric, setByMetric] = useState<Record<string, OverlayOptions>>({});
  const [showOptions, setShowOptions] = useState(false);
  const options = byMetric[metricKey] ?? DEFAULT_OVERLAY_OPTIONS;
  const barOptions: ChartOptions = useMemo(() => ({ ...DEFAULT_CHART_OPTIONS, ...options }), [options]);
  const { isPending, series } = useOverlaySeries(runs, metricKey, options);
  if (runs.length === 0) return <Text c="dimmed">Select runs to overlay their curves.</Text>;
  return (
    <>
      <Group justify="space-between" gap="xs" wrap="nowrap" align="flex-start">
        {showOptions ? (
          <ChartOptionsBar
            metricKey={metricKey}
            options={barOptions}
            xAxis={false}
            onChange={(o) => setByMetric((m) => ({ ...m, [metricKey]: { logScale: o.logScale, smoothing: o.smoothing } }))}
          />
        ) : (
          <span />
        )}
        <ChartOptionsButton metricKey={metricKey} open={showOptions} changed={!isDefault(barOptions)} onToggle={() => setShowOptions((o) => !o)} />
      </Group>
      {runs.length > OVERLAY_MAX_RUNS && <Text size="xs" c="dimmed">Showing the first {OVERLAY_MAX_RUNS} of {runs.length} selected runs.</Text>}
      {isPending ? <Loader size="sm" /> : <OverlayChart metricKey={metricKey} series={series} options={options} />}
    </>
  );
}

export const RunsOverlay = memo(RunsOverlayImpl);
