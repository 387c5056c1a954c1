// One metric of one run, downsampled: a min/max band (spikes survive) under the last-value line. A
// pure chart: the shaped view in (hooks/metrics.ts useZoomableMetric), the picture and zoom gestures out.
// Drawn by uPlot (LinePlot.tsx, options in metricPlot.ts): ~50 KB against ECharts' ~540 KB, which the run
// page parsed and ran before its first chart (docs/benchmarks.md, "Dashboard in the browser").
import { Button, Group, Text } from '@mantine/core';
import { memo, useCallback, useMemo, useRef } from 'react';
import type { MetricView, Zoom } from '../../hooks/metrics';
import { bucketsTable } from '../../lib/chartTable';
import { formatValue } from '../../lib/dotted';
import { metricFrame } from '../../lib/metricFrame';
import { DEFAULT_CHART_OPTIONS, formatSeconds, isSystemKey, pointAt, xAxisName, xIsTime, type ChartOptions } from '../../lib/metricPanels';
import { formatCount } from '../../lib/plainFormat';
import { LinePlot } from './LinePlot';
import { metricPlotOptions, plotData } from './metricPlot';

interface Props {
  metricKey: string;
  view: MetricView;
  /** a zoom gesture (a dragged window, the wheel, a double click, "Show all") moved the window */
  onZoom: (zoom: Zoom) => void;
  height?: number;
  /** log scale, smoothing, x axis (lib/metricPanels.ts) */
  options?: ChartOptions;
  /** relative time's origin (ms since the epoch) */
  originMs?: number | null;
}

function MetricChartImpl({ metricKey, view, onZoom, height = 280, options = DEFAULT_CHART_OPTIONS, originMs = null }: Props) {
  const { series, buckets, full, zoom, range } = view;
  const overview = series.buckets;
  const frame = useMemo(() => metricFrame(buckets, full, zoom, options, originMs, overview), [buckets, full, zoom, options, originMs, overview]);
  const data = useMemo(() => plotData(frame), [frame]);
  // the chart's hooks read the frame drawn now and report to the caller of now
  const live = useRef({ frame, onZoom });
  live.current = { frame, onZoom };
  const plotOptions = useMemo(
    () => () => metricPlotOptions(metricKey, options, { frame: () => live.current.frame, onZoom: (z) => live.current.onZoom(z) }),
    [metricKey, options],
  );
  const zoomed = zoom.start > 0 || zoom.end < 100;
  const table = useCallback(() => bucketsTable(metricKey, buckets), [metricKey, buckets]);

  if (series.total_points === 1) {
    // a single value (a final score) reads better as a number than as a one-point chart
    const b = series.buckets[0];
    return (
      <div data-testid={`metric-chart-${metricKey}`} data-points={1}>
        <Text size="sm" fw={600}>{metricKey}</Text>
        <Text size="xl" ff="monospace">{formatValue(b?.last)}</Text>
        <Text size="xs" c="dimmed">{b ? pointAt(metricKey, b.step_end) : null}</Text>
      </div>
    );
  }
  return (
    <div
      data-testid={`metric-chart-${metricKey}`}
      data-points={series.total_points}
      data-buckets={buckets.length}
      data-range={range ? `${range.min}-${range.max}` : ''}
      data-window={frame.window ? frame.window.map((x) => Math.round(x)).join('-') : ''}
      data-refined={view.refined ? 'true' : 'false'}
      data-x-axis={options.xAxis}
      data-x-name={xAxisName(metricKey, options.xAxis)}
      data-y-scale={options.logScale ? 'log' : 'linear'}
      data-smoothing={options.smoothing}
      data-nonfinite={buckets.reduce((n, b) => n + (b.nonfinite ?? 0), 0)}
    >
      <Text size="sm" fw={600} px={8}>{metricKey}</Text>
      {/* another axis type (step, time, log) is another chart: uPlot's options are set once */}
      <LinePlot
        key={`${options.xAxis}-${options.logScale}`}
        options={plotOptions}
        data={data}
        xRange={frame.window}
        height={height}
        ariaLabel={`${metricKey} over ${xIsTime(metricKey, options.xAxis) ? 'time' : 'steps'}`}
        table={table}
      />
      <Group gap="xs" justify="flex-end">
        {zoomed ? (
          <Button size="compact-xs" variant="subtle" onClick={() => onZoom({ start: 0, end: 100 })}>
            Show all
          </Button>
        ) : null}
        <Text size="xs" c="dimmed">
          {formatCount(series.total_points)} points
          {range
            ? isSystemKey(metricKey)
              ? ` · ${formatSeconds(range.min)}–${formatSeconds(range.max)} after creation at finer resolution`
              : ` · steps ${formatCount(range.min)}–${formatCount(range.max)} at finer resolution`
            : ` · ${buckets.length} buckets`}
          {frame.notPositive > 0 ? ` · ${formatCount(frame.notPositive)} buckets not drawn: not positive on a log scale` : ''}
          {frame.dropped > frame.notPositive ? ` · ${formatCount(frame.dropped - frame.notPositive)} buckets not drawn: no time logged` : ''}
          {view.refining ? ' · refining…' : ''}
        </Text>
      </Group>
    </div>
  );
}

export const MetricChart = memo(MetricChartImpl);
