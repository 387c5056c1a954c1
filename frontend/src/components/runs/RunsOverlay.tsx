// One metric of several runs overlaid: their series (hooks/metrics.ts) drawn by the pure OverlayChart,
// with the run page's chart options (ChartOptionsMenu.tsx: log scale, smoothing; the overlay's x axis is
// the step). As on the run page, each metric's options live in the page's URL (`charts`, hooks/views.ts
// useUrlChartOptions): switching the metric and back finds them again, and a reload or a saved view too.
import { Group, Loader, Text } from '@mantine/core';
import { memo, useMemo, useState } from 'react';
import { OVERLAY_MAX_RUNS, useOverlaySeries, type OverlayRun } from '../../hooks/metrics';
import { useUrlChartOptions } from '../../hooks/views';
import type { OverlayOptions } from '../../lib/overlay';
import { OverlayChart } from '../charts/OverlayChart';
import { ChartOptionsBar, ChartOptionsButton } from './ChartOptionsMenu';

function RunsOverlayImpl({ runs, metricKey }: { runs: readonly OverlayRun[]; metricKey: string }) {
  const { optionsOf, setOptions } = useUrlChartOptions();
  const [showOptions, setShowOptions] = useState(false);
  const barOptions = optionsOf(metricKey);
  // the overlay draws over steps: its series need only the y options (a memoised query input)
  const options: OverlayOptions = useMemo(() => ({ logScale: barOptions.logScale, smoothing: barOptions.smoothing }), [barOptions]);
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
            onChange={(o) => setOptions(metricKey, o)}
          />
        ) : (
          <span />
        )}
        <ChartOptionsButton metricKey={metricKey} open={showOptions} changed={barOptions.logScale || barOptions.smoothing > 0} onToggle={() => setShowOptions((o) => !o)} />
      </Group>
      {runs.length > OVERLAY_MAX_RUNS && <Text size="xs" c="dimmed">Showing the first {OVERLAY_MAX_RUNS} of {runs.length} selected runs.</Text>}
      {isPending ? <Loader size="sm" /> : <OverlayChart metricKey={metricKey} series={series} options={options} />}
    </>
  );
}

export const RunsOverlay = memo(RunsOverlayImpl);
