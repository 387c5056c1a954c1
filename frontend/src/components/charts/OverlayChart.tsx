// One metric of several runs overlaid, one line per run, legend labelled by the params that differ. A
// pure chart: series in (lib/overlay.ts via hooks/metrics.ts useOverlaySeries), picture out.
import { memo, useMemo } from 'react';
import { formatValue } from '../../lib/dotted';
import type { OverlaySeries } from '../../lib/overlay';
import { EChart } from './EChart';
import type { EChartsOption } from './echarts';

export function overlayOption(metricKey: string, series: readonly OverlaySeries[]): EChartsOption {
  return {
    animation: false,
    grid: { left: 56, right: 16, top: 40, bottom: 56 },
    legend: { type: 'scroll', top: 0 },
    tooltip: { trigger: 'axis', valueFormatter: (v: unknown) => formatValue(v) },
    xAxis: { type: 'value', name: 'step', nameLocation: 'middle', nameGap: 24, scale: true },
    yAxis: { type: 'value', scale: true, name: metricKey },
    dataZoom: [{ type: 'inside', filterMode: 'none' }, { type: 'slider', height: 18, bottom: 4, filterMode: 'none' }],
    series: series.map((s) => ({ name: s.name, type: 'line', symbol: 'none', data: s.points })),
  };
}

function OverlayChartImpl({ metricKey, series, height = 320 }: { metricKey: string; series: readonly OverlaySeries[]; height?: number }) {
  const option = useMemo(() => overlayOption(metricKey, series), [metricKey, series]);
  return <EChart option={option} height={height} ariaLabel={`${metricKey} of ${series.length} runs`} testId="overlay-chart" />;
}

export const OverlayChart = memo(OverlayChartImpl);
