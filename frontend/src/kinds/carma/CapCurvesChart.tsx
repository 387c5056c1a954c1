// CAP curves, the CARMA paper's Figure 2: accuracy against normalised depth, one line per variant, with
// each variant's accuracy without CAP as a dashed level; a line of one record carries the band of its 95%
// Wilson intervals over the curve's items. A pure chart: series in (shape.ts), picture out.
import { memo, useMemo } from 'react';
import { ciBandSeries, tableWithBands } from '../../components/charts/ciBand';
import { EChart } from '../../components/charts/EChart';
import type { EChartsOption } from '../../components/charts/echarts';
import { formatWithInterval } from '../../lib/interval';
import type { CapSeries } from './shape';

export const VARIANT_COLOURS: Record<CapSeries['variant'], string> = { original: '#868e96', ft: '#1c7ed6', carma: '#e8590c' };

export function capOption(series: readonly CapSeries[], title: string): EChartsOption {
  return {
    animation: false,
    title: { text: title, left: 'center', top: 0, textStyle: { fontSize: 13 } },
    grid: { left: 56, right: 20, top: 56, bottom: 48 },
    legend: { top: 22 },
    tooltip: {
      trigger: 'axis',
      formatter: (params: unknown) => {
        const shown = (params as { seriesId: string; seriesName: string; data: number[]; dataIndex: number; marker: string }[]).filter(
          (p) => p.seriesId.startsWith('cap:'),
        );
        const rows = shown.map((p) => {
          const s = series[Number(p.seriesId.slice(4))]!;
          return `${p.marker}${p.seriesName}: ${formatWithInterval(p.data[1]!, s.ci[p.dataIndex], 3)}`;
        });
        return [`depth ${shown[0]?.data[0]?.toFixed(2) ?? ''}`, ...rows].join('<br/>');
      },
    },
    xAxis: { type: 'value', min: 0, max: 1, name: 'normalised depth of the CAP start layer', nameLocation: 'middle', nameGap: 28 },
    yAxis: { type: 'value', min: 0, name: 'accuracy', nameLocation: 'middle', nameGap: 40 },
    series: series.flatMap((s, index) => [
      {
        id: `cap:${index}`,
        name: s.label,
        type: 'line' as const,
        data: s.points,
        showSymbol: true,
        symbolSize: 6,
        lineStyle: { width: 2 },
        itemStyle: { color: VARIANT_COLOURS[s.variant] },
        markLine: {
          silent: true,
          symbol: 'none',
          label: { formatter: `${s.label} without CAP`, position: 'insideEndTop' as const, fontSize: 10 },
          lineStyle: { type: 'dashed' as const, color: VARIANT_COLOURS[s.variant] },
          data: [{ yAxis: s.clean }],
        },
      },
      ...ciBandSeries({ name: s.label, key: String(index), data: s.points, ci: s.ci, color: VARIANT_COLOURS[s.variant] }),
    ]),
  };
}

function CapCurvesChartImpl({ series, title }: { series: readonly CapSeries[]; title: string }) {
  const option = useMemo(() => capOption(series, title), [series, title]);
  const data = useMemo(() => () => tableWithBands(option), [option]);
  return <EChart option={option} data={data} height={380} ariaLabel={title} testId="cap-curves-chart" />;
}

export const CapCurvesChart = memo(CapCurvesChartImpl);
