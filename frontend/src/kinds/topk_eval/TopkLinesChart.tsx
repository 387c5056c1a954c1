// Score against k', one line per train k (the rows of the matrix), the trained k of each line marked.
import { memo, useMemo } from 'react';
import { EChart } from '../../components/charts/EChart';
import type { EChartsOption } from '../../components/charts/echarts';
import { scoreLines, type MatrixPanel } from './matrix';

export function linesOption(panel: MatrixPanel): EChartsOption {
  const lines = scoreLines(panel);
  return {
    animation: false,
    grid: { left: 56, right: 16, top: 36, bottom: 40 },
    legend: { top: 0 },
    tooltip: { trigger: 'axis', valueFormatter: (v: unknown) => (typeof v === 'number' ? v.toFixed(4) : String(v)) },
    xAxis: { type: 'value', name: "eval k'", nameLocation: 'middle', nameGap: 26, minInterval: 1, min: 'dataMin', max: 'dataMax' },
    yAxis: { type: 'value', name: panel.score, scale: true },
    series: lines.map((line) => ({
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
    })),
  };
}

function TopkLinesChartImpl({ panel }: { panel: MatrixPanel }) {
  const option = useMemo(() => linesOption(panel), [panel]);
  return <EChart option={option} height={260} ariaLabel={`score against k': ${panel.title}`} testId="topk-lines" />;
}

export const TopkLinesChart = memo(TopkLinesChartImpl);
