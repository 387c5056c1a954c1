// Score against k', one line per train k (the rows of the matrix), the trained k of each line marked; a
// shaded band is each line's 95% interval (two stacked series named like the line: the legend toggles all).
import { memo, useMemo } from 'react';
import { ciBandSeries, tableWithBands } from '../../../components/charts/ciBand';
import { EChart } from '../../../components/charts/EChart';
import type { EChartsOption } from '../../../components/charts/echarts';
import { formatWithInterval } from '../../../lib/interval';
import { scoreLines, type MatrixPanel } from './matrix';

export function linesOption(panel: MatrixPanel): EChartsOption {
  const lines = scoreLines(panel);
  return {
    animation: false,
    grid: { left: 56, right: 16, top: 36, bottom: 40 },
    legend: { top: 0 },
    tooltip: {
      trigger: 'axis',
      formatter: (params: unknown) => {
        const shown = (params as { seriesId: string; seriesName: string; data: number[]; dataIndex: number; marker: string }[]).filter((p) =>
          p.seriesId.startsWith('line:'),
        );
        const rows = shown.map((p) => {
          const line = lines[Number(p.seriesId.slice(5))]!;
          return `${p.marker}${p.seriesName}: ${formatWithInterval(p.data[1]!, line.ci[p.dataIndex], 4)}`;
        });
        return [`k'=${shown[0]?.data[0] ?? ''}`, ...rows].join('<br/>');
      },
    },
    xAxis: { type: 'value', name: "eval k'", nameLocation: 'middle', nameGap: 26, minInterval: 1, min: 'dataMin', max: 'dataMax' },
    yAxis: { type: 'value', name: panel.score, scale: true },
    series: lines.flatMap((line, index) => [
      {
        id: `line:${index}`,
        name: line.name,
        type: 'line' as const,
        data: line.data,
        symbolSize: 7,
        markPoint:
          line.trainK !== null && line.data.some(([k]) => k === line.trainK)
            ? {
                symbol: 'diamond',
                symbolSize: 14,
                label: { show: false },
                data: [{ coord: line.data.find(([k]) => k === line.trainK)!, name: 'trained k' }],
              }
            : undefined,
      },
      ...ciBandSeries({ name: line.name, key: String(index), data: line.data, ci: line.ci }),
    ]),
  };
}

function TopkLinesChartImpl({ panel }: { panel: MatrixPanel }) {
  const option = useMemo(() => linesOption(panel), [panel]);
  const data = useMemo(() => () => tableWithBands(option), [option]);
  return <EChart option={option} data={data} height={260} ariaLabel={`score against k': ${panel.title}`} testId="topk-lines" />;
}

export const TopkLinesChart = memo(TopkLinesChartImpl);
