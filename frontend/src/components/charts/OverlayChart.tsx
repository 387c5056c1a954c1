// One metric of several runs overlaid, one line per run, legend labelled by the run's name and the params
// that differ. A pure chart: series in (lib/overlay.ts via hooks/metrics.ts useOverlaySeries, shaped under
// the chart's options), picture out. Smoothed, each run's raw values stay visible, faint, in its colour
// under its smoothed line (as on the run page); the legend toggles both (they share the run's name).
import { Text } from '@mantine/core';
import { memo, useCallback, useMemo } from 'react';
import { formatValue } from '../../lib/dotted';
import { withBreaks } from '../../lib/metricPanels';
import { DEFAULT_OVERLAY_OPTIONS, droppedOnLog, overlayTable, type OverlayOptions, type OverlaySeries } from '../../lib/overlay';
import { EChart } from './EChart';
import type { EChartsOption } from './echarts';
import { formatCount } from '../../lib/plainFormat';

/** ECharts' default palette, named so a run's raw line can take its smoothed line's colour. */
export const OVERLAY_COLORS = ['#5470c6', '#91cc75', '#fac858', '#ee6666', '#73c0de', '#3ba272', '#fc8452', '#9a60b4', '#ea7ccc'];

export function overlayOption(metricKey: string, series: readonly OverlaySeries[], options: OverlayOptions = DEFAULT_OVERLAY_OPTIONS): EChartsOption {
  const smoothed = options.smoothing > 0;
  const color = (i: number) => OVERLAY_COLORS[i % OVERLAY_COLORS.length]!;
  return {
    animation: false,
    color: OVERLAY_COLORS,
    grid: { left: 56, right: 16, top: 40, bottom: 56 },
    legend: { type: 'scroll', top: 0, data: series.map((s) => s.name) },
    tooltip: { trigger: 'axis', valueFormatter: (v: unknown) => formatValue(v) },
    xAxis: { type: 'value', name: 'step', nameLocation: 'middle', nameGap: 24, scale: true },
    yAxis: options.logScale ? { type: 'log', scale: true, name: metricKey } : { type: 'value', scale: true, name: metricKey },
    dataZoom: [{ type: 'inside', filterMode: 'none' }, { type: 'slider', height: 18, bottom: 4, filterMode: 'none' }],
    series: [
      ...(smoothed
        ? series.map((s, i) => ({
            id: `raw-${s.runId}`, name: s.name, type: 'line' as const, symbol: 'none', data: withBreaks(s.raw, s.breaks),
            lineStyle: { width: 1, color: color(i), opacity: 0.25 }, itemStyle: { color: color(i) }, silent: true, tooltip: { show: false },
          }))
        : []),
      ...series.map((s, i) => ({
        id: `line-${s.runId}`, name: s.name, type: 'line' as const, symbol: 'none', data: withBreaks(s.points, s.breaks),
        lineStyle: { width: smoothed ? 1.8 : 1.5, color: color(i) }, itemStyle: { color: color(i) },
      })),
    ],
  };
}

function OverlayChartImpl({ metricKey, series, options = DEFAULT_OVERLAY_OPTIONS, height = 320 }: {
  metricKey: string;
  series: readonly OverlaySeries[];
  options?: OverlayOptions;
  height?: number;
}) {
  const option = useMemo(() => overlayOption(metricKey, series, options), [metricKey, series, options]);
  const dropped = options.logScale ? droppedOnLog(series) : 0;
  const table = useCallback(() => overlayTable(metricKey, series, options), [metricKey, series, options]);
  return (
    <div
      data-testid="overlay"
      data-y-scale={options.logScale ? 'log' : 'linear'}
      data-smoothing={options.smoothing}
      data-runs={series.length}
      data-lines={(option.series as unknown[]).length}
      data-dropped={dropped}
    >
      {/* a y axis type change (value <-> log) is a new chart option, not a merge into the old one */}
      <EChart key={options.logScale ? 'log' : 'linear'} option={option} height={height} ariaLabel={`${metricKey} of ${series.length} runs`} testId="overlay-chart" data={table} />
      {dropped > 0 && (
        <Text size="xs" c="dimmed" data-testid="overlay-log-dropped">
          {formatCount(dropped)} value{dropped === 1 ? '' : 's'} ≤ 0 not drawn on the log scale
        </Text>
      )}
    </div>
  );
}

export const OverlayChart = memo(OverlayChartImpl);
