// One metric of one run, downsampled: a min/max band (spikes survive) under the last-value line. A
// pure chart: the shaped view in (hooks/metrics.ts useZoomableMetric), the picture and zoom gestures out.
import { Group, Text } from '@mantine/core';
import { memo, useMemo } from 'react';
import type { MetricView, Zoom } from '../../hooks/metrics';
import { type Bucket, type StepRange } from '../../lib/buckets';
import { DEFAULT_CHART_OPTIONS, formatSeconds, isSystemKey, pointAt, shapeSeries, withBreaks, xAxisName, xIsTime, type ChartOptions } from '../../lib/metricPanels';
import { formatValue } from '../../lib/dotted';
import { bucketsTable } from '../../lib/chartTable';
import { EChart } from './EChart';
import type { EChartsOption } from './echarts';
import { formatCount } from '../../lib/plainFormat';

/** Up to this many points a series draws its point markers. */
const FEW_POINTS = 60;

interface ZoomEvent {
  start?: number;
  end?: number;
  batch?: { start?: number; end?: number }[];
}

/** A vertical dashed line, labelled, at each bucket holding NaN or infinite values ("NaN", "Infinity"). */
export function nonfiniteMarks(marks: readonly { x: number; label: string }[]) {
  return {
    silent: false,
    symbol: 'none',
    animation: false,
    lineStyle: { type: 'dashed', color: '#e8590c', width: 1 },
    label: { formatter: '{b}', position: 'insideEndTop', color: '#e8590c', fontSize: 10 },
    tooltip: { trigger: 'item', formatter: (p: { name?: string; value?: unknown }) => `${p.name ?? ''} at ${String(p.value)}` },
    data: marks.map((m) => ({ xAxis: m.x, name: m.label })),
  };
}

export function bandOption(
  key: string,
  buckets: readonly Bucket[],
  full: StepRange | null,
  zoom: Zoom,
  options: ChartOptions = DEFAULT_CHART_OPTIONS,
  originMs: number | null = null,
): EChartsOption {
  const s = shapeSeries(buckets, options, originMs);
  const smoothed = options.smoothing > 0;
  const name = xAxisName(key, options.xAxis);
  // a system metric's step is seconds since the run was created (worker/runtime/sysmetrics.py):
  // labelled as time
  const seconds = { axisLabel: { formatter: (v: number) => formatSeconds(v) } };
  const xAxis =
    options.xAxis === 'step'
      ? { type: 'value', name, nameLocation: 'middle', nameGap: 24, min: full?.min, max: full?.max, scale: true, ...(isSystemKey(key) ? seconds : {}) }
      : options.xAxis === 'time'
        ? { type: 'time', name, nameLocation: 'middle', nameGap: 24, scale: true }
        : { type: 'value', name, nameLocation: 'middle', nameGap: 24, scale: true, ...seconds };
  return {
    animation: false,
    grid: { left: 56, right: 16, top: 28, bottom: 56 },
    title: { text: key, left: 8, top: 0, textStyle: { fontSize: 13, fontWeight: 600 } },
    tooltip: {
      trigger: 'axis',
      valueFormatter: (v: unknown) => formatValue(v),
    },
    xAxis,
    yAxis: options.logScale ? { type: 'log', scale: true } : { type: 'value', scale: true },
    dataZoom: [
      { type: 'inside', xAxisIndex: 0, filterMode: 'none', start: zoom.start, end: zoom.end },
      { type: 'slider', xAxisIndex: 0, filterMode: 'none', height: 18, bottom: 4, start: zoom.start, end: zoom.end },
    ],
    series: [
      { name: 'min', type: 'line', data: s.hasBand ? s.lower : [], stack: 'band', symbol: 'none', lineStyle: { opacity: 0 }, silent: true, tooltip: { show: false } },
      {
        name: 'max − min', type: 'line', data: s.hasBand ? s.width : [], stack: 'band', symbol: 'none', lineStyle: { opacity: 0 },
        areaStyle: { color: 'rgba(34, 139, 230, 0.18)' }, silent: true, tooltip: { show: false },
      },
      // smoothing: the raw values stay visible, faint, under the smoothed line
      {
        name: 'raw', type: 'line', data: withBreaks(s.raw, s.breaks), symbol: 'none', lineStyle: { width: 1, color: '#1c7ed6', opacity: 0.3 },
        silent: true, tooltip: { show: false },
      },
      {
        name: smoothed ? `${key} (smoothed)` : key, type: 'line', data: withBreaks(s.line, s.breaks), lineStyle: { width: 1.5, color: '#1c7ed6' }, itemStyle: { color: '#1c7ed6' },
        // few points: show them; many: a plain line
        symbol: s.line.length <= FEW_POINTS ? 'circle' : 'none', symbolSize: 4,
        // NaN and infinities: the line breaks there (shapeSeries), a dashed mark says what was logged (only
        // then: a mark line loads echartsFull.ts, which a run page's plain charts do without)
        markLine: s.nonfinite.length > 0 ? nonfiniteMarks(s.nonfinite) : undefined,
      },
    ],
  };
}

interface Props {
  metricKey: string;
  view: MetricView;
  /** a zoom gesture (wheel, drag, slider) moved the window */
  onZoom: (zoom: Zoom) => void;
  height?: number;
  /** log scale, smoothing, x axis (lib/metricPanels.ts) */
  options?: ChartOptions;
  /** relative time's origin (ms since the epoch) */
  originMs?: number | null;
}

function MetricChartImpl({ metricKey, view, onZoom, height = 280, options = DEFAULT_CHART_OPTIONS, originMs = null }: Props) {
  const { series, buckets, full, zoom, range } = view;
  const option = useMemo(
    () => bandOption(metricKey, buckets, full, zoom, options, originMs),
    [metricKey, buckets, full, zoom, options, originMs],
  );
  const on = useMemo(
    () => ({
      datazoom: (p: unknown) => {
        const e = p as ZoomEvent;
        const z = e.batch?.[0] ?? e;
        if (z.start !== undefined && z.end !== undefined) onZoom({ start: z.start, end: z.end });
      },
    }),
    [onZoom],
  );

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
      data-refined={view.refined ? 'true' : 'false'}
      data-x-axis={options.xAxis}
      data-x-name={xAxisName(metricKey, options.xAxis)}
      data-y-scale={options.logScale ? 'log' : 'linear'}
      data-smoothing={options.smoothing}
      data-nonfinite={buckets.reduce((n, b) => n + (b.nonfinite ?? 0), 0)}
    >
      {/* an axis type change (value -> time -> log) is a new chart option, not a merge into the old one */}
      <EChart
        key={`${options.xAxis}-${options.logScale}`}
        option={option}
        on={on}
        height={height}
        notMerge={false}
        ariaLabel={`${metricKey} over ${xIsTime(metricKey, options.xAxis) ? 'time' : 'steps'}`}
        data={() => bucketsTable(metricKey, buckets)}
      />
      <Group gap="xs" justify="flex-end">
        <Text size="xs" c="dimmed">
          {formatCount(series.total_points)} points
          {range
            ? isSystemKey(metricKey)
              ? ` · ${formatSeconds(range.min)}–${formatSeconds(range.max)} after creation at finer resolution`
              : ` · steps ${formatCount(range.min)}–${formatCount(range.max)} at finer resolution`
            : ` · ${buckets.length} buckets`}
          {view.refining ? ' · refining…' : ''}
        </Text>
      </Group>
    </div>
  );
}

export const MetricChart = memo(MetricChartImpl);
