// One metric of one run from the downsampled API: a min/max band (spikes survive) under the
// last-value line. Zooming (wheel, drag, slider) asks the API for finer buckets of the zoomed steps.
import { Group, Loader, Text } from '@mantine/core';
import { useDebouncedCallback } from '@mantine/hooks';
import { memo, useEffect, useMemo, useRef, useState } from 'react';
import { useMetrics } from '../../hooks/metrics';
import { bucketsToSeries, mergeZoomed, zoomToStepRange, type Bucket, type StepRange } from '../../lib/buckets';
import { formatValue } from '../../lib/dotted';
import { EChart } from './EChart';
import type { EChartsOption } from './echarts';

/** Milliseconds a zoom gesture must rest before the finer buckets are fetched. */
export const ZOOM_DEBOUNCE_MS = 200;
/** Up to this many points a series draws its point markers. */
const FEW_POINTS = 60;

interface ZoomEvent {
  start?: number;
  end?: number;
  batch?: { start?: number; end?: number }[];
}

export function bandOption(key: string, buckets: readonly Bucket[], full: StepRange | null, zoom: { start: number; end: number }): EChartsOption {
  const s = bucketsToSeries(buckets);
  return {
    animation: false,
    grid: { left: 56, right: 16, top: 28, bottom: 56 },
    title: { text: key, left: 8, top: 0, textStyle: { fontSize: 13, fontWeight: 600 } },
    tooltip: {
      trigger: 'axis',
      valueFormatter: (v: unknown) => formatValue(v),
    },
    xAxis: { type: 'value', name: 'step', nameLocation: 'middle', nameGap: 24, min: full?.min, max: full?.max, scale: true },
    yAxis: { type: 'value', scale: true },
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
      {
        name: key, type: 'line', data: s.line, lineStyle: { width: 1.5, color: '#1c7ed6' }, itemStyle: { color: '#1c7ed6' },
        // few points: show them; many: a plain line
        symbol: s.line.length <= FEW_POINTS ? 'circle' : 'none', symbolSize: 4,
      },
    ],
  };
}

/**
 * `latestStep` is the newest step the run's event stream reported for this key; the chart refetches
 * only when it is past what the drawn series already holds, and at most every LIVE_REFRESH_MS (a
 * downsampled query over a long series is not free, and the stream reports twice a second).
 */
export const LIVE_REFRESH_MS = 1000;

function MetricChartImpl({ runId, metricKey, latestStep = -1, height = 280 }: { runId: number; metricKey: string; latestStep?: number; height?: number }) {
  const [zoom, setZoom] = useState({ start: 0, end: 100 });
  const [range, setRange] = useState<StepRange | null>(null);
  const [version, setVersion] = useState(0);
  const overview = useMetrics(runId, [metricKey], null, version);
  const drawnMax = overview.data?.series?.[metricKey]?.step_max ?? -1;
  const behind = !overview.isPending && !overview.isFetching && latestStep > drawnMax;
  const latestRef = useRef(latestStep);
  latestRef.current = latestStep;
  useEffect(() => {
    // a throttle, not a debounce: the stream keeps reporting, the timer must not restart on each report
    if (!behind) return;
    const t = setTimeout(() => setVersion(latestRef.current), LIVE_REFRESH_MS);
    return () => clearTimeout(t);
  }, [behind]);
  const fine = useMetrics(runId, range ? [metricKey] : [], range);
  const series = overview.data?.series?.[metricKey];
  const full = series && series.step_min != null && series.step_max != null ? { min: series.step_min, max: series.step_max } : null;

  const buckets = useMemo(() => {
    const base = series?.buckets ?? [];
    const zoomed = range ? fine.data?.series?.[metricKey]?.buckets : undefined;
    return range && zoomed ? mergeZoomed(base, zoomed, range) : base;
  }, [series, fine.data, range, metricKey]);

  const requestRange = useDebouncedCallback((start: number, end: number) => {
    setRange(full ? zoomToStepRange(full, start, end) : null);
  }, ZOOM_DEBOUNCE_MS);

  const option = useMemo(() => bandOption(metricKey, buckets, full, zoom), [metricKey, buckets, full?.min, full?.max, zoom]); // eslint-disable-line react-hooks/exhaustive-deps
  const on = useMemo(
    () => ({
      datazoom: (p: unknown) => {
        const e = p as ZoomEvent;
        const z = e.batch?.[0] ?? e;
        if (z.start === undefined || z.end === undefined) return;
        setZoom({ start: z.start, end: z.end });
        requestRange(z.start, z.end);
      },
    }),
    [requestRange],
  );

  if (overview.isPending) return <Loader size="sm" />;
  if (!series || series.total_points === 0) return <Text c="dimmed">No points for {metricKey} yet.</Text>;
  if (series.total_points === 1) {
    // a single value (a final score) reads better as a number than as a one-point chart
    const b = series.buckets[0];
    return (
      <div data-testid={`metric-chart-${metricKey}`} data-points={1}>
        <Text size="sm" fw={600}>{metricKey}</Text>
        <Text size="xl" ff="monospace">{formatValue(b?.last)}</Text>
        <Text size="xs" c="dimmed">at step {b?.step_end}</Text>
      </div>
    );
  }
  return (
    <div
      data-testid={`metric-chart-${metricKey}`}
      data-points={series.total_points}
      data-buckets={buckets.length}
      data-range={range ? `${range.min}-${range.max}` : ''}
      data-refined={range && fine.data && !fine.isFetching ? 'true' : 'false'}
    >
      <EChart option={option} on={on} height={height} notMerge={false} ariaLabel={`${metricKey} over steps`} />
      <Group gap="xs" justify="flex-end">
        <Text size="xs" c="dimmed">
          {series.total_points.toLocaleString()} points
          {range ? ` · steps ${range.min.toLocaleString()}–${range.max.toLocaleString()} at finer resolution` : ` · ${buckets.length} buckets`}
          {fine.isFetching ? ' · refining…' : ''}
        </Text>
      </Group>
    </div>
  );
}

export const MetricChart = memo(MetricChartImpl);
